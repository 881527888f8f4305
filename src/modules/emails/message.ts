// A kept message (GET /emails/:id/raw) read back for the dashboard's email view: its headers, HTML,
// text, attachments, and whether its DKIM signature verifies against the sender domain's key as the
// project holds it (a sandbox signs with the key of a domain not yet verified in DNS: the check is
// against the key the domain's DKIM record publishes, not a DNS lookup).
import { createHash, createPublicKey, verify } from "node:crypto";
import type { AppContext } from "../../context";
import { relaxedBody, relaxedHeader } from "../../mail/dkim/dkim";

let parser: Promise<typeof import("mailparser")> | null = null;
const mailparser = () => (parser ??= import("mailparser"));

export interface DkimCheck {
  /** pass: the signature verifies with the domain's key; fail: it does not; none: the message is unsigned. */
  result: "pass" | "fail" | "none";
  domain: string | null;
  selector: string | null;
  algorithm: string | null;
  /** Whether the signing domain is VERIFIED in the project (a sandbox may sign with a domain not yet verified). */
  domainVerified: boolean | null;
  detail: string;
}

export interface MessageView {
  headers: { name: string; value: string }[];
  subject: string | null;
  html: string | null;
  text: string | null;
  attachments: { filename: string | null; contentType: string; size: number; contentId: string | null; disposition: string | null }[];
  size: number;
  dkim: DkimCheck[];
}

interface Field {
  name: string;
  value: string;
}

function headerFields(head: string): Field[] {
  const out: Field[] = [];
  for (const line of head.split("\r\n")) {
    if (!line) continue;
    if ((line[0] === " " || line[0] === "\t") && out.length) {
      out[out.length - 1]!.value += "\r\n" + line;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon > 0) out.push({ name: line.slice(0, colon).trim(), value: line.slice(colon + 1) });
  }
  return out;
}

function tags(value: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const part of value.replace(/\r\n[ \t]/g, " ").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0) m.set(part.slice(0, eq).trim(), part.slice(eq + 1).replace(/\s+/g, ""));
  }
  return m;
}

/** Verifies one relaxed/relaxed DKIM-Signature (what we sign) with `publicKeyPem`. */
export function verifyDkimSignature(raw: Buffer, sig: Field, fields: Field[], bodyStart: number, publicKeyPem: string): { ok: boolean; detail: string } {
  const t = tags(sig.value);
  if ((t.get("c") ?? "simple/simple") !== "relaxed/relaxed") return { ok: false, detail: `canonicalization ${t.get("c")} is not checked here` };
  const bh = createHash("sha256").update(relaxedBody(raw.toString("latin1", bodyStart)), "latin1").digest("base64");
  if (bh !== t.get("bh")) return { ok: false, detail: "body hash mismatch: the body changed after signing" };
  const used = new Set<Field>();
  const canon: string[] = [];
  for (const name of (t.get("h") ?? "").toLowerCase().split(":").filter(Boolean)) {
    // The bottom-most instance not yet used (RFC 6376 5.4.2); a name with none left contributes nothing.
    let f: Field | undefined;
    for (let i = fields.length - 1; i >= 0; i--) {
      const c = fields[i]!;
      if (c.name.toLowerCase() === name && !used.has(c)) {
        f = c;
        break;
      }
    }
    if (!f) continue;
    used.add(f);
    canon.push(relaxedHeader(name, f.value));
  }
  const unsigned = sig.value.replace(/(^|;)(\s*b\s*=)[^;]*/, "$1$2");
  const data = canon.join("\r\n") + "\r\n" + relaxedHeader("dkim-signature", unsigned);
  const signature = Buffer.from(t.get("b") ?? "", "base64");
  const key = createPublicKey(publicKeyPem);
  const algorithm = t.get("a") ?? "rsa-sha256";
  const ok =
    algorithm === "ed25519-sha256"
      ? verify(null, createHash("sha256").update(data, "latin1").digest(), key, signature)
      : verify("sha256", Buffer.from(data, "latin1"), key, signature);
  return ok ? { ok, detail: "the signature verifies with the domain's DKIM key" } : { ok, detail: "signature mismatch: the headers changed after signing or another key signed" };
}

async function dkimChecks(ctx: AppContext, projectId: string, raw: Buffer, fields: Field[], bodyStart: number): Promise<DkimCheck[]> {
  const sigs = fields.filter((f) => f.name.toLowerCase() === "dkim-signature");
  if (!sigs.length) return [{ result: "none", domain: null, selector: null, algorithm: null, domainVerified: null, detail: "unsigned: the project has not added the sender domain, so there was no key to sign with" }];
  const out: DkimCheck[] = [];
  for (const sig of sigs) {
    const t = tags(sig.value);
    const domain = (t.get("d") ?? "").toLowerCase();
    const selector = t.get("s") ?? "";
    const algorithm = t.get("a") ?? "rsa-sha256";
    const row = await ctx.db
      .selectFrom("domains")
      .select(["status", "dkim_selector", "dkim_private_key", "dkim_ed25519_selector", "dkim_ed25519_private_key", "dkim_next_selector", "dkim_next_private_key"])
      .where("project_id", "=", projectId)
      .where("domain", "=", domain)
      .executeTakeFirst();
    const base = { domain, selector, algorithm, domainVerified: row ? row.status === "VERIFIED" : null };
    const pem = !row
      ? null
      : selector === row.dkim_selector
        ? row.dkim_private_key
        : selector === row.dkim_ed25519_selector
          ? row.dkim_ed25519_private_key
          : selector === row.dkim_next_selector
            ? row.dkim_next_private_key
            : null;
    if (!pem) {
      out.push({ ...base, result: "fail", detail: `no key of the project's domain ${domain} has selector ${selector}` });
      continue;
    }
    try {
      const r = verifyDkimSignature(raw, sig, fields, bodyStart, pem);
      out.push({ ...base, result: r.ok ? "pass" : "fail", detail: r.detail });
    } catch (e) {
      out.push({ ...base, result: "fail", detail: String((e as Error)?.message ?? e) });
    }
  }
  return out;
}

export async function messageView(ctx: AppContext, projectId: string, raw: Buffer): Promise<MessageView> {
  let split = raw.indexOf("\r\n\r\n");
  const bodyStart = split < 0 ? raw.length : split + 4;
  if (split < 0) split = raw.length;
  const fields = headerFields(raw.toString("latin1", 0, split));
  const parsed = await (await mailparser()).simpleParser(raw, { skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  return {
    headers: fields.map((f) => ({ name: f.name, value: f.value.replace(/\r\n[ \t]+/g, " ").trim() })),
    subject: parsed.subject ?? null,
    html: typeof parsed.html === "string" ? parsed.html : null,
    text: parsed.text ?? null,
    attachments: parsed.attachments.map((a) => ({
      filename: a.filename ?? null,
      contentType: a.contentType,
      size: a.size,
      contentId: a.contentId ?? null,
      disposition: a.contentDisposition ?? null,
    })),
    size: raw.length,
    dkim: await dkimChecks(ctx, projectId, raw, fields, bodyStart),
  };
}

// DKIM (RFC 6376), rsa-sha256, relaxed/relaxed, over any raw RFC 5322 message.
// Split in two so the expensive RSA operation can run elsewhere (see signer.ts):
//   prepareDkim(raw) -> the canonical data to sign + the header without its b= value
//   finishDkim(raw, prepared, signature) -> the signed message
import { createHash } from "node:crypto";

/** Header fields we sign when present (From always is). */
export const SIGNED_HEADERS = [
  "from",
  "sender",
  "reply-to",
  "subject",
  "date",
  "message-id",
  "to",
  "cc",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "in-reply-to",
  "references",
  "list-id",
  "list-unsubscribe",
  "list-unsubscribe-post",
  "feedback-id",
];

export interface DkimSigningParams {
  domain: string;
  selector: string;
  /** Signature timestamp (t=), epoch ms. */
  timeMs: number;
}

export interface PreparedDkim {
  /** The DKIM-Signature header up to and including "b=". */
  headerPrefix: string;
  /** What the private key signs (ASCII). */
  data: string;
}

interface HeaderField {
  name: string; // lower-case
  value: string; // raw, after the colon, possibly folded
}

function parseHeaderBlock(block: string): HeaderField[] {
  const fields: HeaderField[] = [];
  const lines = block.split("\r\n");
  for (const line of lines) {
    if (!line) continue;
    const c = line.charCodeAt(0);
    if ((c === 0x20 || c === 0x09) && fields.length) {
      fields[fields.length - 1]!.value += "\r\n" + line;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    fields.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1) });
  }
  return fields;
}

/** Relaxed header canonicalization of one field (no trailing CRLF). */
export function relaxedHeader(name: string, value: string): string {
  return `${name.toLowerCase()}:${value.replace(/\r\n/g, "").replace(/[ \t]+/g, " ").trim()}`;
}

/** Relaxed body canonicalization (input and output as latin1 "binary" strings). */
export function relaxedBody(body: string): string {
  let b = body;
  if (b.includes("\t") || b.includes("  ") || b.includes(" \r\n")) {
    b = b.replace(/[ \t]+/g, " ").replace(/ \r\n/g, "\r\n");
    if (b.endsWith(" ")) b = b.slice(0, -1);
  }
  // Bare LF would be CRLF on the wire.
  if (b.includes("\n") && /(^|[^\r])\n/.test(b)) b = b.replace(/\r?\n/g, "\r\n");
  let end = b.length;
  while (end >= 2 && b.charCodeAt(end - 1) === 0x0a && b.charCodeAt(end - 2) === 0x0d) end -= 2;
  if (end === 0) return "";
  return b.slice(0, end) + "\r\n";
}

function splitMessage(raw: Buffer): { head: string; body: string } {
  const idx = raw.indexOf("\r\n\r\n");
  if (idx < 0) return { head: raw.toString("latin1"), body: "" };
  return { head: raw.toString("latin1", 0, idx), body: raw.toString("latin1", idx + 4) };
}

export function prepareDkim(raw: Buffer, p: DkimSigningParams): PreparedDkim {
  const { head, body } = splitMessage(raw);
  const fields = parseHeaderBlock(head);
  const last = new Map<string, HeaderField>();
  for (const f of fields) last.set(f.name, f); // the bottom-most instance is the one signed
  const names: string[] = [];
  const canon: string[] = [];
  for (const n of SIGNED_HEADERS) {
    const f = last.get(n);
    if (!f) continue;
    names.push(n);
    canon.push(relaxedHeader(n, f.value));
  }
  const bh = createHash("sha256").update(relaxedBody(body), "latin1").digest("base64");
  const headerPrefix =
    `DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=${p.domain}; q=dns/txt;\r\n` +
    ` s=${p.selector}; t=${Math.floor(p.timeMs / 1000)};\r\n` +
    ` h=${names.join(":")};\r\n` +
    ` bh=${bh};\r\n` +
    ` b=`;
  const data = canon.join("\r\n") + "\r\n" + relaxedHeader("dkim-signature", headerPrefix.slice("DKIM-Signature:".length));
  return { headerPrefix, data };
}

/** Prepends the DKIM-Signature header carrying `signatureB64`. */
export function finishDkim(raw: Buffer, prepared: PreparedDkim, signatureB64: string): Buffer {
  const folded = signatureB64.replace(/.{1,72}/g, (m, off: number) => (off === 0 ? m : "\r\n  " + m));
  return Buffer.concat([Buffer.from(prepared.headerPrefix + folded + "\r\n", "latin1"), raw]);
}

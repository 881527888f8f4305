/**
 * The DNS records a sender domain publishes, and how each one is checked against live DNS.
 *
 * - dkim (required): TXT `<selector>._domainkey.<domain>` = `v=DKIM1; k=rsa; p=<our public key>`.
 * - return-path (recommended): MX `bounces.<domain>` -> MAILSVC_HOSTNAME. The envelope sender
 *   (Return-Path) of every message is `bounces+<emailId>@bounces.<domain>`, so bounces come back to us.
 * - spf (recommended): TXT on the same bounce domain, `v=spf1 a:<hostname> ~all`. SPF is checked
 *   against the envelope sender's domain, which is the bounce domain (aligned with the From domain
 *   under DMARC's relaxed rule), and a record there never collides with the SPF record the owner
 *   already has on the root domain (two SPF records on one name are a permanent error).
 * - dmarc (recommended): TXT `_dmarc.<domain>`; any `v=DMARC1` policy counts (the owner's own policy wins).
 *
 * Each record carries its own status: PENDING (not published yet), VERIFIED, or FAILED (published
 * with another value, or gone after having been seen). A lookup that errs (timeout, SERVFAIL)
 * changes nothing: the previous status stays and `detail` says why.
 */
import type { Resolver } from "node:dns/promises";
import { resolveMxSorted, resolveTxtJoined } from "../../mail/dns";
import { dkimRecordName, dkimTxtMatches, dkimTxtValue } from "../../mail/dkim-keys";

export type RecordStatus = "PENDING" | "VERIFIED" | "FAILED";
export type RecordPurpose = "dkim" | "spf" | "return-path" | "dmarc";

export interface DnsRecord {
  type: "TXT" | "MX";
  name: string;
  value: string;
  /** MX only. */
  priority?: number;
  purpose: RecordPurpose;
  required: boolean;
  status: RecordStatus;
  /** Why the record is not VERIFIED, when we know. */
  detail?: string;
}

import { bounceDomainFor } from "../../mail/address";
export { BOUNCE_LABEL, bounceDomainFor } from "../../mail/address";

const normHost = (h: string) => h.trim().toLowerCase().replace(/\.$/, "");

export function expectedRecords(domain: string, selector: string, publicKeyB64: string, hostname: string): DnsRecord[] {
  const host = normHost(hostname);
  const bounce = bounceDomainFor(domain);
  return [
    { type: "TXT", name: dkimRecordName(selector, domain), value: dkimTxtValue(publicKeyB64), purpose: "dkim", required: true, status: "PENDING" },
    { type: "MX", name: bounce, value: host, priority: 10, purpose: "return-path", required: false, status: "PENDING" },
    { type: "TXT", name: bounce, value: `v=spf1 a:${host} ~all`, purpose: "spf", required: false, status: "PENDING" },
    { type: "TXT", name: `_dmarc.${domain}`, value: "v=DMARC1; p=none;", purpose: "dmarc", required: false, status: "PENDING" },
  ];
}

type Outcome = { kind: "match" } | { kind: "mismatch"; detail: string } | { kind: "absent" } | { kind: "error"; detail: string };

async function lookup(fn: () => Promise<Outcome>): Promise<Outcome> {
  try {
    return await fn();
  } catch (e) {
    const code = (e as { code?: string })?.code ?? String(e);
    return { kind: "error", detail: `DNS lookup failed (${code}); will retry` };
  }
}

/**
 * TXT records at `name`, whole. Bun's resolver returns every string of a multi-string record as a
 * record of its own (a 2048-bit DKIM key needs two strings), so strings are glued back together:
 * a string that starts with `v=` opens a record, any other string continues the previous one.
 */
export function reassembleTxt(strings: string[]): string[] {
  const out: string[] = [];
  for (const s of strings) {
    if (out.length && !/^\s*"?\s*v\s*=/i.test(s)) out[out.length - 1] += s;
    else out.push(s);
  }
  return out;
}

async function txtRecords(r: Resolver, name: string): Promise<string[]> {
  return reassembleTxt(await resolveTxtJoined(r, name));
}

function checkDkim(r: Resolver, rec: DnsRecord, publicKeyB64: string): Promise<Outcome> {
  return lookup(async () => {
    const strings = await resolveTxtJoined(r, rec.name);
    // DKIM's v= is optional, so also try everything at the name glued together.
    const candidates = [...reassembleTxt(strings), strings.join("")];
    const dkim = candidates.filter((t) => /(^|;)\s*"?\s*(v\s*=\s*DKIM1|p\s*=)/i.test(t));
    if (!dkim.length) return { kind: "absent" };
    if (dkim.some((t) => dkimTxtMatches(t, publicKeyB64))) return { kind: "match" };
    return { kind: "mismatch", detail: "A DKIM record is published at this name but its p= key is not this domain's key" };
  });
}

function checkMx(r: Resolver, rec: DnsRecord, host: string): Promise<Outcome> {
  return lookup(async () => {
    const mx = await resolveMxSorted(r, rec.name);
    if (!mx || !mx.length) return { kind: "absent" };
    if (mx.some((m) => normHost(m.exchange) === host)) return { kind: "match" };
    return { kind: "mismatch", detail: `MX points at ${mx.map((m) => m.exchange).join(", ")}, expected ${host}` };
  });
}

function checkSpf(r: Resolver, rec: DnsRecord, host: string): Promise<Outcome> {
  return lookup(async () => {
    const spf = (await txtRecords(r, rec.name)).filter((t) => /^\s*v=spf1(\s|$)/i.test(t));
    if (!spf.length) return { kind: "absent" };
    if (spf.length > 1) return { kind: "mismatch", detail: "More than one SPF record is published at this name (a permanent SPF error)" };
    const terms = spf[0]!.toLowerCase().split(/\s+/);
    const authorises = terms.some((t) => {
      const m = /^[+?~]?(a|mx|include|exists|ptr):([^/\s]+)/.exec(t);
      return !!m && normHost(m[2]!) === host;
    });
    return authorises ? { kind: "match" } : { kind: "mismatch", detail: `The SPF record does not authorise ${host}` };
  });
}

function checkDmarc(r: Resolver, rec: DnsRecord): Promise<Outcome> {
  return lookup(async () => {
    const txts = await txtRecords(r, rec.name);
    return txts.some((t) => /^\s*v\s*=\s*DMARC1\s*(;|$)/i.test(t)) ? { kind: "match" } : { kind: "absent" };
  });
}

function apply(rec: DnsRecord, prev: DnsRecord | undefined, o: Outcome): DnsRecord {
  const before = prev?.status ?? "PENDING";
  const next: DnsRecord = { ...rec };
  delete next.detail;
  switch (o.kind) {
    case "match":
      next.status = "VERIFIED";
      break;
    case "mismatch":
      next.status = "FAILED";
      next.detail = o.detail;
      break;
    case "absent":
      next.status = before === "PENDING" ? "PENDING" : "FAILED";
      next.detail = before === "PENDING" ? "Not published yet" : "The record is no longer published";
      break;
    case "error":
      next.status = before;
      next.detail = o.detail;
      break;
  }
  return next;
}

export interface CheckResult {
  records: DnsRecord[];
  /** Outcome of the required DKIM record, which decides the domain's status. */
  dkim: Outcome["kind"];
}

/**
 * Looks every record up now (the caller passes a fresh resolver: verification never uses a cached
 * answer) and returns the records with their new statuses. Values are rebuilt from the current
 * hostname so an operator who changes MAILSVC_HOSTNAME sees the new targets.
 */
export async function checkRecords(
  r: Resolver,
  d: { domain: string; dkim_selector: string; dkim_public_key: string },
  hostname: string,
  previous: DnsRecord[],
): Promise<CheckResult> {
  const host = normHost(hostname);
  const expected = expectedRecords(d.domain, d.dkim_selector, d.dkim_public_key, hostname);
  const outcomes = await Promise.all(
    expected.map((rec) => {
      switch (rec.purpose) {
        case "dkim":
          return checkDkim(r, rec, d.dkim_public_key);
        case "return-path":
          return checkMx(r, rec, host);
        case "spf":
          return checkSpf(r, rec, host);
        case "dmarc":
          return checkDmarc(r, rec);
      }
    }),
  );
  const records = expected.map((rec, i) => apply(rec, previous.find((p) => p.purpose === rec.purpose), outcomes[i]!));
  return { records, dkim: outcomes[0]!.kind };
}

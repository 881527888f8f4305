/**
 * The DNS records a sender domain publishes, and how each one is checked against live DNS.
 *
 * - dkim (required): TXT `<selector>._domainkey.<domain>` = `v=DKIM1; k=rsa; p=<our public key>`.
 *   During a rotation (POST /domains/:id/rotate-dkim) the next key's record is listed beside it
 *   (`rotation: "next"`, not required); once it verifies, it becomes the signing key and the old
 *   one is retired. With Ed25519 on, `k=ed25519` at its own selector (RFC 8463), not required.
 * - return-path (recommended): MX `bounces.<domain>` -> MAILSVC_HOSTNAME. The envelope sender
 *   (Return-Path) of every message is `bounces+<emailId>@bounces.<domain>`, so bounces come back to us.
 * - spf (recommended): TXT on the same bounce domain, `v=spf1 a:<hostname> ~all`. SPF is checked
 *   against the envelope sender's domain, which is the bounce domain (aligned with the From domain
 *   under DMARC's relaxed rule), and a record there never collides with the SPF record the owner
 *   already has on the root domain (two SPF records on one name are a permanent error).
 *   The SPF record of MAILSVC_HOSTNAME itself (the HELO name) is a server record (serverRecords).
 * - dmarc (recommended): TXT `_dmarc.<domain>`, `v=DMARC1; p=none; rua=mailto:dmarc@bounces.<domain>`:
 *   aggregate reports come back to our inbound listener and show in GET /domains/:id/dmarc. Any
 *   `v=DMARC1` policy counts (the owner's own policy wins).
 *
 * Records that name MAILSVC_HOSTNAME (return-path, both SPF) are left out while it is not a fully
 * qualified name: `a:vm` is an SPF permerror and an MX at a bare name does not resolve.
 *
 * Each record carries its own status: PENDING (not published yet), VERIFIED, or FAILED (published
 * with another value, or gone after having been seen). A lookup that errs (timeout, SERVFAIL)
 * changes nothing: the previous status stays and `detail` says why.
 */
import type { Resolver } from "node:dns/promises";
import { resolveMxSorted, resolveTxtJoined } from "../../net/dns";
import { dkimRecordName, dkimTxtMatches, dkimTxtValue, type DkimKeyType } from "../../mail/dkim/dkim-keys";
import { isQualifiedHostname } from "../../mail/deliverability/deliverability";

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
  /** DKIM only: the selector and key type. */
  selector?: string;
  algorithm?: DkimKeyType;
  /** DKIM only: "next" is the key a rotation switches to once this record verifies. */
  rotation?: "current" | "next";
  /** SPF only: which name the record covers (the bounce domain, or the HELO name). */
  scope?: "bounce-domain" | "helo";
  /** Why the record is not VERIFIED, when we know. */
  detail?: string;
}

import { bounceDomainFor } from "../../net/email-address";

const normHost = (h: string) => h.trim().toLowerCase().replace(/\.$/, "");

/** The key material of a domain row that its records publish. */
export interface DomainKeys {
  domain: string;
  dkim_selector: string;
  dkim_public_key: string;
  dkim_ed25519_selector?: string | null;
  dkim_ed25519_public_key?: string | null;
  dkim_next_selector?: string | null;
  dkim_next_public_key?: string | null;
}

/** The DMARC aggregate-report address: on the bounce domain, which points its MX at us. */
export const dmarcReportAddress = (domain: string) => `dmarc@${bounceDomainFor(domain)}`;

/**
 * Records of the server itself (one set for every domain, shown beside each domain's records as
 * `serverRecords`; `mailsvc doctor` checks them): SPF on the HELO name, which receivers check too
 * (SPF_HELO_*). Empty while the hostname is not qualified.
 */
export function serverRecords(hostname: string): DnsRecord[] {
  const host = normHost(hostname);
  if (!isQualifiedHostname(host)) return [];
  return [{ type: "TXT", name: host, value: "v=spf1 a ~all", purpose: "spf", required: false, status: "PENDING", scope: "helo" }];
}

export function expectedRecords(d: DomainKeys, hostname: string): DnsRecord[] {
  const domain = d.domain;
  const host = normHost(hostname);
  const bounce = bounceDomainFor(domain);
  const dkim = (selector: string, key: string, algorithm: DkimKeyType, required: boolean, rotation?: "current" | "next"): DnsRecord => ({
    type: "TXT",
    name: dkimRecordName(selector, domain),
    value: dkimTxtValue(key, algorithm),
    purpose: "dkim",
    required,
    status: "PENDING",
    selector,
    algorithm,
    ...(rotation ? { rotation } : {}),
  });
  const out: DnsRecord[] = [dkim(d.dkim_selector, d.dkim_public_key, "rsa", true, d.dkim_next_selector ? "current" : undefined)];
  if (d.dkim_next_selector && d.dkim_next_public_key) out.push(dkim(d.dkim_next_selector, d.dkim_next_public_key, "rsa", false, "next"));
  if (d.dkim_ed25519_selector && d.dkim_ed25519_public_key) out.push(dkim(d.dkim_ed25519_selector, d.dkim_ed25519_public_key, "ed25519", false));
  if (isQualifiedHostname(host)) {
    out.push({ type: "MX", name: bounce, value: host, priority: 10, purpose: "return-path", required: false, status: "PENDING" });
    out.push({ type: "TXT", name: bounce, value: `v=spf1 a:${host} ~all`, purpose: "spf", required: false, status: "PENDING", scope: "bounce-domain" });
  }
  out.push({ type: "TXT", name: `_dmarc.${domain}`, value: `v=DMARC1; p=none; rua=mailto:${dmarcReportAddress(domain)}`, purpose: "dmarc", required: false, status: "PENDING" });
  return out;
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

function checkDkim(r: Resolver, rec: DnsRecord, publicKeyB64: string, k: DkimKeyType): Promise<Outcome> {
  return lookup(async () => {
    const strings = await resolveTxtJoined(r, rec.name);
    // DKIM's v= is optional, so also try everything at the name glued together.
    const candidates = [...reassembleTxt(strings), strings.join("")];
    const dkim = candidates.filter((t) => /(^|;)\s*"?\s*(v\s*=\s*DKIM1|p\s*=)/i.test(t));
    if (!dkim.length) return { kind: "absent" };
    if (dkim.some((t) => dkimTxtMatches(t, publicKeyB64, k))) return { kind: "match" };
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
    const helo = rec.scope === "helo";
    const authorises = terms.some((t) => {
      // On the HELO name itself a bare `a`/`mx` covers it (`mailsvc doctor` also accepts its own ip4/ip6).
      if (helo && /^\+?(a|mx)$/.test(t)) return true;
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

const sameRecord = (a: DnsRecord, b: DnsRecord) => a.purpose === b.purpose && a.name === b.name;

/**
 * The records as the domain's view shows them: the ones the current hostname asks for, each with the
 * status of its last check when that check saw the same record (a record whose value changed with
 * MAILSVC_HOSTNAME is PENDING until the next check), so a restart with a new hostname shows the new
 * targets at once.
 */
export function currentRecords(d: DomainKeys, hostname: string, stored: DnsRecord[]): DnsRecord[] {
  return expectedRecords(d, hostname).map((rec) => stored.find((p) => sameRecord(p, rec) && p.type === rec.type && p.value === rec.value) ?? rec);
}

/** Checks one SPF record (used by `mailsvc doctor` for the server records). */
export async function checkSpfRecord(r: Resolver, rec: DnsRecord, hostname: string): Promise<DnsRecord> {
  return apply(rec, undefined, await checkSpf(r, rec, normHost(hostname)));
}

/**
 * Looks every record up now (the caller passes a fresh resolver: verification never uses a cached
 * answer) and returns the records with their new statuses. Values are rebuilt from the current
 * hostname so an operator who changes MAILSVC_HOSTNAME sees the new targets.
 */
export async function checkRecords(r: Resolver, d: DomainKeys, hostname: string, previous: DnsRecord[]): Promise<CheckResult> {
  const host = normHost(hostname);
  const expected = expectedRecords(d, hostname);
  const keyOf = (rec: DnsRecord) =>
    rec.algorithm === "ed25519" ? d.dkim_ed25519_public_key! : rec.rotation === "next" ? d.dkim_next_public_key! : d.dkim_public_key;
  const outcomes = await Promise.all(
    expected.map((rec) => {
      switch (rec.purpose) {
        case "dkim":
          return checkDkim(r, rec, keyOf(rec), rec.algorithm ?? "rsa");
        case "return-path":
          return checkMx(r, rec, host);
        case "spf":
          return checkSpf(r, rec, host);
        case "dmarc":
          return checkDmarc(r, rec);
      }
    }),
  );
  const records = expected.map((rec, i) => apply(rec, previous.find((p) => sameRecord(p, rec)), outcomes[i]!));
  return { records, dkim: outcomes[0]!.kind };
}

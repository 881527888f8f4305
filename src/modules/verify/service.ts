/**
 * POST /v1/verify: what can be known about an address without sending to it.
 * Syntax (practical RFC 5321/5322), DNS through the configured resolvers (MX decides; A/AAAA are
 * informational), disposable domains (maintained npm list), personal providers, alias/forwarding
 * services, plus-addressing and likely typos (maintained suggestion library, filtered for precision).
 * `valid` is true exactly when `reasons` is empty; each reason explains one failed check.
 */
import { run as suggestEmail, POPULAR_DOMAINS } from "@zootools/email-spell-checker";
import { disposableEmailBlocklistSet } from "disposable-email-domains-js";
import type { Resolver } from "node:dns/promises";
import type { AppContext } from "../../context";
import { isValidEmail } from "../../net/email-address";
import { createResolver, isNotFound } from "../../net/dns";
import { ALIAS_DOMAINS, inDomainSet, PERSONAL_DOMAINS } from "./lists";

export interface VerificationResult {
  email: string;
  valid: boolean;
  isDisposable: boolean;
  isAlias: boolean;
  isTypo: boolean;
  isPlusAddressed: boolean;
  isPersonalEmail: boolean;
  domainExists: boolean;
  hasWebsite: boolean;
  hasMxRecords: boolean;
  reasons: string[];
  suggestedEmail?: string;
}

let disposable: Set<string> | null = null;
/** The package rebuilds its Set on every call; build it once. */
function disposableSet(): Set<string> {
  return (disposable ??= disposableEmailBlocklistSet());
}

/** Optimal string alignment distance (edit distance counting a transposition as one edit). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

const TYPO_TARGETS = [...new Set([...POPULAR_DOMAINS, ...PERSONAL_DOMAINS])];

/**
 * A likely correction of a mistyped provider domain (gmial.com -> gmail.com), or null. The library
 * proposes; we keep only close calls (one edit, or two on a long name) so that short real domains
 * (att.com, ibm.com) are not "corrected" into other providers.
 */
export function typoSuggestion(email: string, domain: string): string | null {
  // Not skipped for disposable domains: squatted typo domains (gmial.com) are on that list too.
  if (PERSONAL_DOMAINS.has(domain) || inDomainSet(ALIAS_DOMAINS, domain)) return null;
  const s = suggestEmail({ email, domains: TYPO_TARGETS, topLevelDomains: [], secondLevelDomains: [] });
  if (!s || s.domain === domain) return null;
  const dist = editDistance(domain, s.domain);
  const firstLabel = domain.split(".")[0]!;
  if (dist <= 1 || (dist === 2 && firstLabel.length >= 6)) return `${email.slice(0, email.lastIndexOf("@"))}@${s.domain}`;
  return null;
}

type Lookup<T> = { ok: true; value: T } | { ok: false; code: string };

async function attempt<T>(fn: () => Promise<T>, empty: T): Promise<Lookup<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    const code = (e as { code?: string })?.code ?? "EUNKNOWN";
    if (code === "ENODATA") return { ok: false, code };
    if (isNotFound(e)) return { ok: true, value: empty };
    return { ok: false, code };
  }
}

interface DnsFacts {
  domainExists: boolean;
  hasWebsite: boolean;
  hasMxRecords: boolean;
  nullMx: boolean;
  failure: string | null;
}

async function dnsFacts(r: Resolver, domain: string): Promise<DnsFacts> {
  const [mx, a, aaaa, www, ns] = await Promise.all([
    attempt(() => r.resolveMx(domain), [] as { exchange: string; priority: number }[]),
    attempt(() => r.resolve4(domain), [] as string[]),
    attempt(() => r.resolve6(domain), [] as string[]),
    attempt(() => r.resolve4(`www.${domain}`), [] as string[]),
    // A delegated zone exists even when it publishes neither MX nor A (Bun reports "no data" as not found).
    attempt(() => r.resolveNs(domain), [] as string[]),
  ]);
  const mxList = mx.ok ? mx.value : [];
  const nullMx = mxList.length > 0 && mxList.every((m) => m.exchange === "" || m.exchange === ".");
  const has = (l: Lookup<unknown[]>) => l.ok && l.value.length > 0;
  const nodata = [mx, a, aaaa].some((l) => !l.ok && l.code === "ENODATA");
  const hard = [mx, a, aaaa].find((l) => !l.ok && l.code !== "ENODATA") as { ok: false; code: string } | undefined;
  const domainExists = mxList.length > 0 || has(a) || has(aaaa) || has(ns) || nodata;
  return {
    domainExists,
    hasWebsite: has(a) || has(aaaa) || has(www),
    hasMxRecords: mxList.length > 0 && !nullMx,
    nullMx,
    failure: !domainExists && hard ? hard.code : null,
  };
}

export async function verifyEmail(ctx: AppContext, input: string): Promise<VerificationResult> {
  const email = input.trim().toLowerCase();
  const result: VerificationResult = {
    email,
    valid: false,
    isDisposable: false,
    isAlias: false,
    isTypo: false,
    isPlusAddressed: false,
    isPersonalEmail: false,
    domainExists: false,
    hasWebsite: false,
    hasMxRecords: false,
    reasons: [],
  };
  if (!isValidEmail(email)) {
    result.reasons.push("Invalid email syntax");
    return result;
  }
  const at = email.lastIndexOf("@");
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  const plus = local.indexOf("+");
  result.isPlusAddressed = plus > 0 && plus < local.length - 1;
  result.isDisposable = inDomainSet(disposableSet(), domain);
  result.isAlias = inDomainSet(ALIAS_DOMAINS, domain);
  result.isPersonalEmail = PERSONAL_DOMAINS.has(domain);
  const suggestion = typoSuggestion(email, domain);
  if (suggestion) {
    result.isTypo = true;
    result.suggestedEmail = suggestion;
  }

  const dns = await dnsFacts(createResolver(ctx.config), domain);
  result.domainExists = dns.domainExists;
  result.hasWebsite = dns.hasWebsite;
  result.hasMxRecords = dns.hasMxRecords;

  if (dns.failure) result.reasons.push(`DNS lookup for ${domain} failed (${dns.failure})`);
  else if (!dns.domainExists) result.reasons.push(`Domain ${domain} does not exist`);
  else if (dns.nullMx) result.reasons.push(`Domain ${domain} accepts no email (null MX record)`);
  else if (!dns.hasMxRecords) result.reasons.push(`Domain ${domain} has no MX records`);
  if (result.isDisposable) result.reasons.push(`${domain} is a disposable email domain`);
  if (result.isTypo) result.reasons.push(`Possible typo: did you mean ${result.suggestedEmail}?`);
  result.valid = result.reasons.length === 0;
  return result;
}

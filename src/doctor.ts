// `mailsvc doctor`: what an operator must get right for mail to be accepted, checked through the
// configured resolvers (MAILSVC_DNS_SERVERS) the way receivers check it. Each check prints what it
// found and, when it fails, the fix; the command exits non-zero when any check fails.
import { existsSync } from "node:fs";
import { isIP } from "node:net";
import type { Resolver } from "node:dns/promises";
import { tlsFilesFor, type Config } from "./config";
import { openReadOnly } from "./db";
import { configWarnings, isQualifiedHostname } from "./mail/deliverability/deliverability";
import { createResolver, isNotFound, resolveMxSorted, resolveTxtJoined } from "./net/dns";
import { parseRelayUrl } from "./mail/smtp/pool";
import { SmtpClient } from "./mail/smtp/smtp-client";
import { checkRecords, checkSpfRecord, serverRecords, type DnsRecord } from "./modules/domains/records";

export type CheckStatus = "ok" | "warn" | "fail";

export interface Check {
  name: string;
  status: CheckStatus;
  detail: string;
  fix?: string;
}

export interface DoctorOptions {
  /** A domain whose MX answers on port 25, to prove outbound SMTP is not blocked (default gmail.com). */
  probeDomain?: string;
  /** Per-network-step timeout (ms). */
  timeoutMs?: number;
  /** Skip the per-domain record checks (no database). */
  skipDomains?: boolean;
}

const norm = (h: string) => h.trim().toLowerCase().replace(/\.$/, "");

async function addressesOf(r: Resolver, host: string): Promise<{ addrs: string[]; error?: string }> {
  const addrs: string[] = [];
  let error: string | undefined;
  for (const fn of [(h: string) => r.resolve4(h), (h: string) => r.resolve6(h)]) {
    try {
      addrs.push(...(await fn(host)));
    } catch (e) {
      if (!isNotFound(e)) error = (e as { code?: string }).code ?? String(e);
    }
  }
  return { addrs, error };
}

/** The in-addr.arpa / ip6.arpa name of an address. */
export function arpaName(ip: string): string {
  if (isIP(ip) === 4) return ip.split(".").reverse().join(".") + ".in-addr.arpa";
  const parts = ip.split("::");
  const head = parts[0] ? parts[0].split(":") : [];
  const tail = parts.length > 1 && parts[1] ? parts[1].split(":") : [];
  const groups = [...head, ...Array(8 - head.length - tail.length).fill("0"), ...tail].map((g) => g.padStart(4, "0"));
  return groups.join("").split("").reverse().join(".") + ".ip6.arpa";
}

async function checkHostname(config: Config, r: Resolver): Promise<{ checks: Check[]; addrs: string[] }> {
  const host = norm(config.hostname);
  const checks: Check[] = [];
  for (const w of configWarnings(config)) checks.push({ name: w.code === "HOSTNAME_NOT_FQDN" ? "hostname is qualified" : "public URL is public", status: "fail", detail: w.message, fix: w.fix });
  if (!isQualifiedHostname(host)) return { checks, addrs: [] };

  const { addrs, error } = await addressesOf(r, host);
  if (!addrs.length) {
    checks.push({
      name: "hostname resolves (A/AAAA)",
      status: "fail",
      detail: error ? `lookup of ${host} failed (${error})` : `${host} has no A or AAAA record`,
      fix: `Publish an A (and/or AAAA) record for ${host} with this server's public address.`,
    });
    return { checks, addrs };
  }
  checks.push({ name: "hostname resolves (A/AAAA)", status: "ok", detail: `${host} -> ${addrs.join(", ")}` });

  // Forward-confirmed reverse DNS: every address's PTR names the hostname, and that name resolves back.
  for (const ip of addrs) {
    let names: string[] = [];
    try {
      // resolvePtr, not reverse(): Bun's reverse() asks the system, not the configured resolvers.
      names = (await r.resolvePtr(arpaName(ip))).map(norm);
    } catch {}
    const ok = names.includes(host);
    checks.push(
      ok
        ? { name: `reverse DNS of ${ip}`, status: "ok", detail: `PTR ${ip} -> ${host} -> ${ip} (forward-confirmed)` }
        : {
            name: `reverse DNS of ${ip}`,
            status: "fail",
            detail: names.length ? `PTR ${ip} -> ${names.join(", ")}, not ${host}` : `${ip} has no PTR record`,
            fix: `Ask the owner of ${ip} (your hosting provider) to set its PTR (reverse DNS) record to ${host}.`,
          },
    );
  }

  // SPF for the HELO name.
  for (const rec of serverRecords(host)) {
    const checked = await checkSpfRecord(r, rec, host);
    const spf = (await resolveTxtJoined(r, host).catch(() => [])).find((t) => /^v=spf1(\s|$)/i.test(t));
    const terms = (spf ?? "").toLowerCase().split(/\s+/);
    const allowsAddr = addrs.some((a) => terms.some((t) => /^\+?ip[46]:/.test(t) && t.replace(/^\+?ip[46]:/, "").split("/")[0] === a.toLowerCase()));
    checks.push(
      checked.status === "VERIFIED" || allowsAddr
        ? { name: "SPF for the HELO name", status: "ok", detail: `${host}: ${spf}` }
        : {
            name: "SPF for the HELO name",
            status: "fail",
            detail: spf ? `${host} has "${spf}", which does not allow itself` : `${host} has no SPF record`,
            fix: `Publish TXT ${host} "${rec.value}" (receivers check SPF for the HELO name too).`,
          },
    );
  }
  return { checks, addrs };
}

async function checkOutbound(config: Config, r: Resolver, opts: DoctorOptions): Promise<Check> {
  const timeouts = { connectMs: opts.timeoutMs ?? 10_000, greetingMs: opts.timeoutMs ?? 10_000, socketMs: opts.timeoutMs ?? 10_000 };
  if (config.smtpRelay) {
    let relay;
    try {
      relay = parseRelayUrl(config.smtpRelay);
    } catch (e) {
      return { name: "relay answers and authenticates", status: "fail", detail: String((e as Error).message), fix: "Fix MAILSVC_SMTP_RELAY (smtp[s]://user:pass@host:port)." };
    }
    const res = await SmtpClient.open({ host: relay.host, port: relay.port, secure: relay.secure, auth: relay.auth, servername: relay.host, clientName: config.hostname, timeouts });
    if (!res.ok) {
      return {
        name: "relay answers and authenticates",
        status: "fail",
        detail: `${relay.host}:${relay.port}: ${res.result.reply}`,
        fix: "Check the relay host, port and credentials in MAILSVC_SMTP_RELAY, and that this machine may connect to it.",
      };
    }
    res.client.close();
    return { name: "relay answers and authenticates", status: "ok", detail: `${relay.host}:${relay.port}${relay.auth ? ` as ${relay.auth.user}` : ""}` };
  }
  const domain = opts.probeDomain ?? "gmail.com";
  const mx = await resolveMxSorted(r, domain).catch(() => null);
  const host = mx?.[0]?.exchange;
  if (!host) return { name: `outbound port ${config.mxPort}`, status: "fail", detail: `no MX found for the probe domain ${domain}`, fix: "Check MAILSVC_DNS_SERVERS: the resolvers must answer MX queries." };
  const addr = isIP(host) ? host : (await addressesOf(r, host)).addrs[0];
  if (!addr) return { name: `outbound port ${config.mxPort}`, status: "fail", detail: `the MX ${host} of ${domain} has no address`, fix: "Check MAILSVC_DNS_SERVERS." };
  const res = await SmtpClient.open({ host: addr, port: config.mxPort, servername: host, clientName: config.hostname, timeouts });
  if (!res.ok) {
    return {
      name: `outbound port ${config.mxPort}`,
      status: "fail",
      detail: `could not open an SMTP session with ${host} (${addr}:${config.mxPort}): ${res.result.reply}`,
      fix: `Many providers block outbound port ${config.mxPort}: ask yours to open it, or deliver through a relay (MAILSVC_SMTP_RELAY).`,
    };
  }
  const secure = res.client.secure;
  res.client.close();
  return { name: `outbound port ${config.mxPort}`, status: "ok", detail: `${host} (${addr}:${config.mxPort}) answered${secure ? " and STARTTLS worked" : ""}` };
}

async function checkPublicUrl(config: Config, timeoutMs: number): Promise<Check> {
  const url = `${config.publicUrl}/config`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
    await res.arrayBuffer().catch(() => {});
    if (res.ok) return { name: "public URL answers", status: "ok", detail: `${url} -> ${res.status}` };
    return { name: "public URL answers", status: "fail", detail: `${url} -> ${res.status}`, fix: "Point MAILSVC_PUBLIC_URL at this server (its reverse proxy must forward to mailsvc)." };
  } catch (e) {
    return {
      name: "public URL answers",
      status: "fail",
      detail: `${url}: ${String((e as Error)?.message ?? e)}`,
      fix: "Start the server (mailsvc serve) and make MAILSVC_PUBLIC_URL reach it from outside; tracking and unsubscribe links use it.",
    };
  }
}

const FIXES: Record<string, (rec: DnsRecord) => string> = {
  dkim: (rec) => `Publish TXT ${rec.name} "${rec.value}" (required: unsigned or failing mail is rejected or spam-foldered).`,
  spf: (rec) => `Publish TXT ${rec.name} "${rec.value}" (one SPF record per name).`,
  "return-path": (rec) => `Publish MX ${rec.name} ${rec.priority ?? 10} ${rec.value} (bounces and DMARC reports come back to this server).`,
  dmarc: (rec) => `Publish TXT ${rec.name} "${rec.value}".`,
};

async function checkDomains(config: Config): Promise<Check[]> {
  const opened = openReadOnly(config);
  if (!opened) return [{ name: "sender domains", status: "warn", detail: `no database at ${config.db} yet`, fix: "Start the server and add a domain (POST /domains)." }];
  const { db } = opened;
  try {
    const tables = await db.introspection.getTables();
    if (!tables.some((t) => t.name === "domains")) return [{ name: "sender domains", status: "warn", detail: "the database is not migrated yet", fix: "Run mailsvc migrate or mailsvc serve." }];
    const rows = await db.selectFrom("domains").selectAll().orderBy("domain").execute();
    if (!rows.length) return [{ name: "sender domains", status: "warn", detail: "no sender domain added yet", fix: "Add one (POST /domains) and publish its records." }];
    const checks: Check[] = [];
    const seen = new Set<string>();
    for (const row of rows) {
      // The same name in several projects differs only by key: each name+key once.
      if (seen.has(`${row.domain}|${row.dkim_selector}`)) continue;
      seen.add(`${row.domain}|${row.dkim_selector}`);
      const r = createResolver(config);
      const result = await checkRecords(r, row, config.hostname, []);
      for (const rec of result.records) {
        const label = `${row.domain}: ${rec.purpose}${rec.algorithm === "ed25519" ? " (ed25519)" : rec.rotation === "next" ? " (next key)" : ""}`;
        if (rec.status === "VERIFIED") checks.push({ name: label, status: "ok", detail: `${rec.type} ${rec.name}` });
        else checks.push({ name: label, status: rec.required || rec.purpose !== "dmarc" ? "fail" : "warn", detail: `${rec.type} ${rec.name}: ${rec.detail ?? rec.status}`, fix: FIXES[rec.purpose]!(rec) });
      }
    }
    return checks;
  } catch (e) {
    return [{ name: "database", status: "fail", detail: String((e as Error).message ?? e), fix: "Check MAILSVC_DATABASE_URL (or MAILSVC_DB) and that the database answers." }];
  } finally {
    await opened.close();
  }
}

/** SMTP submission, when on: whether clients on other machines can log in (AUTH needs TLS, so a certificate). */
export function checkSubmission(config: Config): Check | null {
  const ports = [config.submissionPort > 0 ? `${config.submissionPort} (STARTTLS)` : "", config.submissionTlsPort > 0 ? `${config.submissionTlsPort} (TLS)` : ""].filter(Boolean);
  if (!ports.length) return null;
  const files = tlsFilesFor(config, "submission");
  const unreadable = files ? [files.certFile, files.keyFile].filter((f) => !existsSync(f)) : [];
  if (!files || unreadable.length) {
    return {
      name: "SMTP submission",
      status: config.submissionTlsPort > 0 ? "fail" : "warn",
      detail: files ? `certificate files not found: ${unreadable.join(", ")}` : "no certificate: only programs on this machine (loopback) can authenticate",
      fix: "Set MAILSVC_TLS_CERT and MAILSVC_TLS_KEY to this host's certificate chain and key (PEM), e.g. from Let's Encrypt.",
    };
  }
  return { name: "SMTP submission", status: "ok", detail: `port ${ports.join(" and ")}, certificate ${files.certFile}` };
}

export async function runDoctor(config: Config, opts: DoctorOptions = {}): Promise<Check[]> {
  const r = createResolver(config);
  const host = await checkHostname(config, r);
  const checks = [...host.checks];
  checks.push(await checkOutbound(config, r, opts));
  checks.push(await checkPublicUrl(config, opts.timeoutMs ?? 10_000));
  if (!config.inboundSmtpPort) {
    checks.push({
      name: "inbound SMTP",
      status: "warn",
      detail: "the inbound listener is off: asynchronous bounces, complaints and DMARC reports are not received",
      fix: "Set MAILSVC_INBOUND_SMTP_PORT=25 (bounce-domain MX records point at this server).",
    });
  } else checks.push({ name: "inbound SMTP", status: "ok", detail: `listening on port ${config.inboundSmtpPort}` });
  const submission = checkSubmission(config);
  if (submission) checks.push(submission);
  if (!opts.skipDomains) checks.push(...(await checkDomains(config)));
  return checks;
}

export function formatChecks(checks: Check[]): string {
  const mark = { ok: "[ ok ]", warn: "[warn]", fail: "[FAIL]" };
  const lines = checks.map((c) => `${mark[c.status]} ${c.name}: ${c.detail}${c.fix && c.status !== "ok" ? `\n       fix: ${c.fix}` : ""}`);
  const failed = checks.filter((c) => c.status === "fail").length;
  const warned = checks.filter((c) => c.status === "warn").length;
  lines.push("", failed ? `${failed} check(s) failed, ${warned} warning(s)` : `all checks passed${warned ? ` (${warned} warning(s))` : ""}`);
  return lines.join("\n") + "\n";
}

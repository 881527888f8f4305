// MTA-STS (RFC 8461) for outbound delivery. A destination domain that publishes `_mta-sts.<domain>`
// TXT (`v=STSv1; id=…`) and a policy at https://mta-sts.<domain>/.well-known/mta-sts.txt says which
// MX hosts may receive its mail and whether TLS to them is mandatory:
// - enforce: only MX hosts matching the policy, only over STARTTLS with a certificate valid for the
//   MX name (chain to a trusted CA); anything else is deferred, never sent in the clear;
// - testing: delivered as usual; what enforce would have refused is logged (a report);
// - none / no policy: as usual (opportunistic TLS).
// Policies are cached (memory and the mta_sts_policies table) for their max_age and refetched when
// the TXT id changes; a policy fetch or DNS failure keeps using a cached, unexpired policy.
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { rootCertificates } from "node:tls";
import type { Resolver } from "node:dns/promises";
import type { Kysely } from "kysely";
import type { Config } from "../../config";
import type { DB } from "../../db";
import type { Logger } from "../../http/logger";
import { isNotFound } from "../../net/dns";

export type StsMode = "enforce" | "testing" | "none";

export interface StsPolicy {
  id: string;
  mode: StsMode;
  /** Lower-case MX patterns: `mx.example.com` or `*.example.com` (one label). */
  mx: string[];
  maxAgeS: number;
}

/** Parses a policy file body (RFC 8461 3.2); null when it is not a valid STSv1 policy. */
export function parsePolicy(body: string, id = ""): StsPolicy | null {
  const fields: Record<string, string[]> = {};
  for (const line of body.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i <= 0) continue;
    const k = line.slice(0, i).trim().toLowerCase();
    (fields[k] ??= []).push(line.slice(i + 1).trim());
  }
  if (fields.version?.[0] !== "STSv1") return null;
  const mode = fields.mode?.[0]?.toLowerCase();
  if (mode !== "enforce" && mode !== "testing" && mode !== "none") return null;
  const maxAge = Number(fields.max_age?.[0]);
  if (!Number.isInteger(maxAge) || maxAge < 0) return null;
  const mx = (fields.mx ?? []).map((m) => m.toLowerCase().replace(/\.$/, "")).filter(Boolean);
  if (mode !== "none" && !mx.length) return null;
  return { id, mode, mx, maxAgeS: Math.min(maxAge, 31_557_600) };
}

/** Whether an MX host name matches one of the policy's patterns (a wildcard covers one label). */
export function mxMatches(host: string, patterns: string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, "");
  return patterns.some((p) => (p.startsWith("*.") ? h.endsWith(p.slice(1)) && !h.slice(0, h.length - p.length + 1).includes(".") : h === p));
}

export interface MtaStsOptions {
  resolver: () => Resolver;
  db: Kysely<DB>;
  now: () => number;
  log: Logger;
  /** Extra trusted CA certificates (PEM), for the policy fetch and MX certificate checks. */
  ca?: string;
  /** HTTPS port of the policy host (443; tests use another). */
  port?: number;
  /** How long a TXT lookup result is trusted before asking DNS again. */
  recheckMs?: number;
  fetchTimeoutMs?: number;
}

interface Cached {
  policy: StsPolicy | null;
  /** When the policy itself expires (max_age after fetch). */
  expires: number;
  /** When to look at the TXT record again. */
  recheck: number;
}

export class MtaSts {
  private cache = new Map<string, Cached>();
  private inflight = new Map<string, Promise<StsPolicy | null>>();
  readonly ca: string | undefined;

  constructor(private readonly o: MtaStsOptions) {
    this.ca = o.ca;
  }

  /** Loads the CA file named in config (undefined when none). */
  static caFrom(file: string | undefined): string | undefined {
    return file ? readFileSync(file, "utf8") : undefined;
  }

  /** The domain's policy in force now, or null (no policy: deliver as usual). Never throws. */
  policyFor(domain: string): Promise<StsPolicy | null> {
    const d = domain.toLowerCase();
    const now = this.o.now();
    const hit = this.cache.get(d);
    if (hit && hit.recheck > now && (!hit.policy || hit.expires > now)) return Promise.resolve(hit.policy);
    let p = this.inflight.get(d);
    if (!p) {
      p = this.refresh(d, hit).finally(() => this.inflight.delete(d));
      this.inflight.set(d, p);
    }
    return p;
  }

  private async stored(domain: string): Promise<Cached | undefined> {
    const row = await this.o.db.selectFrom("mta_sts_policies").selectAll().where("domain", "=", domain).executeTakeFirst();
    if (!row) return undefined;
    return { policy: { id: row.policy_id, mode: row.mode as StsMode, mx: JSON.parse(row.mx), maxAgeS: row.max_age }, expires: row.expires_at, recheck: 0 };
  }

  private async refresh(domain: string, hit: Cached | undefined): Promise<StsPolicy | null> {
    const now = this.o.now();
    const recheck = now + (this.o.recheckMs ?? 5 * 60_000);
    const prior = hit?.policy ? hit : await this.stored(domain).catch(() => undefined);
    const valid = prior?.policy && prior.expires > now ? prior : undefined;
    const keep = (c: Cached | undefined) => {
      const policy = c?.policy ?? null;
      this.cache.set(domain, { policy, expires: c?.expires ?? 0, recheck });
      return policy;
    };
    let id: string | null;
    try {
      id = await this.txtId(domain);
    } catch {
      return keep(valid); // DNS trouble: a cached policy stays in force
    }
    if (id === null) return keep(valid); // no TXT: a cached unexpired policy is still honoured (RFC 8461 5.1)
    if (valid && valid.policy!.id === id) return keep(valid);
    const fetched = await this.fetchPolicy(domain, id);
    if (!fetched) return keep(valid);
    const expires = now + fetched.maxAgeS * 1000;
    await this.o.db
      .insertInto("mta_sts_policies")
      .values({ domain, policy_id: fetched.id, mode: fetched.mode, mx: JSON.stringify(fetched.mx), max_age: fetched.maxAgeS, fetched_at: now, expires_at: expires })
      .onConflict((oc) =>
        oc.column("domain").doUpdateSet({ policy_id: fetched.id, mode: fetched.mode, mx: JSON.stringify(fetched.mx), max_age: fetched.maxAgeS, fetched_at: now, expires_at: expires }),
      )
      .execute()
      .catch((e) => this.o.log.warn("mta-sts: storing a policy failed", { domain, error: String(e) }));
    if (this.cache.size > 10_000) this.cache.clear();
    return keep({ policy: fetched, expires, recheck });
  }

  /** The id of `_mta-sts.<domain>` (null: no STSv1 record). Throws on a DNS failure. */
  private async txtId(domain: string): Promise<string | null> {
    let records: string[];
    try {
      records = (await this.o.resolver().resolveTxt(`_mta-sts.${domain}`)).map((c) => c.join(""));
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
    const sts = records.filter((r) => /^v=STSv1\s*(;|$)/.test(r.trim()));
    if (sts.length !== 1) return null;
    const m = /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(;|$)/.exec(sts[0]!);
    return m ? m[1]! : null;
  }

  /**
   * GET https://mta-sts.<domain>/.well-known/mta-sts.txt with a verified certificate for that name.
   * The host is resolved through the configured resolvers (like every other lookup of delivery),
   * then reached by address with the name for SNI and certificate checks.
   */
  private async fetchPolicy(domain: string, id: string): Promise<StsPolicy | null> {
    const host = `mta-sts.${domain}`;
    const port = this.o.port ?? 443;
    try {
      const r = this.o.resolver();
      const addrs = await r.resolve4(host).catch(async () => r.resolve6(host));
      if (!addrs.length) throw new Error(`${host} has no address`);
      const { status, body } = await httpsGet(addrs[0]!, port, host, "/.well-known/mta-sts.txt", this.trusted(), this.o.fetchTimeoutMs ?? 10_000);
      if (status !== 200) {
        this.o.log.warn("mta-sts: policy fetch failed", { domain, host, status });
        return null;
      }
      const policy = parsePolicy(body, id);
      if (!policy) this.o.log.warn("mta-sts: invalid policy", { domain, host });
      return policy;
    } catch (e) {
      this.o.log.warn("mta-sts: policy fetch failed", { domain, host, error: String((e as Error)?.message ?? e) });
      return null;
    }
  }

  /** The CAs a policy host or an enforce-mode MX must chain to: the system's plus the configured ones. */
  trusted(): string[] | undefined {
    return this.ca ? [...rootCertificates, this.ca] : undefined;
  }
}

function httpsGet(address: string, port: number, servername: string, path: string, ca: string[] | undefined, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: address, port, servername, path, method: "GET", headers: { host: servername, accept: "text/plain" }, ...(ca ? { ca } : {}), timeout: timeoutMs },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
          if (body.length > 64 * 1024) req.destroy(new Error("policy larger than 64 KB"));
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("policy fetch timed out")));
    req.on("error", reject);
    req.end();
  });
}

/** The delivery engine's MTA-STS cache, from the service's config. */
export function createMtaSts(ctx: { config: Config; db: Kysely<DB>; clock: { now(): number }; log: Logger }, resolver: () => Resolver): MtaSts {
  return new MtaSts({ resolver, db: ctx.db, now: () => ctx.clock.now(), log: ctx.log, ca: MtaSts.caFrom(ctx.config.mtaStsCa), port: ctx.config.mtaStsPort });
}

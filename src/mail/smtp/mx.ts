// Where mail for a domain goes: MX hosts in priority order (equal priorities shuffled), the
// domain itself when it has no MX but has an address (RFC 5321 implicit MX), a bounce for a null
// MX (RFC 7505) or a domain that does not exist, a deferral when DNS itself fails.
// Answers are cached briefly (per service instance, on the service clock).
import { isIP } from "node:net";
import type { Resolver } from "node:dns/promises";
import { isNotFound } from "../../net/dns";
import { bounced, deferred, type DeliveryResult } from "./smtp-result";

export interface MxHost {
  name: string;
  priority: number;
}

export type Route = { kind: "mx"; hosts: MxHost[] } | { kind: "fail"; result: DeliveryResult };

function shuffleEqualPriorities(hosts: MxHost[]): MxHost[] {
  const out = [...hosts].sort((a, b) => a.priority - b.priority || Math.random() - 0.5);
  return out;
}

function dnsFailure(e: unknown, what: string): DeliveryResult {
  const code = (e as { code?: string })?.code ?? "EDNS";
  return deferred(`DNS lookup failed for ${what}: ${code}`, "dns", 0);
}

async function resolveAddresses(r: Resolver, host: string): Promise<{ addresses: string[]; error?: unknown }> {
  if (isIP(host)) return { addresses: [host] };
  const out: string[] = [];
  let error: unknown;
  for (const fn of [(h: string) => r.resolve4(h), (h: string) => r.resolve6(h)]) {
    try {
      out.push(...(await fn(host)));
    } catch (e) {
      if (!isNotFound(e)) error = e;
    }
  }
  return { addresses: out, error: out.length ? undefined : error };
}

export async function resolveRoute(r: Resolver, domain: string): Promise<Route> {
  let mx: { exchange: string; priority: number }[] | null;
  try {
    mx = await r.resolveMx(domain);
  } catch (e) {
    if (!isNotFound(e)) return { kind: "fail", result: dnsFailure(e, `MX ${domain}`) };
    mx = null;
  }
  if (mx && mx.length) {
    const real = mx.filter((m) => m.exchange && m.exchange !== ".");
    if (!real.length) {
      return { kind: "fail", result: bounced(`556 5.1.10 ${domain} does not accept email (null MX)`, "dns", 556) };
    }
    return { kind: "mx", hosts: shuffleEqualPriorities(real.map((m) => ({ name: m.exchange.replace(/\.$/, "").toLowerCase(), priority: m.priority }))) };
  }
  // No MX: the domain itself, if it has an address.
  const { addresses, error } = await resolveAddresses(r, domain);
  if (addresses.length) return { kind: "mx", hosts: [{ name: domain, priority: 0 }] };
  if (error) return { kind: "fail", result: dnsFailure(error, `A/AAAA ${domain}`) };
  return { kind: "fail", result: bounced(`550 5.1.2 ${domain} has no MX or address record (domain not found)`, "dns", 550) };
}

interface CacheEntry<T> {
  value: T;
  expires: number;
}

/** Brief caches of routes and host addresses for delivery (verification never uses them). */
export class RouteCache {
  private routes = new Map<string, CacheEntry<Route>>();
  private addrs = new Map<string, CacheEntry<string[]>>();

  constructor(
    private readonly resolver: () => Resolver,
    private readonly now: () => number,
    private readonly ttlMs = 60_000,
  ) {}

  async route(domain: string): Promise<Route> {
    const hit = this.routes.get(domain);
    const now = this.now();
    if (hit && hit.expires > now) return hit.value;
    const value = await resolveRoute(this.resolver(), domain);
    // DNS failures are not cached: the next attempt asks again.
    if (!(value.kind === "fail" && value.result.kind === "deferred")) this.routes.set(domain, { value, expires: now + this.ttlMs });
    this.trim(this.routes);
    return value;
  }

  async addresses(host: string): Promise<{ addresses: string[]; error?: unknown }> {
    const hit = this.addrs.get(host);
    const now = this.now();
    if (hit && hit.expires > now) return { addresses: hit.value };
    const res = await resolveAddresses(this.resolver(), host);
    if (res.addresses.length) this.addrs.set(host, { value: res.addresses, expires: now + this.ttlMs });
    this.trim(this.addrs);
    return res;
  }

  private trim<T>(m: Map<string, CacheEntry<T>>) {
    if (m.size <= 10_000) return;
    const now = this.now();
    for (const [k, v] of m) if (v.expires <= now) m.delete(k);
    if (m.size > 10_000) m.clear();
  }
}

import { lookup as systemLookup } from "node:dns/promises";
import type { Config } from "../config";
import { createResolver } from "./dns";
import { classifyAddress, isIpLiteral, isLoopbackName } from "./address-policy";

/**
 * The one SSRF-guarded HTTP client (outbound webhooks, workflow WEBHOOK steps).
 * Each hop: resolve the host through the configured resolvers, refuse when any answer is not a
 * public unicast address (unless allowPrivateWebhooks), then connect to the checked address itself
 * (the socket's lookup is pinned, so a second DNS answer can never be used: no rebinding).
 * Redirects are followed by hand, each hop checked again. Never throws: the outcome is a value.
 */
export interface SafeFetchRequest {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Whole exchange, all hops included. Default 10 s. */
  timeoutMs?: number;
  /** Default 5. */
  maxRedirects?: number;
  /** How much of the response body is kept. Default 1 KB. */
  maxBodyBytes?: number;
}

export type SafeFetchErrorKind = "invalid_url" | "refused" | "dns" | "timeout" | "network" | "too_many_redirects";

export interface SafeFetchOutcome {
  /** A 2xx answer. */
  ok: boolean;
  status?: number;
  /** The first maxBodyBytes of the response body (utf-8). */
  body?: string;
  error?: string;
  errorKind?: SafeFetchErrorKind;
  /** The URL that answered (after redirects). */
  url?: string;
}

export type SafeFetchConfig = Pick<Config, "dnsServers" | "allowPrivateWebhooks"> & {
  /** Replaces the address policy (tests use it to let one loopback address stand for "public"). */
  classify?: typeof classifyAddress;
};

class Refusal extends Error {
  constructor(readonly kind: SafeFetchErrorKind, message: string) {
    super(message);
  }
}

/** Resolves a host to its addresses: the configured resolvers, or the system's (hosts file included). */
async function resolveHost(config: SafeFetchConfig, host: string): Promise<{ address: string; family: 4 | 6 }[]> {
  if (isIpLiteral(host)) {
    const a = host.replace(/^\[|\]$/g, "");
    return [{ address: a, family: a.includes(":") ? 6 : 4 }];
  }
  // RFC 6761: localhost names are loopback, whatever the resolvers know (reached only when private addresses are allowed).
  if (isLoopbackName(host)) return [{ address: "127.0.0.1", family: 4 }, { address: "::1", family: 6 }];
  try {
    if (config.dnsServers.length) {
      const r = createResolver(config);
      const [v4, v6] = await Promise.all([r.resolve4(host).catch(() => [] as string[]), r.resolve6(host).catch(() => [] as string[])]);
      return [...v4.map((address) => ({ address, family: 4 as const })), ...v6.map((address) => ({ address, family: 6 as const }))];
    }
    const all = await systemLookup(host, { all: true, verbatim: true });
    return all.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  } catch {
    return [];
  }
}

async function checkedAddress(config: SafeFetchConfig, host: string): Promise<{ address: string; family: 4 | 6 }> {
  // localhost names are loopback whatever a resolver says (or whether it knows them): refused unasked.
  if (!config.allowPrivateWebhooks && isLoopbackName(host)) throw new Refusal("refused", `${host} is a loopback name, which webhooks may not reach`);
  const addrs = await resolveHost(config, host);
  if (!addrs.length) throw new Refusal("dns", `could not resolve ${host}`);
  if (!config.allowPrivateWebhooks) {
    for (const a of addrs) {
      const v = (config.classify ?? classifyAddress)(a.address);
      if (!v.allowed) throw new Refusal("refused", `${host} resolves to ${a.address} (${v.range}), which webhooks may not reach`);
    }
  }
  return addrs.find((a) => a.family === 4) ?? addrs[0]!;
}

interface HopResult {
  status: number;
  location: string | null;
  body: string;
}

/**
 * One request to the checked address: the URL names the IP itself (so no resolution happens again)
 * and the Host header and TLS server name (SNI and certificate check) carry the original host.
 */
async function oneHop(
  url: URL,
  pinned: { address: string; family: 4 | 6 },
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  deadline: number,
  maxBodyBytes: number,
): Promise<HopResult> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) throw new Refusal("timeout", "timed out");
  const target = new URL(url.toString());
  target.hostname = pinned.family === 6 ? `[${pinned.address}]` : pinned.address;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), remaining);
  try {
    const res = await fetch(target, {
      method,
      headers: { ...headers, host: url.host },
      body,
      redirect: "manual",
      signal: ac.signal,
      ...(url.protocol === "https:" && !isIpLiteral(host) ? { tls: { serverName: host } } : {}),
    } as RequestInit);
    if (res.body && smallPlainBody(res, maxBodyBytes)) {
      // Its length is framed by Content-Length (no chunking, no decompression): at most maxBodyBytes
      // arrive, read in one call (the stream reader below costs more per response: every webhook passes here).
      return { status: res.status, location: res.headers.get("location"), body: await res.text() };
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      const reader = res.body.getReader();
      while (size < maxBodyBytes) {
        const { done, value } = await reader.read();
        if (done) break;
        const take = value.subarray(0, maxBodyBytes - size);
        chunks.push(take);
        size += take.length;
      }
      reader.cancel().catch(() => {});
    }
    return { status: res.status, location: res.headers.get("location"), body: Buffer.concat(chunks).toString("utf8") };
  } catch (e) {
    if (ac.signal.aborted) throw new Refusal("timeout", `timed out after ${Math.round(remaining / 100) / 10}s`);
    throw new Refusal("network", (e as Error)?.message || String(e));
  } finally {
    clearTimeout(timer);
  }
}

/** A response whose body is at most `max` bytes as sent and as read: a Content-Length, no Transfer-Encoding, no Content-Encoding. */
function smallPlainBody(res: Response, max: number): boolean {
  const length = res.headers.get("content-length");
  if (length === null || !/^\d{1,9}$/.test(length) || Number(length) > max) return false;
  const coding = res.headers.get("content-encoding");
  return res.headers.get("transfer-encoding") === null && (coding === null || coding.toLowerCase() === "identity");
}

export async function safeFetch(config: SafeFetchConfig, req: SafeFetchRequest): Promise<SafeFetchOutcome> {
  const timeoutMs = req.timeoutMs ?? 10_000;
  const maxRedirects = req.maxRedirects ?? 5;
  const maxBodyBytes = req.maxBodyBytes ?? 1024;
  const deadline = Date.now() + timeoutMs;
  let method = (req.method ?? "POST").toUpperCase();
  let body = req.body;
  let headers: Record<string, string> = { "user-agent": "mailsvc-webhooks" };
  for (const [k, v] of Object.entries(req.headers ?? {})) headers[k.toLowerCase()] = v;
  let current: URL;
  try {
    current = new URL(req.url);
  } catch {
    return { ok: false, error: `invalid URL: ${req.url}`, errorKind: "invalid_url" };
  }
  try {
    for (let hop = 0; ; hop++) {
      if (current.protocol !== "http:" && current.protocol !== "https:") throw new Refusal("invalid_url", `unsupported scheme ${current.protocol}`);
      if (current.username || current.password) throw new Refusal("invalid_url", "credentials in URLs are not allowed");
      const pinned = await checkedAddress(config, current.hostname.replace(/^\[|\]$/g, ""));
      const r = await oneHop(current, pinned, method, headers, body, deadline, maxBodyBytes);
      if (r.status >= 300 && r.status < 400 && r.status !== 304 && r.location) {
        if (hop >= maxRedirects) throw new Refusal("too_many_redirects", `more than ${maxRedirects} redirects`);
        let next: URL;
        try {
          next = new URL(r.location, current);
        } catch {
          throw new Refusal("invalid_url", `invalid redirect location: ${r.location}`);
        }
        if (r.status === 303 || ((r.status === 301 || r.status === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
          const { "content-type": _ct, ...rest } = headers;
          headers = rest;
        }
        current = next;
        continue;
      }
      return { ok: r.status >= 200 && r.status < 300, status: r.status, body: r.body, url: current.toString() };
    }
  } catch (e) {
    const kind = e instanceof Refusal ? e.kind : "network";
    return { ok: false, error: (e as Error)?.message ?? String(e), errorKind: kind, url: current.toString() };
  }
}

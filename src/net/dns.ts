import { Resolver } from "node:dns/promises";
import type { Config } from "../config";

/**
 * DNS through the operator's resolvers (MAILSVC_DNS_SERVERS) or the system's.
 * A fresh Resolver per lookup batch: Bun's Resolver caches answers for their TTL per instance,
 * and domain verification must never see a cached answer.
 */
export function createResolver(config: Pick<Config, "dnsServers">): Resolver {
  const r = new Resolver({ timeout: 3000, tries: 2 } as any);
  if (config.dnsServers.length) r.setServers(config.dnsServers);
  return r;
}

/** Error codes that mean "the name or record does not exist" (as opposed to a lookup failure). */
const NOT_FOUND = new Set(["ENOTFOUND", "ENODATA", "NXDOMAIN", "ENONAME"]);
export const isNotFound = (e: unknown) => NOT_FOUND.has((e as { code?: string })?.code ?? "");

/** TXT records with each record's strings joined (Bun splits a multi-string record; DKIM keys need them whole). */
export async function resolveTxtJoined(r: Resolver, name: string): Promise<string[]> {
  try {
    return (await r.resolveTxt(name)).map((chunks) => chunks.join(""));
  } catch (e) {
    if (isNotFound(e)) return [];
    throw e;
  }
}

export async function resolveMxSorted(r: Resolver, domain: string): Promise<{ exchange: string; priority: number }[] | null> {
  try {
    return (await r.resolveMx(domain)).sort((a, b) => a.priority - b.priority);
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

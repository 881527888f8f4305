// The DKIM signing key of a project's sender domain, cached per service instance (tests run several
// in one process). The domains module drops entries when a domain changes (forgetSigningKeys).
import type { KeyObject } from "node:crypto";
import type { AppContext } from "../../context";
import { dkimRecordName, forgetPrivateKey, privateKeyObject } from "./dkim-keys";

export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: KeyObject;
  privateKeyPem: string;
  /** The domain's Ed25519 key (RFC 8463 dual signing), once its record is seen published. */
  ed25519: { selector: string; privateKeyPem: string } | null;
}

/** Whether the stored records show the TXT record at `name` VERIFIED. */
function recordVerified(recordsJson: string, name: string): boolean {
  try {
    const recs = JSON.parse(recordsJson) as { name?: string; status?: string }[];
    return Array.isArray(recs) && recs.some((r) => r.name === name && r.status === "VERIFIED");
  } catch {
    return false;
  }
}

/** `${projectId}|${domain}` -> signing key (null: no such domain). */
declare module "../../context" {
  interface Caches {
    /** `${projectId}|${domain}` -> the domain's DKIM keys (null: no such domain). */
    signingKeys: Map<string, SigningKey | null>;
  }
}
const cacheOf = (ctx: AppContext) => ctx.services.caches.signingKeys;

/** The DKIM key of a project's domain (any status), KeyObject cached; null when the project has no such domain. */
export async function getSigningKey(ctx: AppContext, projectId: string, domain: string): Promise<SigningKey | null> {
  const d = domain.toLowerCase();
  const c = cacheOf(ctx);
  const key = `${projectId}|${d}`;
  if (c.has(key)) return c.get(key)!;
  const row = await ctx.db
    .selectFrom("domains")
    .select(["domain", "dkim_selector", "dkim_private_key", "dkim_ed25519_selector", "dkim_ed25519_private_key", "records"])
    .where("project_id", "=", projectId)
    .where("domain", "=", d)
    .executeTakeFirst();
  const value = row
    ? {
        domain: row.domain,
        selector: row.dkim_selector,
        privateKey: privateKeyObject(row.dkim_private_key),
        privateKeyPem: row.dkim_private_key,
        ed25519:
          row.dkim_ed25519_selector && row.dkim_ed25519_private_key && recordVerified(row.records, dkimRecordName(row.dkim_ed25519_selector, row.domain))
            ? { selector: row.dkim_ed25519_selector, privateKeyPem: row.dkim_ed25519_private_key }
            : null,
      }
    : null;
  c.set(key, value);
  return value;
}

/** Drops every cached key (a peer's message may have been missed: src/jobs/peers.ts). */
export function forgetAllSigningKeys(ctx: AppContext): void {
  const c = cacheOf(ctx);
  for (const k of c.values()) if (k) forgetPrivateKey(k.privateKeyPem);
  c.clear();
}

/** Drops the cached keys of a project's domains (one domain, or all of them). */
export function forgetSigningKeys(ctx: AppContext, projectId: string, domain?: string): void {
  const c = cacheOf(ctx);
  for (const key of [...c.keys()]) {
    if (key.startsWith(projectId + "|") && (!domain || key === `${projectId}|${domain}`)) {
      const k = c.get(key);
      if (k) forgetPrivateKey(k.privateKeyPem);
      c.delete(key);
    }
  }
}

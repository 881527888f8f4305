/**
 * Sender domains: DKIM keys, DNS verification, and the one sender guard every mail path uses.
 */
import type { Selectable } from "kysely";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import type { DomainsTable, DomainStatus } from "../../db/tables/senders";
import { conflict, invalidField, notFound, senderDomainNotVerified } from "../../http/errors";
import { isValidDomain, isValidEmail } from "../../mail/address";
import { forgetPrivateKey, generateDkimKeyPair, newSelector } from "../../mail/dkim-keys";
import { forgetSigningKeys } from "../../mail/signing-keys";
import { createResolver } from "../../mail/dns";
import { bounceDomainFor, checkRecords, expectedRecords, type DnsRecord } from "./records";

export { bounceDomainFor } from "./records";
export { getSigningKey, type SigningKey } from "../../mail/signing-keys";
export type { DnsRecord } from "./records";

export type DomainRow = Selectable<DomainsTable>;

// ---- per-instance caches (tests run several instances in one process) ----------------------------

interface Caches {
  /** projectId -> its VERIFIED domains (the sender guard's hot path). */
  verified: Map<string, Set<string>>;
}
const caches = new WeakMap<AppContext, Caches>();
function cachesOf(ctx: AppContext): Caches {
  let c = caches.get(ctx);
  if (!c) caches.set(ctx, (c = { verified: new Map() }));
  return c;
}

/** Drops what is cached for a project's domains (after a status change, a delete or a reset). */
export function invalidateDomainCaches(ctx: AppContext, projectId: string, domain?: string): void {
  cachesOf(ctx).verified.delete(projectId);
  forgetSigningKeys(ctx, projectId, domain);
}

// ---- view ---------------------------------------------------------------------------------------

export function parseRecords(raw: string): DnsRecord[] {
  try {
    const v = JSON.parse(raw);
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

export function viewDomain(d: DomainRow) {
  return {
    id: d.id,
    domain: d.domain,
    projectId: d.project_id,
    verified: d.status === "VERIFIED",
    status: d.status,
    selector: d.dkim_selector,
    bounceDomain: bounceDomainFor(d.domain),
    records: parseRecords(d.records),
    verifiedAt: iso(d.verified_at),
    lastCheckedAt: iso(d.last_checked_at),
    createdAt: iso(d.created_at),
    updatedAt: iso(d.updated_at),
  };
}

// ---- CRUD ---------------------------------------------------------------------------------------

/** Lower-cases, trims and drops a trailing dot; 422 when it is not a domain name. */
export function normalizeDomain(raw: string): string {
  const d = raw.trim().toLowerCase().replace(/\.$/, "");
  if (!isValidDomain(d)) throw invalidField("domain", "Invalid domain name (expected e.g. example.com)", "invalid_string", raw);
  return d;
}

async function findByName(ctx: AppContext, projectId: string, domain: string) {
  return ctx.db.selectFrom("domains").selectAll().where("project_id", "=", projectId).where("domain", "=", domain).executeTakeFirst();
}

export async function addDomain(ctx: AppContext, projectId: string, rawDomain: string): Promise<DomainRow> {
  const domain = normalizeDomain(rawDomain);
  const duplicate = () => conflict(`The domain ${domain} is already added to this project`, { domain });
  if (await findByName(ctx, projectId, domain)) throw duplicate();
  const keys = await generateDkimKeyPair();
  const selector = newSelector();
  const now = ctx.clock.now();
  const row: DomainRow = {
    id: Bun.randomUUIDv7(),
    project_id: projectId,
    domain,
    status: "PENDING",
    dkim_selector: selector,
    dkim_private_key: keys.privateKeyPem,
    dkim_public_key: keys.publicKeyB64,
    records: JSON.stringify(expectedRecords(domain, selector, keys.publicKeyB64, ctx.config.hostname)),
    verified_at: null,
    last_checked_at: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await ctx.db.insertInto("domains").values(row).execute();
  } catch (e) {
    if (/UNIQUE/i.test(String((e as Error)?.message))) throw duplicate();
    throw e;
  }
  invalidateDomainCaches(ctx, projectId, domain);
  return row;
}

export async function getDomain(ctx: AppContext, id: string): Promise<DomainRow> {
  const row = await ctx.db.selectFrom("domains").selectAll().where("id", "=", id).executeTakeFirst();
  if (!row) throw notFound("Domain");
  return row;
}

/** Newest first. */
export async function listDomains(ctx: AppContext, projectId: string): Promise<DomainRow[]> {
  return ctx.db.selectFrom("domains").selectAll().where("project_id", "=", projectId).orderBy("created_at", "desc").orderBy("id", "desc").execute();
}

export async function deleteDomain(ctx: AppContext, row: DomainRow): Promise<void> {
  await ctx.db.deleteFrom("domains").where("id", "=", row.id).where("project_id", "=", row.project_id).execute();
  invalidateDomainCaches(ctx, row.project_id, row.domain);
  forgetPrivateKey(row.dkim_private_key);
}

// ---- verification -------------------------------------------------------------------------------

/** Looks the domain's records up now (fresh resolver, no cached answer) and stores the outcome. */
export async function verifyDomain(ctx: AppContext, row: DomainRow): Promise<DomainRow> {
  const resolver = createResolver(ctx.config);
  const result = await checkRecords(resolver, row, ctx.config.hostname, parseRecords(row.records));
  const dkim = result.records.find((r) => r.purpose === "dkim")!;
  const status: DomainStatus = result.dkim === "error" ? row.status : dkim.status;
  const now = ctx.clock.now();
  const verifiedAt = status === "VERIFIED" ? (row.status === "VERIFIED" && row.verified_at ? row.verified_at : now) : row.verified_at;
  const records = JSON.stringify(result.records);
  // updatedAt moves when something the user sees changed, not on every background check.
  const changed = status !== row.status || records !== row.records;
  const updated = await ctx.db
    .updateTable("domains")
    .set({ status, records, verified_at: verifiedAt, last_checked_at: now, updated_at: changed ? now : row.updated_at })
    .where("id", "=", row.id)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw notFound("Domain");
  if (status !== row.status) {
    invalidateDomainCaches(ctx, row.project_id, row.domain);
    ctx.log.info("domain status changed", { projectId: row.project_id, domain: row.domain, from: row.status, to: status });
  }
  return updated;
}

const CHUNK = 100;
const PARALLEL = 8;

/** The background re-check: every domain, in id-ordered chunks, a few lookups at a time. */
export async function verifyAllDomains(ctx: AppContext): Promise<{ checked: number; changed: number }> {
  let after = "";
  let checked = 0;
  let changed = 0;
  for (;;) {
    const rows = await ctx.db.selectFrom("domains").selectAll().where("id", ">", after).orderBy("id").limit(CHUNK).execute();
    if (!rows.length) break;
    for (let i = 0; i < rows.length; i += PARALLEL) {
      await Promise.all(
        rows.slice(i, i + PARALLEL).map(async (row) => {
          try {
            const next = await verifyDomain(ctx, row);
            checked++;
            if (next.status !== row.status) changed++;
          } catch (e) {
            ctx.log.error("domain check failed", { domain: row.domain, error: String(e) });
          }
        }),
      );
    }
    after = rows[rows.length - 1]!.id;
    if (rows.length < CHUNK) break;
  }
  return { checked, changed };
}

// ---- the sender guard and signing keys ----------------------------------------------------------

/** The address inside `Name <addr>` or the address itself. */
function bareAddress(from: string): string {
  const m = /<([^<>]*)>\s*$/.exec(from);
  return (m ? m[1]! : from).trim();
}

async function verifiedDomains(ctx: AppContext, projectId: string): Promise<Set<string>> {
  const c = cachesOf(ctx);
  let set = c.verified.get(projectId);
  if (!set) {
    const rows = await ctx.db
      .selectFrom("domains")
      .select("domain")
      .where("project_id", "=", projectId)
      .where("status", "=", "VERIFIED")
      .execute();
    set = new Set(rows.map((r) => r.domain));
    c.verified.set(projectId, set);
  }
  return set;
}

/**
 * THE sender guard (templates, campaigns, /v1/send, workflows): the From address's domain,
 * exactly and case-insensitively, must be VERIFIED for this project. A parent domain does not
 * cover its subdomains. Throws the spec's 403 naming the domain.
 */
export async function assertSenderAllowed(ctx: AppContext, projectId: string, fromAddress: string): Promise<{ domain: string }> {
  const address = bareAddress(fromAddress);
  if (!isValidEmail(address)) throw invalidField("from", "Invalid sender email address", "invalid_string", fromAddress);
  const domain = address.slice(address.lastIndexOf("@") + 1).toLowerCase();
  if (!(await verifiedDomains(ctx, projectId)).has(domain)) throw senderDomainNotVerified(domain);
  return { domain };
}

/** Whether `domain` is currently VERIFIED for the project (no throw). */
export async function isDomainVerified(ctx: AppContext, projectId: string, domain: string): Promise<boolean> {
  return (await verifiedDomains(ctx, projectId)).has(domain.toLowerCase());
}

// ---- hooks --------------------------------------------------------------------------------------

export async function domainCounts(ctx: AppContext, projectId: string) {
  const r = await ctx.db
    .selectFrom("domains")
    .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.sum<number>(eb.case().when("status", "=", "VERIFIED").then(1).else(0).end()).as("v")])
    .where("project_id", "=", projectId)
    .executeTakeFirstOrThrow();
  return { domains: Number(r.n), verifiedDomains: Number(r.v ?? 0) };
}

/**
 * Sender domains: DKIM keys, DNS verification, and the one sender guard every mail path uses.
 */
import type { Selectable } from "kysely";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import type { DomainsTable, DomainStatus } from "../../db/tables/senders";
import { conflict, invalidField, notFound, senderDomainNotVerified } from "../../http/errors";
import { isValidDomain, isValidEmail } from "../../net/email-address";
import { forgetPrivateKey, generateDkimKeyPair, generateEd25519KeyPair, newSelector } from "../../mail/dkim/dkim-keys";
import { forgetAllSigningKeys, forgetSigningKeys } from "../../mail/dkim/signing-keys";
import { invalidate, type TopicClear } from "../../jobs/peers";
import { createResolver } from "../../net/dns";
import { isSandbox } from "../../mail/outbox/sandbox";
import { bounceDomainFor } from "../../net/email-address";
import { checkRecords, checkSpfRecord, currentRecords, dmarcReportAddress, expectedRecords, serverRecords, type DnsRecord } from "./records";

export { getSigningKey, type SigningKey } from "../../mail/dkim/signing-keys";
export type { DnsRecord } from "./records";

export type DomainRow = Selectable<DomainsTable>;

// ---- per-instance caches (tests run several instances in one process) ----------------------------

export interface DomainCaches {
  /** projectId -> its VERIFIED domains (the sender guard's hot path). */
  verified: Map<string, Set<string>>;
  /** The server records as last checked by a domain verification (one set for every domain). */
  server: DnsRecord[] | null;
}
declare module "../../context" {
  interface Caches {
    domains: DomainCaches;
  }
}
const cachesOf = (ctx: AppContext): DomainCaches => ctx.services.caches.domains;

/**
 * Drops what is cached for a project's domains (after a status change, a delete or a reset, once it
 * committed), here and on every peer instance (topic "domains", src/jobs/peers.ts).
 */
export function invalidateDomainCaches(ctx: AppContext, projectId: string, domain?: string): void {
  invalidate(ctx, "domains", projectId, domain);
}

/** The "domains" cache topic's local clears: verified domains and DKIM signing keys. */
export const domainsTopic: TopicClear = {
  one(ctx, projectId, domain) {
    cachesOf(ctx).verified.delete(projectId);
    forgetSigningKeys(ctx, projectId, domain);
  },
  all(ctx) {
    cachesOf(ctx).verified.clear();
    forgetAllSigningKeys(ctx);
  },
};

// ---- view ---------------------------------------------------------------------------------------

export function parseRecords(raw: string): DnsRecord[] {
  try {
    const v = JSON.parse(raw);
    return Array.isArray(v) ? v : [];
  } catch {
    return [];
  }
}

/**
 * A domain as the API shows it. With `ctx`: its records as the current MAILSVC_HOSTNAME asks for them
 * (currentRecords) and the server records with the status of their last check.
 */
export function viewDomain(d: DomainRow, ctx?: AppContext) {
  const hostname = ctx?.config.hostname;
  return {
    id: d.id,
    domain: d.domain,
    projectId: d.project_id,
    verified: d.status === "VERIFIED",
    status: d.status,
    selector: d.dkim_selector,
    /** RFC 8463 second signature: its selector when on (signed with once its record verifies). */
    ed25519Selector: d.dkim_ed25519_selector ?? null,
    /** A DKIM key rotation in progress: the selector that takes over once its record verifies. */
    nextSelector: d.dkim_next_selector ?? null,
    bounceDomain: bounceDomainFor(d.domain),
    dmarcReportAddress: dmarcReportAddress(d.domain),
    records: hostname !== undefined ? currentRecords(d, hostname, parseRecords(d.records)) : parseRecords(d.records),
    ...(ctx && hostname !== undefined ? { serverRecords: checkedServerRecords(ctx, hostname) } : {}),
    verifiedAt: iso(d.verified_at),
    lastCheckedAt: iso(d.last_checked_at),
    createdAt: iso(d.created_at),
    updatedAt: iso(d.updated_at),
  };
}

/** serverRecords(hostname) with the statuses of the last check of the same records. */
function checkedServerRecords(ctx: AppContext, hostname: string): DnsRecord[] {
  const last = cachesOf(ctx).server ?? [];
  return serverRecords(hostname).map((rec) => last.find((p) => p.name === rec.name && p.value === rec.value) ?? rec);
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

export async function addDomain(ctx: AppContext, projectId: string, rawDomain: string, opts: { ed25519?: boolean } = {}): Promise<DomainRow> {
  const domain = normalizeDomain(rawDomain);
  const duplicate = () => conflict(`The domain ${domain} is already added to this project`, { domain });
  if (await findByName(ctx, projectId, domain)) throw duplicate();
  const keys = await generateDkimKeyPair();
  const ed = opts.ed25519 ? await generateEd25519KeyPair() : null;
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
    dkim_ed25519_selector: ed ? newSelector() : null,
    dkim_ed25519_private_key: ed?.privateKeyPem ?? null,
    dkim_ed25519_public_key: ed?.publicKeyB64 ?? null,
    dkim_next_selector: null,
    dkim_next_private_key: null,
    dkim_next_public_key: null,
    records: "[]",
    verified_at: null,
    last_checked_at: null,
    created_at: now,
    updated_at: now,
  };
  row.records = JSON.stringify(expectedRecords(row, ctx.config.hostname));
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
  const [result, server] = await Promise.all([
    checkRecords(resolver, row, ctx.config.hostname, parseRecords(row.records)),
    // The server's own records (SPF of the HELO name) are checked with every domain.
    Promise.all(serverRecords(ctx.config.hostname).map((rec) => checkSpfRecord(resolver, rec, ctx.config.hostname))),
  ]);
  cachesOf(ctx).server = server;
  const next = result.records.find((r) => r.rotation === "next");
  if (next?.status === "VERIFIED") return promoteNextKey(ctx, row, result.records);
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
  // Record statuses decide which keys sign (Ed25519 only once published): drop caches on any change.
  if (changed) invalidateDomainCaches(ctx, row.project_id, row.domain);
  if (status !== row.status) {
    ctx.log.info("domain status changed", { projectId: row.project_id, domain: row.domain, from: row.status, to: status });
  }
  return updated;
}

/**
 * The rotation's switch: the next key's record is published, so it signs from now on; the old key
 * is retired (its record may be removed). The domain stays VERIFIED: its signing key is published.
 */
async function promoteNextKey(ctx: AppContext, row: DomainRow, checked: DnsRecord[]): Promise<DomainRow> {
  const now = ctx.clock.now();
  const promoted = {
    ...row,
    dkim_selector: row.dkim_next_selector!,
    dkim_private_key: row.dkim_next_private_key!,
    dkim_public_key: row.dkim_next_public_key!,
    dkim_next_selector: null,
    dkim_next_private_key: null,
    dkim_next_public_key: null,
  };
  // Statuses carry over by name: the new key's record was just seen VERIFIED.
  const records = expectedRecords(promoted, ctx.config.hostname).map((rec) => {
    const seen = checked.find((c) => c.purpose === rec.purpose && c.name === rec.name);
    return seen ? { ...rec, status: seen.status, ...(seen.detail ? { detail: seen.detail } : {}) } : rec;
  });
  const updated = await ctx.db
    .updateTable("domains")
    .set({
      dkim_selector: promoted.dkim_selector,
      dkim_private_key: promoted.dkim_private_key,
      dkim_public_key: promoted.dkim_public_key,
      dkim_next_selector: null,
      dkim_next_private_key: null,
      dkim_next_public_key: null,
      status: "VERIFIED",
      verified_at: row.verified_at ?? now,
      records: JSON.stringify(records),
      last_checked_at: now,
      updated_at: now,
    })
    .where("id", "=", row.id)
    .where("dkim_next_selector", "=", row.dkim_next_selector)
    .returningAll()
    .executeTakeFirst();
  if (!updated) return getDomain(ctx, row.id);
  invalidateDomainCaches(ctx, row.project_id, row.domain);
  forgetPrivateKey(row.dkim_private_key);
  ctx.log.info("DKIM key rotated", { projectId: row.project_id, domain: row.domain, retired: row.dkim_selector, selector: promoted.dkim_selector });
  return updated;
}

/**
 * POST /domains/:id/rotate-dkim: a new RSA key at a new selector, published beside the current
 * one. The current key keeps signing until the new record verifies (GET /domains/:id/verify or the
 * background check), then the new one takes over and the old is retired. Calling it again during a
 * rotation replaces the pending key.
 */

/**
 * Writes new key columns of a domain and its records as those keys ask for them (a record already
 * listed keeps its last check).
 */
async function writeKeys(ctx: AppContext, row: DomainRow, keys: Partial<Pick<DomainRow, "dkim_next_selector" | "dkim_next_private_key" | "dkim_next_public_key" | "dkim_ed25519_selector" | "dkim_ed25519_private_key" | "dkim_ed25519_public_key">>): Promise<DomainRow> {
  const previous = parseRecords(row.records);
  const records = expectedRecords({ ...row, ...keys }, ctx.config.hostname).map((rec) => previous.find((p) => p.purpose === rec.purpose && p.name === rec.name) ?? rec);
  const updated = await ctx.db
    .updateTable("domains")
    .set({ ...keys, records: JSON.stringify(records), updated_at: ctx.clock.now() })
    .where("id", "=", row.id)
    .returningAll()
    .executeTakeFirst();
  if (!updated) throw notFound("Domain");
  return updated;
}
export async function rotateDkim(ctx: AppContext, row: DomainRow): Promise<DomainRow> {
  const keys = await generateDkimKeyPair();
  const next = { ...row, dkim_next_selector: newSelector(), dkim_next_private_key: keys.privateKeyPem, dkim_next_public_key: keys.publicKeyB64 };
  return writeKeys(ctx, row, { dkim_next_selector: next.dkim_next_selector, dkim_next_private_key: next.dkim_next_private_key, dkim_next_public_key: next.dkim_next_public_key });
}

/** PATCH /domains/:id { ed25519 }: turns the second (Ed25519) signature on (new key) or off. */
export async function setEd25519(ctx: AppContext, row: DomainRow, on: boolean): Promise<DomainRow> {
  if (on === !!row.dkim_ed25519_selector) return row;
  const keys = on ? await generateEd25519KeyPair() : null;
  const next = {
    ...row,
    dkim_ed25519_selector: keys ? newSelector() : null,
    dkim_ed25519_private_key: keys?.privateKeyPem ?? null,
    dkim_ed25519_public_key: keys?.publicKeyB64 ?? null,
  };
  const updated = await writeKeys(ctx, row, { dkim_ed25519_selector: next.dkim_ed25519_selector, dkim_ed25519_private_key: next.dkim_ed25519_private_key, dkim_ed25519_public_key: next.dkim_ed25519_public_key });
  invalidateDomainCaches(ctx, row.project_id, row.domain);
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
 * cover its subdomains. Throws the spec's 403 naming the domain. A sandbox project (whose mail is
 * captured, never sent) may use any sender domain.
 */
export async function assertSenderAllowed(ctx: AppContext, projectId: string, fromAddress: string): Promise<{ domain: string }> {
  const address = bareAddress(fromAddress);
  if (!isValidEmail(address)) throw invalidField("from", "Invalid sender email address", "invalid_string", fromAddress);
  const domain = address.slice(address.lastIndexOf("@") + 1).toLowerCase();
  if (!(await verifiedDomains(ctx, projectId)).has(domain) && !(await isSandbox(ctx, projectId))) throw senderDomainNotVerified(domain);
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

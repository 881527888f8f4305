import type { EngagementCounts } from "../../db/tables/analytics";
import { insertEmailsRaw } from "../../mail/outbox/enqueue";
// Data access of campaigns (Kysely; Postgres-compatible SQL). The fan-out's batch writes live
// here too: one transaction per batch writes the email rows and moves the keyset checkpoint.
import type { Q } from "../../db/raw";
import { sql, type CompiledQuery, type Expression, type Kysely, type Selectable, type SqlBool, type Transaction } from "kysely";
import { messageIdFor } from "../../mail/message/build";
import { SUPPRESSED_REPLY } from "../../mail/outbox/suppressions";
import { insertEventRaw } from "../../audience/raw";
import type { DB } from "../../db";
import type { CampaignsTable, CampaignStatus } from "../../db/tables/campaigns";

export type Db = Kysely<DB> | Transaction<DB>;
export type CampaignRow = Selectable<CampaignsTable>;

export const IN_FLIGHT = ["PENDING", "SENDING", "DEFERRED"] as const;

export function findCampaign(db: Db, projectId: string, id: string) {
  return db.selectFrom("campaigns").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
}

export function campaignById(db: Db, id: string) {
  return db.selectFrom("campaigns").selectAll().where("id", "=", id).executeTakeFirst();
}

export async function insertCampaign(db: Db, row: CampaignRow): Promise<void> {
  await db.insertInto("campaigns").values(row).execute();
}

/** Every write of a campaign row bumps its version (the stale check of beginSending). */
export function updateCampaignRow(db: Db, projectId: string, id: string, set: Partial<CampaignRow>, onlyIn?: readonly CampaignStatus[]) {
  let q = db.updateTable("campaigns").set({ ...set, version: sql`version + 1` }).where("project_id", "=", projectId).where("id", "=", id);
  if (onlyIn) q = q.where("status", "in", onlyIn);
  return q.returningAll().executeTakeFirst();
}

export async function deleteCampaignRow(db: Db, projectId: string, id: string, notIn: readonly CampaignStatus[]): Promise<boolean> {
  const r = await db.deleteFrom("campaigns").where("project_id", "=", projectId).where("id", "=", id).where("status", "not in", notIn).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export interface ListFilter {
  status?: CampaignStatus;
  search?: string;
  sort: "name" | "createdAt" | "updatedAt";
  dir: "asc" | "desc";
  limit: number;
  offset: number;
}

export async function listCampaignRows(db: Db, projectId: string, f: ListFilter) {
  let base = db.selectFrom("campaigns").where("project_id", "=", projectId);
  if (f.status) base = base.where("status", "=", f.status);
  const search = f.search?.trim();
  if (search) {
    const like = `%${search.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)}%`;
    base = base.where((eb) =>
      eb.or([
        sql<boolean>`lower(name) LIKE ${like} ESCAPE '\\'`,
        sql<boolean>`lower(subject) LIKE ${like} ESCAPE '\\'`,
        sql<boolean>`lower(from_email) LIKE ${like} ESCAPE '\\'`,
      ]),
    );
  }
  const orderCol = f.sort === "name" ? sql`lower(name)` : sql.ref(f.sort === "updatedAt" ? "updated_at" : "created_at");
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy(orderCol, f.dir).orderBy("id", f.dir).limit(f.limit).offset(f.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export interface Counters extends EngagementCounts {
  unsubscribed: number;
}

export const ZERO: Counters = { sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0, unsubscribed: 0 };

/**
 * Counters of large campaigns are remembered for a second: a dashboard polling a 100k-recipient
 * campaign should not aggregate 100k rows per request. Small campaigns are always counted fresh.
 */
const LARGE = 10_000;
const countersCache = new Map<string, { at: number; value: Counters }>();

/** Unique-per-email counters of campaigns, from their email rows (emails_campaign index). */
export async function countersOf(db: Db, campaigns: Pick<CampaignRow, "id" | "project_id" | "sent_at" | "total_recipients">[]): Promise<Map<string, Counters>> {
  const now = Date.now();
  const out = new Map<string, Counters>();
  const todo = campaigns.filter((c) => {
    const hit = c.total_recipients >= LARGE ? countersCache.get(c.id) : undefined;
    if (hit && now - hit.at < 1000) out.set(c.id, hit.value);
    return !(hit && now - hit.at < 1000);
  });
  for (const [id, value] of await countCampaigns(db, todo)) {
    out.set(id, value);
    if (todo.find((c) => c.id === id)!.total_recipients >= LARGE) countersCache.set(id, { at: now, value });
  }
  if (countersCache.size > 1000) countersCache.clear();
  return out;
}

async function countCampaigns(db: Db, campaigns: Pick<CampaignRow, "id" | "project_id" | "sent_at">[]): Promise<Map<string, Counters>> {
  const out = new Map<string, Counters>();
  const started = campaigns.filter((c) => c.sent_at !== null);
  if (!started.length) return out;
  const ids = started.map((c) => c.id);
  const count = (col: "sent_at" | "delivered_at" | "opened_at" | "clicked_at" | "bounced_at" | "complained_at") =>
    sql<number>`SUM(CASE WHEN ${sql.ref(col)} IS NOT NULL THEN 1 ELSE 0 END)`;
  const rows = await db
    .selectFrom("emails")
    .select([
      "campaign_id",
      count("sent_at").as("sent"),
      count("delivered_at").as("delivered"),
      count("opened_at").as("opened"),
      count("clicked_at").as("clicked"),
      count("bounced_at").as("bounced"),
      count("complained_at").as("complained"),
    ])
    .where("campaign_id", "in", ids)
    .groupBy("campaign_id")
    .execute();
  for (const r of rows) {
    out.set(r.campaign_id!, {
      sent: Number(r.sent ?? 0),
      delivered: Number(r.delivered ?? 0),
      opened: Number(r.opened ?? 0),
      clicked: Number(r.clicked ?? 0),
      bounced: Number(r.bounced ?? 0),
      complained: Number(r.complained ?? 0),
      unsubscribed: 0,
    });
  }
  // Unsubscribes: contacts of the campaign who unsubscribed after their email left (a bounce's own
  // unsubscribe is the bounce, not counted). Starts from the few unsubscribe events of the project.
  for (const c of started) {
    const r = await db
      .selectFrom("events as ev")
      .innerJoin("emails as e", (j) => j.onRef("e.contact_id", "=", "ev.contact_id").on("e.campaign_id", "=", c.id))
      .select((eb) => eb.fn.count<number>("ev.contact_id").distinct().as("n"))
      .where("ev.project_id", "=", c.project_id)
      .where("ev.name", "=", "contact.unsubscribed")
      .where("e.sent_at", "is not", null)
      .where("e.bounced_at", "is", null)
      .whereRef("ev.created_at", ">=", "e.sent_at")
      .executeTakeFirst();
    const n = Number(r?.n ?? 0);
    if (n) out.set(c.id, { ...(out.get(c.id) ?? ZERO), unsubscribed: n });
  }
  return out;
}

export async function countCampaignEmails(db: Db, campaignId: string): Promise<number> {
  const r = await db.selectFrom("emails").select((eb) => eb.fn.countAll<number>().as("n")).where("campaign_id", "=", campaignId).executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Contacts of the project matching `where` (over contacts aliased `c`). */
export async function countAudience(db: Db, projectId: string, where: Expression<SqlBool>): Promise<number> {
  const r = await db
    .selectFrom("contacts as c")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("c.project_id", "=", projectId)
    .where(where)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Whether the audience has at least one contact (cheaper than a count on a large audience). */
export async function audienceHasAny(db: Db, projectId: string, where: Expression<SqlBool>): Promise<boolean> {
  const r = await db.selectFrom("contacts as c").select("c.id").where("c.project_id", "=", projectId).where(where).limit(1).executeTakeFirst();
  return !!r;
}

export interface AudienceRow {
  id: string;
  email: string;
  data: string;
  suppressed: string | null;
}

/** The next id-ordered batch of the audience after `afterId`, with each address's suppression. */
export function audienceBatch(db: Db, projectId: string, where: Expression<SqlBool>, afterId: string | null, limit: number): Promise<AudienceRow[]> {
  return audienceBatchQuery(db, projectId, where, afterId, limit).execute();
}

export function audienceBatchQuery(db: Db, projectId: string, where: Expression<SqlBool>, afterId: string | null, limit: number) {
  let q = db
    .selectFrom("contacts as c")
    .leftJoin("suppressions as s", (j) => j.onRef("s.project_id", "=", "c.project_id").onRef("s.email", "=", "c.email"))
    .select(["c.id", "c.email", "c.data", "s.email as suppressed"])
    .where("c.project_id", "=", projectId)
    .where(where);
  if (afterId) q = q.where("c.id", ">", afterId);
  return q.orderBy("c.id").limit(limit);
}

export type BatchStep = { stop: true } | { done: true; total: number } | { n: number; lastId: string };

export interface BatchInput {
  campaignId: string;
  projectId: string;
  contentId: string;
  templateId: string | null;
  /** The checkpoint this batch starts from (the job is the only writer of fanout_last_id). */
  afterId: string | null;
  /** audienceBatchQuery(...).compile() for `afterId`. */
  select: CompiledQuery;
  now: number;
  hostname: string;
}

/**
 * One fan-out batch in ONE transaction: read the next contacts, write their email rows, move the
 * checkpoint. Raw bun:sqlite on the benchmarked fan-out hot path (scripts/bench/campaign.ts: 100k
 * recipients in under 5 s); its Kysely sibling is audienceBatch + insertEmails (src/mail/outbox/enqueue.ts).
 * Run inside a transaction (`q` and `trx` on it).
 */
export async function writeFanoutBatchRaw(q: Q, trx: Kysely<any>, b: BatchInput, varsOf: (r: AudienceRow) => string): Promise<BatchStep> {
  // On PostgreSQL the campaign row is locked: a second run of this job (an expired lease on another
  // instance) waits here, then sees the moved checkpoint and stops.
  const c = await q.get<{ status: string; fanout_done: number; fanout_last_id: string | null }>(
    q.engine === "postgres" ? "SELECT status, fanout_done, fanout_last_id FROM campaigns WHERE id = ? FOR UPDATE" : "SELECT status, fanout_done, fanout_last_id FROM campaigns WHERE id = ?",
    [b.campaignId],
  );
  if (!c || c.status !== "SENDING" || c.fanout_done || c.fanout_last_id !== b.afterId) return { stop: true };
  const rows = (await trx.executeQuery<AudienceRow>(b.select)).rows;
  if (!rows.length) {
    const total = (await q.get<{ n: number }>("SELECT count(*) AS n FROM emails WHERE campaign_id = ?", [b.campaignId]))!.n;
    await q.run("UPDATE campaigns SET fanout_done = 1, total_recipients = ?, updated_at = ? WHERE id = ?", [total, b.now, b.campaignId]);
    return { done: true, total };
  }
  // The one email insert, set-based (multi-row); a suppressed recipient is on the contact's trail too (email.suppressed).
  await insertEmailsRaw(
    q,
    b.now,
    b.hostname,
    rows.map((r) => ({
      projectId: b.projectId,
      contentId: b.contentId,
      contactId: r.id,
      toEmail: r.email,
      varsJson: varsOf(r),
      sourceType: "CAMPAIGN" as const,
      campaignId: b.campaignId,
      templateId: b.templateId,
      status: r.suppressed !== null ? ("SUPPRESSED" as const) : ("PENDING" as const),
      priority: 1,
    })),
  );
  const lastId = rows[rows.length - 1]!.id;
  await q.run("UPDATE campaigns SET fanout_last_id = ? WHERE id = ?", [lastId, b.campaignId]);
  return { n: rows.length, lastId };
}

/** SENT once the fan-out is done and none of its emails is PENDING, SENDING or DEFERRED. */
export async function markSentIfDone(db: Db, campaignId: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable("campaigns")
    .set({ status: "SENT", completed_at: now, updated_at: now, version: sql`version + 1` })
    .where("id", "=", campaignId)
    .where("status", "=", "SENDING")
    .where("fanout_done", "=", 1)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb.selectFrom("emails").select("emails.id").where("emails.campaign_id", "=", campaignId).where("emails.status", "in", IN_FLIGHT),
        ),
      ),
    )
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export function sendingCampaigns(db: Db) {
  return db.selectFrom("campaigns").select(["id", "fanout_done"]).where("status", "=", "SENDING").execute();
}

export function scheduledCampaigns(db: Db, projectId: string, limit: number) {
  return db
    .selectFrom("campaigns")
    .select(["id", "name", "subject", "scheduled_for"])
    .where("project_id", "=", projectId)
    .where("status", "=", "SCHEDULED")
    .orderBy("scheduled_for")
    .limit(limit)
    .execute();
}

export function campaignsUsingTemplate(db: Db, projectId: string, templateId: string) {
  return db.selectFrom("campaigns").select(["id", "name", "status"]).where("project_id", "=", projectId).where("template_id", "=", templateId).execute();
}

/** SCHEDULED or SENDING campaigns of the project: their audience segment and condition (segment delete checks them). */
export function activeCampaignAudiences(db: Db, projectId: string) {
  return db
    .selectFrom("campaigns")
    .select(["id", "name", "status", "audience_type", "segment_id", "audience_condition"])
    .where("project_id", "=", projectId)
    .where("status", "in", ["SCHEDULED", "SENDING"])
    .execute();
}

export function campaignsWithCondition(db: Db, projectId: string) {
  // The condition counts only where it is the audience (a segmentId or condition kept from another audienceType is not used).
  return db
    .selectFrom("campaigns")
    .select(["id", "name", "status", "audience_condition"])
    .where("project_id", "=", projectId)
    .where("audience_type", "=", "FILTERED")
    .where("audience_condition", "is not", null)
    .execute();
}

export async function deleteProjectCampaigns(db: Db, projectId: string): Promise<void> {
  await db.deleteFrom("campaigns").where("project_id", "=", projectId).execute();
}

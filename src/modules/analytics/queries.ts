import { dialect } from "../../db/dialect";
/**
 * Reads of the rollups of migration 011 (event_rollup_hourly/daily, event_name_totals,
 * contact_field_stats). Windows are answered exactly: whole days from the daily table, whole hours
 * from the hourly one, only the partial hours at the two edges from the events index, plus the
 * events the rollup consumer has not folded in yet (after its cursor: normally none), all read in
 * one transaction so the cursor and the rollups agree.
 */
import { sql, type Kysely, type Transaction } from "kysely";
import type { DB } from "../../db";
import { idAtTime } from "../../db/ids";
import { ROLLUP_CONSUMER } from "./rollup-consumer";
import { DAY, HOUR } from "./window";

type Counts = Map<string, number>;
type Db = Kysely<DB> | Transaction<DB>;

/** Runs `fn` with the consumer's cursor, in one read transaction. */
function withCursor<T>(db: Kysely<DB>, fn: (trx: Transaction<DB>, cursor: number) => Promise<T>): Promise<T> {
  return db.transaction().execute(async (trx) => {
    const c = await trx.selectFrom("event_cursors").select("last_seq").where("consumer", "=", ROLLUP_CONSUMER).executeTakeFirst();
    return fn(trx, Number(c?.last_seq ?? 0));
  });
}

/**
 * The project's events after the cursor in [a, b) (the consumer's backlog, normally empty). Read by
 * seq alone (the rowid range of the newest rows) and filtered here: with project_id in the WHERE the
 * planner may walk the project's whole (project_id, id) index instead.
 */
async function tail(db: Db, projectId: string, cursor: number, a: number, b: number, names: readonly string[] | undefined) {
  const rows = await db.selectFrom("events").select(["project_id", "name", "created_at"]).where("seq", ">", cursor).execute();
  const wanted = names ? new Set(names) : null;
  return rows.filter((r) => r.project_id === projectId && r.created_at >= a && r.created_at < b && (!wanted || wanted.has(r.name)));
}

const add = (acc: Counts, name: string, n: number) => acc.set(name, (acc.get(name) ?? 0) + Number(n));

/** Events per name in [a, b) read from the events index (only ever for under two hours of a window). */
async function rawCounts(db: Db, projectId: string, a: number, b: number, names: readonly string[] | undefined, acc: Counts) {
  if (a >= b) return;
  let q = db
    .selectFrom("events")
    .select(["name", (eb) => eb.fn.countAll<number>().as("n")])
    .where("project_id", "=", projectId)
    .where("id", ">=", idAtTime(a))
    .where("id", "<", idAtTime(b));
  if (names) q = q.where("name", "in", names);
  for (const r of await q.groupBy("name").execute()) add(acc, r.name, r.n);
}

/** Rollup rows per name over whole buckets [a, b) (a and b aligned to the table's bucket). */
async function rollupCounts(
  db: Db,
  table: "event_rollup_hourly" | "event_rollup_daily",
  projectId: string,
  a: number,
  b: number,
  names: readonly string[] | undefined,
  acc: Counts,
) {
  if (a >= b) return;
  let q = db
    .selectFrom(table)
    .select(["name", (eb) => eb.fn.sum<number>("count").as("n")])
    .where("project_id", "=", projectId)
    .where("bucket", ">=", a)
    .where("bucket", "<", b);
  if (names) q = q.where("name", "in", names);
  for (const r of await q.groupBy("name").execute()) add(acc, r.name, r.n);
}

const floorTo = (ms: number, unit: number) => Math.floor(ms / unit) * unit;
const ceilTo = (ms: number, unit: number) => Math.ceil(ms / unit) * unit;

/** Exact event counts per name in [a, b) (epoch ms), optionally only for `names`. */
export async function countsByName(db: Kysely<DB>, projectId: string, a: number, b: number, names?: readonly string[]): Promise<Counts> {
  const acc: Counts = new Map();
  if ((names && !names.length) || a >= b) return acc;
  const h1 = ceilTo(a, HOUR);
  const h2 = floorTo(b, HOUR);
  if (h1 >= h2) {
    await rawCounts(db, projectId, a, b, names, acc);
    return acc;
  }
  const d1 = ceilTo(h1, DAY);
  const d2 = floorTo(h2, DAY);
  await rawCounts(db, projectId, a, h1, names, acc);
  await rawCounts(db, projectId, h2, b, names, acc);
  return withCursor(db, async (trx, cursor) => {
    if (d1 < d2) {
      await rollupCounts(trx, "event_rollup_hourly", projectId, h1, d1, names, acc);
      await rollupCounts(trx, "event_rollup_daily", projectId, d1, d2, names, acc);
      await rollupCounts(trx, "event_rollup_hourly", projectId, d2, h2, names, acc);
    } else {
      await rollupCounts(trx, "event_rollup_hourly", projectId, h1, h2, names, acc);
    }
    for (const r of await tail(trx, projectId, cursor, h1, h2, names)) add(acc, r.name, 1);
    return acc;
  });
}

/** Per bucket and name over whole buckets [a, b) of the hourly or daily rollup (with the backlog). */
export function bucketCounts(db: Kysely<DB>, projectId: string, interval: "hour" | "day", a: number, b: number, names?: readonly string[]) {
  const unit = interval === "hour" ? HOUR : DAY;
  return withCursor(db, async (trx, cursor) => {
    let q = trx
      .selectFrom(interval === "hour" ? "event_rollup_hourly" : "event_rollup_daily")
      .select(["bucket", "name", "count"])
      .where("project_id", "=", projectId)
      .where("bucket", ">=", a)
      .where("bucket", "<", b)
      .where("count", ">", 0);
    if (names) q = q.where("name", "in", names);
    const rows = (await q.execute()).map((r) => ({ bucket: Number(r.bucket), name: r.name, count: Number(r.count) }));
    for (const r of await tail(trx, projectId, cursor, a, b, names)) rows.push({ bucket: floorTo(r.created_at, unit), name: r.name, count: 1 });
    return rows;
  });
}

/** Events per whole UTC day in [fromDay, toDay) (with the backlog). */
export function dailyTotals(db: Kysely<DB>, projectId: string, fromDay: number, toDay: number): Promise<Map<number, number>> {
  return withCursor(db, async (trx, cursor) => {
    const out = new Map<number, number>();
    const rows = await trx
      .selectFrom("event_rollup_daily")
      .select(["bucket", (eb) => eb.fn.sum<number>("count").as("n")])
      .where("project_id", "=", projectId)
      .where("bucket", ">=", fromDay)
      .where("bucket", "<", toDay)
      .groupBy("bucket")
      .execute();
    for (const r of rows) out.set(Number(r.bucket), Number(r.n));
    for (const r of await tail(trx, projectId, cursor, fromDay, toDay, undefined)) {
      const d = floorTo(r.created_at, DAY);
      out.set(d, (out.get(d) ?? 0) + 1);
    }
    return out;
  });
}

/** Every event name the project has now, with its count and the time of its latest event. */
export function nameTotals(db: Kysely<DB>, projectId: string) {
  return withCursor(db, async (trx, cursor) => {
    const rows = await trx.selectFrom("event_name_totals").select(["name", "count", "last_at"]).where("project_id", "=", projectId).execute();
    const byName = new Map(rows.map((r) => [r.name, { name: r.name, count: Number(r.count), last_at: Number(r.last_at) }]));
    const backlog = new Map<string, { name: string; n: number; last: number }>();
    for (const r of await tail(trx, projectId, cursor, 0, Number.MAX_SAFE_INTEGER, undefined)) {
      const b = backlog.get(r.name);
      if (b) {
        b.n++;
        b.last = Math.max(b.last, r.created_at);
      } else backlog.set(r.name, { name: r.name, n: 1, last: r.created_at });
    }
    for (const r of backlog.values()) {
      const e = byName.get(r.name);
      if (e) {
        e.count += Number(r.n);
        e.last_at = Math.max(e.last_at, Number(r.last));
      } else byName.set(r.name, { name: r.name, count: Number(r.n), last_at: Number(r.last) });
    }
    return [...byName.values()].filter((r) => r.count > 0).sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
  });
}

export async function eventTotal(db: Kysely<DB>, projectId: string): Promise<number> {
  return (await nameTotals(db, projectId)).reduce((n, r) => n + r.count, 0);
}

/** Contacts per custom data key and kind (json type, or 'date'). */
export function fieldStats(db: Kysely<DB>, projectId: string) {
  return db.selectFrom("contact_field_stats").select(["key", "kind", "n"]).where("project_id", "=", projectId).where("n", ">", 0).execute();
}

export async function deleteProjectRollups(db: Kysely<DB>, projectId: string) {
  await db.transaction().execute(async (trx) => {
    for (const t of ["event_rollup_hourly", "event_rollup_daily", "event_name_totals", "contact_field_stats", "campaign_rollup"] as const) {
      await trx.deleteFrom(t).where("project_id", "=", projectId).execute();
    }
  });
}

// ---- campaigns (table of the campaigns module; read only when it exists) ----------------------

const campaignsTableCache = new WeakMap<Kysely<DB>, boolean>();

/** Whether the campaigns table exists in this database (it lands with the campaigns module). */
export async function hasCampaigns(db: Kysely<DB>): Promise<boolean> {
  const known = campaignsTableCache.get(db);
  if (known) return true;
  const r = await dialect().tableExistsSql("campaigns").execute(db);
  const has = Number(r.rows[0]?.n ?? 0) > 0;
  if (has) campaignsTableCache.set(db, true);
  return has;
}

export interface CampaignCountersRow {
  id: string;
  name: string;
  subject: string;
  status: string;
  sent_count: number;
  opened_count: number;
  clicked_count: number;
}

const CAMPAIGN_ORDER = { sent: sql.ref("r.sent"), opens: sql.ref("r.opened"), clicks: sql.ref("r.clicked") } as const;

/**
 * Campaigns sent in [from, to], ordered by a counter of campaign_rollup (kept by the rollup consumer
 * from their emails' events). The campaigns table belongs to the campaigns module.
 */
export async function topCampaigns(db: Kysely<DB>, projectId: string, from: number, to: number, metric: keyof typeof CAMPAIGN_ORDER, limit: number) {
  const r = await sql<CampaignCountersRow>`
    SELECT c.id, c.name, c.subject, c.status,
      COALESCE(r.sent, 0) AS sent_count, COALESCE(r.opened, 0) AS opened_count, COALESCE(r.clicked, 0) AS clicked_count
    FROM campaigns c LEFT JOIN campaign_rollup r ON r.project_id = c.project_id AND r.campaign_id = c.id
    WHERE c.project_id = ${projectId} AND c.sent_at IS NOT NULL AND c.sent_at >= ${from} AND c.sent_at <= ${to}
    ORDER BY COALESCE(${CAMPAIGN_ORDER[metric]}, 0) DESC, c.sent_at DESC, c.id DESC LIMIT ${limit}`.execute(db);
  return r.rows;
}

/** Campaigns created in [from, to]: count per status, and the sums of their open/click rates over those that sent. */
export async function campaignStatusCounts(db: Kysely<DB>, projectId: string, from: number, to: number) {
  const r = await sql<{ status: string; n: number; open_rate_sum: number; click_rate_sum: number; with_sends: number }>`
    SELECT c.status, count(*) AS n,
      sum(CASE WHEN r.sent > 0 THEN r.opened * 100.0 / r.sent ELSE 0 END) AS open_rate_sum,
      sum(CASE WHEN r.sent > 0 THEN r.clicked * 100.0 / r.sent ELSE 0 END) AS click_rate_sum,
      sum(CASE WHEN r.sent > 0 THEN 1 ELSE 0 END) AS with_sends
    FROM campaigns c LEFT JOIN campaign_rollup r ON r.project_id = c.project_id AND r.campaign_id = c.id
    WHERE c.project_id = ${projectId} AND c.created_at >= ${from} AND c.created_at <= ${to}
    GROUP BY c.status`.execute(db);
  return r.rows;
}

/** A campaign's counters (the campaigns module may read them instead of counting its emails). */
export function campaignCounters(db: Kysely<DB>, projectId: string, campaignIds: string[]) {
  if (!campaignIds.length) return Promise.resolve([]);
  return db.selectFrom("campaign_rollup").selectAll().where("project_id", "=", projectId).where("campaign_id", "in", campaignIds).execute();
}

import type { Q } from "../../db/raw";
import { dialect } from "../../db/dialect";
/** SQL of the contacts endpoints (reads and the few set-based writes). */
import { sql, type RawBuilder } from "kysely";
import type { AppContext } from "../../context";
import type { ContactRow } from "../../audience/contacts";
import { jsonPath } from "../../audience/data-rules";

export type ContactSort = "createdAt" | "email";
export type SortDir = "asc" | "desc";

export interface ListFilter {
  projectId: string;
  /** Lower-cased substring of the email. */
  search?: string;
  subscribed?: boolean;
}

export interface ListPageQuery extends ListFilter {
  sort: ContactSort;
  dir: SortDir;
  limit: number;
  after: { v: string | number | null; id: string } | null;
}

/** One page (limit + 1 rows) in the requested order; email is unique per project, so it orders alone. */
export async function selectContactPage(ctx: AppContext, q: ListPageQuery): Promise<ContactRow[]> {
  let query = ctx.db.selectFrom("contacts").selectAll().where("project_id", "=", q.projectId);
  if (q.search) query = query.where(dialect().contains("email", q.search));
  if (q.subscribed !== undefined) query = query.where("subscribed", "=", q.subscribed ? 1 : 0);
  const cmp = q.dir === "asc" ? ">" : "<";
  if (q.sort === "email") {
    if (q.after) query = query.where("email", cmp, String(q.after.v));
    return query.orderBy("email", q.dir).limit(q.limit + 1).execute();
  }
  if (q.after) query = query.where(sql<boolean>`(created_at, id) ${sql.raw(cmp)} (${Number(q.after.v)}, ${q.after.id})`);
  return query.orderBy("created_at", q.dir).orderBy("id", q.dir).limit(q.limit + 1).execute();
}

/**
 * Search matches (id and sort keys), at most `cap` + 1, from ONE index-only scan of the email
 * index. When a term is rare (the common case for a search box) this single scan yields the exact
 * total and every candidate for the page, instead of a page scan plus a count scan.
 */
export async function searchMatches(ctx: AppContext, f: ListFilter & { search: string }, cap: number) {
  const sub = f.subscribed === undefined ? sql`` : sql` AND subscribed = ${f.subscribed ? 1 : 0}`;
  const r = await sql<{ id: string; email: string; created_at: number }>`
    SELECT id, email, created_at FROM contacts ${dialect().indexedBy("contacts_project_email")}
    WHERE project_id = ${f.projectId} AND ${dialect().contains("email", f.search)}${sub}
    LIMIT ${cap + 1}`.execute(ctx.db);
  return r.rows;
}

export async function selectContactsByIds(ctx: AppContext, projectId: string, ids: string[]) {
  if (!ids.length) return [];
  return ctx.db.selectFrom("contacts").selectAll().where("project_id", "=", projectId).where("id", "in", ids).execute();
}

/** The filtered total: O(1) from the counters unless a search needs an (index-only) scan. */
export async function countContacts(ctx: AppContext, f: ListFilter): Promise<number> {
  if (!f.search) {
    const c = await ctx.db.selectFrom("contact_counts").select(["total", "subscribed"]).where("project_id", "=", f.projectId).executeTakeFirst();
    if (!c) return 0;
    if (f.subscribed === undefined) return c.total;
    return f.subscribed ? c.subscribed : c.total - c.subscribed;
  }
  let query = ctx.db
    .selectFrom("contacts")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("project_id", "=", f.projectId)
    .where(dialect().contains("email", f.search));
  if (f.subscribed !== undefined) query = query.where("subscribed", "=", f.subscribed ? 1 : 0);
  const r = await query.executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function contactCount(ctx: AppContext, projectId: string): Promise<number> {
  return countContacts(ctx, { projectId });
}

export function selectContact(ctx: AppContext, projectId: string, id: string) {
  return ctx.db.selectFrom("contacts").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
}

export function selectContactByEmail(ctx: AppContext, projectId: string, email: string) {
  return ctx.db.selectFrom("contacts").selectAll().where("project_id", "=", projectId).where("email", "=", email).executeTakeFirst();
}

export async function selectByEmails(ctx: AppContext, projectId: string, emails: string[]) {
  if (!emails.length) return [];
  return ctx.db
    .selectFrom("contacts")
    .select(["id", "email", "subscribed"])
    .where("project_id", "=", projectId)
    .where("email", "in", emails)
    .execute();
}

/** Contacts per scan chunk: bounded memory, and other requests run between chunks. */
const SCAN_CHUNK = 20_000;
/** Distinct values tracked by a values scan (beyond it, new values are not counted). */
const MAX_DISTINCT_VALUES = 100_000;

const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

/**
 * Walks the project's contacts in chunks of the (project_id, created_at, id) index and runs
 * `perChunk` on each chunk's range, so a scan of a million contacts never holds the connection
 * (or builds one huge sorter) for seconds.
 */
async function scanChunks(ctx: AppContext, projectId: string, perChunk: (range: RawBuilder<unknown>) => Promise<void>) {
  let after: { c: number; id: string } | null = null;
  for (;;) {
    const from: RawBuilder<unknown> = after ? sql`AND (created_at, id) > (${after.c}, ${after.id})` : sql``;
    const end: { rows: { c: number; id: string }[] } = await sql<{ c: number; id: string }>`
      SELECT created_at AS c, id FROM contacts WHERE project_id = ${projectId} ${from}
      ORDER BY created_at, id LIMIT 1 OFFSET ${SCAN_CHUNK - 1}`.execute(ctx.db);
    const last: { c: number; id: string } | undefined = end.rows[0];
    // Qualified: the chunk's contacts are aliased `c` (json_each has an `id` column too).
    const range = sql`c.project_id = ${projectId}
      ${after ? sql`AND (c.created_at, c.id) > (${after.c}, ${after.id})` : sql``}
      ${last ? sql`AND (c.created_at, c.id) <= (${last.c}, ${last.id})` : sql``}`;
    await perChunk(range);
    if (!last) return;
    after = last;
    await yieldToLoop();
  }
}

/** Distinct values of one data key with their counts, most frequent first (values as JSON text). */
export async function fieldValues(ctx: AppContext, projectId: string, key: string, limit: number) {
  const counts = new Map<string, number>();
  await scanChunks(ctx, projectId, async (range) => {
    const r = await sql<{ v: string; n: number }>`
      SELECT ${dialect().jsonRawValue("c.data", key)} AS v, count(*) AS n FROM contacts c
      WHERE ${range} AND ${dialect().jsonHasKey("c.data", key)}
      GROUP BY v`.execute(ctx.db);
    for (const row of r.rows) {
      const prev = counts.get(row.v);
      if (prev !== undefined) counts.set(row.v, prev + Number(row.n));
      else if (counts.size < MAX_DISTINCT_VALUES) counts.set(row.v, Number(row.n));
    }
  });
  return [...counts]
    .map(([v, n]) => ({ v, n }))
    .sort((a, b) => b.n - a.n || (a.v < b.v ? -1 : a.v > b.v ? 1 : 0))
    .slice(0, limit);
}

/**
 * Removes one data key from every contact of the project that has it. Returns how many changed and,
 * with `ids` (only when tracked segments must follow: a million ids is a lot of memory), which.
 */
export async function deleteField(ctx: AppContext, projectId: string, key: string, now: number, opts: { ids: boolean }): Promise<{ changed: number; ids: string[] }> {
  const update = sql`UPDATE contacts SET data = ${dialect().jsonRemoveKey("data", key)}, updated_at = ${now}
    WHERE project_id = ${projectId} AND ${dialect().jsonHasKey("data", key)}`;
  if (!opts.ids) return { changed: Number((await update.execute(ctx.db)).numAffectedRows ?? 0), ids: [] };
  const rows = (await sql<{ id: string }>`${update} RETURNING id`.execute(ctx.db)).rows;
  return { changed: rows.length, ids: rows.map((r) => r.id) };
}

/** The uploaded file of a finished import goes, in the transaction of its last chunk. */
export async function deleteImportFile(q: Q, jobId: string): Promise<void> {
  await q.run("DELETE FROM contact_imports WHERE job_id = ?", [jobId]);
}

/**
 * Stored membership of tracked segments and their entry/exit events.
 *
 * A tracked DYNAMIC segment keeps in segment_members the contacts it matched when last evaluated.
 * Three things move it, each diffing live matches against the stored rows inside ONE transaction
 * (so two of them never both see the same change) and recording `segment.<slug>.entry|exit` events
 * in that transaction: POST /segments/:id/compute and the sweep (whole segment), and contact writes
 * (reevaluateContacts: only the written contacts, every tracked segment of the project in one query).
 */
import { atomic } from "../../db/raw";
import { sql, type Insertable, type Transaction } from "kysely";
import type { AppContext } from "../../context";
import { invalidate, type TopicClear } from "../../jobs/peers";
import type { DB } from "../../db";
import type { SegmentsTable } from "../../db/tables/segments";
import { compileFrag, fragToRaw, parseStoredCondition, resolveSegments, type ConditionTree, type SegmentDef } from "../conditions";
import { q } from "../../db/frag";
import { notFound } from "../../http/errors";
import { newEventId, notifyEvents, type RecordedEvent } from "../events";
import { liveCount, segmentMemberFrag } from "./members";
import type { TrackedSegment } from "./tracked";
export { liveCount };
import { followPlan, type FollowPlan } from "./follow";
import { entryEvent, exitEvent, reevaluateRaw } from "./membership-raw";
import { scheduleRecount } from "./recount";

export type { TrackedSegment } from "./tracked";


// ---- the project's tracked DYNAMIC segments (read on every contact write) ------------------------------

declare module "../../context" {
  interface Caches {
    /** projectId -> its tracked DYNAMIC segments' follow plan (forgetTrackedSegments drops one). */
    trackedSegments: Map<string, Promise<FollowPlan | null>>;
  }
}

/**
 * Drops the cached plan after a segment of the project was created, edited or deleted (once it
 * committed), here and on every peer (topic "trackedSegments", src/jobs/peers.ts).
 */
export function forgetTrackedSegments(ctx: AppContext, projectId: string): void {
  invalidate(ctx, "trackedSegments", projectId);
}

/** The "trackedSegments" cache topic's local clears. */
export const trackedSegmentsTopic: TopicClear = {
  one: (ctx, projectId) => void ctx.services.caches.trackedSegments.delete(projectId),
  all: (ctx) => ctx.services.caches.trackedSegments.clear(),
};

/**
 * The project's tracked DYNAMIC segments, what each reads and the segments they reference
 * (follow.ts); null when it tracks none. Cached until forgetTrackedSegments.
 */
export function trackFollowPlan(ctx: AppContext, projectId: string): Promise<FollowPlan | null> {
  const cache = ctx.services.caches.trackedSegments;
  let p = cache.get(projectId);
  if (!p) {
    p = loadFollowPlan(ctx, projectId);
    const c = cache;
    p.catch(() => c.delete(projectId));
    cache.set(projectId, p);
  }
  return p;
}

async function loadFollowPlan(ctx: AppContext, projectId: string): Promise<FollowPlan | null> {
  const rows = await ctx.db
    .selectFrom("segments")
    .select(["id", "slug", "name", "condition"])
    .where("project_id", "=", projectId)
    .where("track_membership", "=", 1)
    .where("type", "=", "DYNAMIC")
    .execute();
  const segs = rows.flatMap((r) => {
    const tree = parseStoredCondition(r.condition);
    return tree ? [{ id: r.id, slug: r.slug, name: r.name, tree }] : [];
  });
  if (!segs.length) return null;
  return followPlan(projectId, segs, await resolveSegments(ctx.db, projectId, segs.map((s) => s.tree)));
}

// ---- writing a membership diff ------------------------------------------------------------------

interface Change {
  segment: { id: string; slug: string; name: string };
  added: string[];
  removed: string[];
}

const CHUNK = 400;

/** Inserts/deletes the membership rows of `changes` and records one entry/exit event per change, inside `trx`. */
export async function writeMembershipChanges(trx: Transaction<DB>, projectId: string, now: number, changes: Change[]): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  const eventRows: Insertable<DB["events"]>[] = [];
  for (const ch of changes) {
    const data = { segmentId: ch.segment.id, segmentName: ch.segment.name };
    const json = JSON.stringify(data);
    for (let i = 0; i < ch.added.length; i += CHUNK) {
      const part = ch.added.slice(i, i + CHUNK);
      await trx
        .insertInto("segment_members")
        .values(part.map((contact_id) => ({ segment_id: ch.segment.id, contact_id, created_at: now })))
        .onConflict((oc) => oc.doNothing())
        .execute();
    }
    for (let i = 0; i < ch.removed.length; i += CHUNK) {
      const part = ch.removed.slice(i, i + CHUNK);
      await trx.deleteFrom("segment_members").where("segment_id", "=", ch.segment.id).where("contact_id", "in", part).execute();
    }
    for (const [ids, name] of [
      [ch.added, entryEvent(ch.segment.slug)],
      [ch.removed, exitEvent(ch.segment.slug)],
    ] as const) {
      for (const contactId of ids) {
        const id = newEventId(now);
        eventRows.push({ id, project_id: projectId, contact_id: contactId, name, data: json, email_id: null, created_at: now });
        events.push({ projectId, contactId, eventId: id, name, data });
      }
    }
  }
  for (let i = 0; i < eventRows.length; i += 100) await trx.insertInto("events").values(eventRows.slice(i, i + 100)).execute();
  return events;
}

// ---- contact writes -------------------------------------------------------------------------------

/**
 * The contactsChanged hook of every contact write but /v1/track (which follows its tracked segments
 * inside its own transaction, see follow.ts). Re-evaluates the written contacts against every
 * tracked DYNAMIC segment of the project: one query for all segments (a CASE column per segment),
 * one for the stored rows, the diff and its events in the same transaction (raw statements, see
 * membership-raw.ts), then the event feed is woken. Nothing at all when the project tracks no segment.
 */
export async function reevaluateContacts(ctx: AppContext, projectId: string, contactIds: readonly string[]): Promise<void> {
  const plan = await trackFollowPlan(ctx, projectId);
  if (!plan || !contactIds.length) return;
  const segs = plan.tracked.map((t) => t.seg);
  const events: RecordedEvent[] = [];
  const recount = new Set<string>();
  for (let i = 0; i < contactIds.length; i += CHUNK) {
    const ids = contactIds.slice(i, i + CHUNK);
    const r = await atomic(ctx.db, ctx.store.engine, (q) => reevaluateRaw(q, projectId, ctx.clock.now(), segs, plan.segments, ids));
    events.push(...r.events);
    for (const id of r.recount) recount.add(id);
  }
  scheduleRecount(ctx, recount);
  if (events.length) await notifyEvents(ctx, events);
}

// ---- whole segments -------------------------------------------------------------------------------

type SegmentRow = Pick<SegmentsTable, "id" | "project_id" | "slug" | "name" | "type" | "condition" | "track_membership">;

/** The live number of members (matching contacts for DYNAMIC, stored members for STATIC). */

/**
 * POST /segments/:id/compute and the sweep. A tracked DYNAMIC segment: stores its membership and
 * records an entry/exit event per change. Any other: only counts. Either way memberCount is refreshed.
 */
export async function computeSegment(ctx: AppContext, stale: SegmentRow): Promise<{ added: number; removed: number; total: number }> {
  const result = await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock.now();
    // Read again in the transaction: a PATCH (condition, trackMembership) or DELETE that committed since
    // `stale` was read must not get members or entry/exit events written by the old definition.
    const seg = await trx
      .selectFrom("segments")
      .select(["id", "project_id", "slug", "name", "type", "condition", "track_membership"])
      .where("id", "=", stale.id)
      .executeTakeFirst();
    if (!seg) throw notFound("Segment");
    if (seg.type !== "DYNAMIC" || seg.track_membership !== 1) {
      const total = await liveCount(trx, seg, now);
      await trx.updateTable("segments").set({ member_count: total }).where("id", "=", seg.id).execute();
      return { added: 0, removed: 0, total, events: [] as RecordedEvent[] };
    }
    const tree = parseStoredCondition(seg.condition);
    let segments: Map<string, SegmentDef> = new Map();
    if (tree) segments = await resolveSegments(trx, seg.project_id, [tree]);
    segments.delete(seg.id);
    const cond = tree ? compileFrag(tree, { projectId: seg.project_id, now, segments }) : q`1 = 0`;
    const live = fragToRaw(cond);
    const added = await trx
      .selectFrom("contacts as c")
      .select("c.id")
      .where("c.project_id", "=", seg.project_id)
      .where(live)
      .where("c.id", "not in", (eb) => eb.selectFrom("segment_members as sm").select("sm.contact_id").where("sm.segment_id", "=", seg.id))
      .execute();
    const removed = await trx
      .selectFrom("segment_members as sm")
      .select("sm.contact_id")
      .where("sm.segment_id", "=", seg.id)
      .where("sm.contact_id", "not in", (eb) =>
        eb.selectFrom("contacts as c").select("c.id").where("c.project_id", "=", seg.project_id).where(fragToRaw(cond)),
      )
      .execute();
    const change: Change = { segment: seg, added: added.map((r) => r.id), removed: removed.map((r) => r.contact_id) };
    const events = change.added.length || change.removed.length ? await writeMembershipChanges(trx, seg.project_id, now, [change]) : [];
    const count = await trx
      .selectFrom("segment_members")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("segment_id", "=", seg.id)
      .executeTakeFirst();
    const total = Number(count?.n ?? 0);
    // The whole membership is stored: from now on each entry and exit adds to the count.
    await trx.updateTable("segments").set({ member_count: total, members_synced: 1 }).where("id", "=", seg.id).execute();
    return { added: change.added.length, removed: change.removed.length, total, events };
  });
  if (result.events.length) await notifyEvents(ctx, result.events);
  return { added: result.added, removed: result.removed, total: result.total };
}

/**
 * The sweep: every segment's memberCount is refreshed and every tracked DYNAMIC segment computed
 * (time-relative conditions move without a contact write). One segment at a time; a failing
 * segment is logged and skipped.
 */
export async function sweepSegments(ctx: AppContext): Promise<void> {
  const rows = await ctx.db
    .selectFrom("segments")
    .select(["id", "project_id", "slug", "name", "type", "condition", "track_membership"])
    .orderBy("id")
    .execute();
  for (const seg of rows) {
    try {
      await computeSegment(ctx, seg);
    } catch (e) {
      ctx.log.error("segment sweep failed", { segmentId: seg.id, error: String((e as Error)?.stack ?? e) });
    }
  }
}

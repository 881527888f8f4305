/**
 * memberCount of tracked DYNAMIC segments whose count is not in sync with their stored membership
 * (segments.members_synced = 0, migration 020). A tracked segment starts with an empty stored
 * membership while its memberCount is the live count, so adding one per entry would count a contact
 * twice when it was already a match. Instead, an entry or exit of such a segment schedules a recount
 * here (the live count, coalesced per segment, shortly after); the recount marks the segment in sync
 * when the live count equals its stored rows. Compute and the sweep store the whole membership and
 * mark it in sync themselves. In memory only: a recount lost to a restart leaves a stale count until
 * the next sweep, which refreshes every memberCount anyway.
 */
import type { AppContext } from "../../context";
import { liveCount } from "./members";

export const RECOUNT_DELAY_MS = 250;

/** The segments waiting for a recount, and the recount running (one per instance). */
export class SegmentRecounts {
  ids = new Set<string>();
  timer: ReturnType<typeof setTimeout> | null = null;
  running: Promise<void> | null = null;
  stopped = false;
}

declare module "../../context" {
  interface Services {
    segmentRecounts: SegmentRecounts;
  }
}

const of = (ctx: AppContext): SegmentRecounts => ctx.services.segmentRecounts;

/** Recounts these segments soon (ids of segments that moved while not in sync). */
export function scheduleRecount(ctx: AppContext, ids: Iterable<string>): void {
  const s = of(ctx);
  if (s.stopped) return;
  for (const id of ids) s.ids.add(id);
  if (!s.ids.size || s.timer) return;
  s.timer = setTimeout(() => {
    s.timer = null;
    const ids = [...s.ids];
    s.ids.clear();
    const prev = s.running ?? Promise.resolve();
    s.running = prev.then(() => recountSegments(ctx, ids)).finally(() => {
      if (!s.timer) s.running = null;
    });
  }, RECOUNT_DELAY_MS);
}

/** memberCount := the live count; in sync when that equals the stored member rows. */
export async function recountSegments(ctx: AppContext, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    try {
      await ctx.db.transaction().execute(async (trx) => {
        const seg = await trx
          .selectFrom("segments")
          .select(["id", "project_id", "slug", "name", "type", "condition", "track_membership", "members_synced"])
          .where("id", "=", id)
          .executeTakeFirst();
        if (!seg || seg.type !== "DYNAMIC" || seg.track_membership !== 1 || seg.members_synced === 1) return;
        const live = await liveCount(trx, seg, ctx.clock.now());
        const stored = await storedCount(trx, id);
        await trx.updateTable("segments").set({ member_count: live, members_synced: live === stored ? 1 : 0 }).where("id", "=", id).execute();
      });
    } catch (e) {
      if (!of(ctx).stopped) ctx.log.warn("segment recount failed", { segmentId: id, error: String((e as Error)?.message ?? e) });
    }
  }
}

/** The number of stored member rows of a segment. */
export async function storedCount(db: Pick<AppContext["db"], "selectFrom">, segmentId: string): Promise<number> {
  const r = await db.selectFrom("segment_members").select((eb) => eb.fn.countAll<number>().as("n")).where("segment_id", "=", segmentId).executeTakeFirst();
  return Number(r?.n ?? 0);
}

/** Stops scheduling and waits for a recount under way (service shutdown). */
export async function stopRecounts(ctx: AppContext): Promise<void> {
  const s = of(ctx);
  s.stopped = true;
  if (s.timer) clearTimeout(s.timer);
  s.timer = null;
  s.ids.clear();
  await s.running?.catch(() => {});
}

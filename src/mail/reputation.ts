// Sending reputation per project (decisions.md "/security"): bounce and complaint rates over the
// last 30 days. A project above 10% bounces or 0.5% complaints, with at least 100 sends in the
// window, is disabled with reason EMAIL_REPUTATION (its API then answers 403 PROJECT_DISABLED).
// The engine checks after hard bounces; the feedback loop can call enforceReputation after complaints.
import { iso } from "../clock";
import type { AppContext } from "../context";
import { idAtTime } from "../db/ids";

export const REPUTATION_WINDOW_DAYS = 30;
export const REPUTATION_MIN_SENDS = 100;
export const MAX_BOUNCE_RATE = 0.1;
export const MAX_COMPLAINT_RATE = 0.005;
export const REPUTATION_REASON = "EMAIL_REPUTATION";

export interface Reputation {
  windowDays: number;
  sent: number;
  bounced: number;
  complained: number;
  bounceRate: number;
  complaintRate: number;
  suspensions: { reason: string; since: string | null }[];
}

export async function reputation(ctx: AppContext, projectId: string): Promise<Reputation> {
  const since = ctx.clock.now() - REPUTATION_WINDOW_DAYS * 86_400_000;
  const { row, project } = await ctx.store.exclusive((sqlite) => ({
    row: sqlite
      .query<{ sent: number | null; bounced: number | null; complained: number | null }, [number, number, number, string, string]>(
        `SELECT SUM(sent_at >= ?) AS sent, SUM(bounced_at >= ?) AS bounced, SUM(complained_at >= ?) AS complained
         FROM emails WHERE project_id = ? AND id >= ?`,
      )
      .get(since, since, since, projectId, idAtTime(since - 86_400_000)),
    project: sqlite.query<{ disabled: number; disabled_reason: string | null; updated_at: number }, [string]>(
      "SELECT disabled, disabled_reason, updated_at FROM projects WHERE id = ?",
    ).get(projectId),
  }));
  const sent = row?.sent ?? 0;
  const bounced = row?.bounced ?? 0;
  const complained = row?.complained ?? 0;
  const rate = (n: number) => (sent ? Math.round((n / sent) * 10_000) / 10_000 : 0);
  return {
    windowDays: REPUTATION_WINDOW_DAYS,
    sent,
    bounced,
    complained,
    bounceRate: rate(bounced),
    complaintRate: rate(complained),
    suspensions: project?.disabled && project.disabled_reason === REPUTATION_REASON ? [{ reason: REPUTATION_REASON, since: iso(project.updated_at) }] : [],
  };
}

/** Disables the project when its rates are over the limits. Returns true when it did. */
export async function enforceReputation(ctx: AppContext, projectId: string): Promise<boolean> {
  const r = await reputation(ctx, projectId);
  if (r.sent < REPUTATION_MIN_SENDS) return false;
  if (r.bounceRate <= MAX_BOUNCE_RATE && r.complaintRate <= MAX_COMPLAINT_RATE) return false;
  const now = ctx.clock.now();
  const changed = await ctx.store.exclusive(
    (sqlite) =>
      sqlite.query("UPDATE projects SET disabled = 1, disabled_reason = ?, updated_at = ? WHERE id = ? AND disabled = 0").run(REPUTATION_REASON, now, projectId)
        .changes,
  );
  if (!changed) return false;
  ctx.keys.invalidate(projectId);
  ctx.log.warn("project disabled for its sending reputation", { projectId, ...r, suspensions: undefined });
  return true;
}

export const REPUTATION_JOB = "reputation.check";
const CHECK_EVERY_MS = 10_000;

/** The reputation query scans the project's 30-day window: at most once per 10 s per project. */
const lastChecks = new WeakMap<AppContext, Map<string, number>>();

/**
 * Checks now when the project was not checked in the last 10 s; otherwise queues one durable check
 * for when the 10 s are over (deduplicated), so a burst of bounces is never left unchecked.
 */
export async function checkReputationSoon(ctx: AppContext, projectId: string): Promise<void> {
  let m = lastChecks.get(ctx);
  if (!m) lastChecks.set(ctx, (m = new Map()));
  const now = ctx.clock.now();
  const last = m.get(projectId) ?? -Infinity;
  if (last <= now - CHECK_EVERY_MS) {
    m.set(projectId, now);
    if (m.size > 10_000) m.clear();
    await enforceReputation(ctx, projectId);
    return;
  }
  await ctx.jobs.enqueue(REPUTATION_JOB, { projectId }, { projectId, runAt: last + CHECK_EVERY_MS, dedupeKey: `${REPUTATION_JOB}:${projectId}`, maxAttempts: 3 });
}

export function registerReputationJob(ctx: AppContext): void {
  ctx.jobs.register(REPUTATION_JOB, async (job) => {
    const projectId = (job.payload as { projectId: string }).projectId;
    lastChecks.get(ctx)?.set(projectId, ctx.clock.now());
    return { disabled: await enforceReputation(ctx, projectId) };
  });
}

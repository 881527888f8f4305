// Sending reputation per project (docs/api.md "Billing, uploads, project reset", **Security**): bounce and complaint rates over the
// last 30 days. A project above 10% bounces or 0.5% complaints, with at least 100 sends in the
// window, is disabled with reason EMAIL_REPUTATION (its API then answers 403 PROJECT_DISABLED).
// The engine checks after hard bounces; the feedback loop can call enforceReputation after complaints.
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { idAtTime } from "../../db/ids";
import { invalidate } from "../../jobs/peers";
import { disableProject, reputationCounts } from "../outbox/store";

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
  const { sent, bounced, complained, disabled, disabledReason, updatedAt } = await reputationCounts(ctx.db, projectId, since, idAtTime(since - 86_400_000));
  const rate = (n: number) => (sent ? Math.round((n / sent) * 10_000) / 10_000 : 0);
  return {
    windowDays: REPUTATION_WINDOW_DAYS,
    sent,
    bounced,
    complained,
    bounceRate: rate(bounced),
    complaintRate: rate(complained),
    suspensions: disabled && disabledReason === REPUTATION_REASON && updatedAt !== null ? [{ reason: REPUTATION_REASON, since: iso(updatedAt) }] : [],
  };
}

/** Disables the project when its rates are over the limits. Returns true when it did. */
export async function enforceReputation(ctx: AppContext, projectId: string): Promise<boolean> {
  const r = await reputation(ctx, projectId);
  if (r.sent < REPUTATION_MIN_SENDS) return false;
  if (r.bounceRate <= MAX_BOUNCE_RATE && r.complaintRate <= MAX_COMPLAINT_RATE) return false;
  const now = ctx.clock.now();
  if (!(await disableProject(ctx.db, projectId, REPUTATION_REASON, now))) return false;
  invalidate(ctx, "keys", projectId);
  ctx.log.warn("project disabled for its sending reputation", { projectId, ...r, suspensions: undefined });
  return true;
}

export const REPUTATION_JOB = "reputation.check";
const CHECK_EVERY_MS = 10_000;

/** The reputation query scans the project's 30-day window: at most once per 10 s per project. */
declare module "../../context" {
  interface Caches {
    /** projectId -> when its reputation was last checked (epoch ms). */
    reputationChecks: Map<string, number>;
  }
}

/**
 * Checks now when the project was not checked in the last 10 s; otherwise queues one durable check
 * for when the 10 s are over (deduplicated), so a burst of bounces is never left unchecked.
 */
export async function checkReputationSoon(ctx: AppContext, projectId: string): Promise<void> {
  const m = ctx.services.caches.reputationChecks;
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

/** checkReputationSoon for callers that must not fail on it (after a bounce or complaint committed): errors are logged. */
export async function recheckReputation(ctx: AppContext, projectId: string): Promise<void> {
  try {
    await checkReputationSoon(ctx, projectId);
  } catch (err) {
    ctx.log.error("reputation check failed", { projectId, error: String((err as Error)?.message ?? err) });
  }
}

export function registerReputationJob(ctx: AppContext): void {
  ctx.jobs.register(REPUTATION_JOB, async (job) => {
    const projectId = (job.payload as { projectId: string }).projectId;
    ctx.services.caches.reputationChecks.set(projectId, ctx.clock.now());
    return { disabled: await enforceReputation(ctx, projectId) };
  });
}

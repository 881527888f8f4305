/**
 * Monthly caps per category (docs/api.md "Billing, uploads, project reset", **Caps**): the check and the count are
 * ONE statement sequence inside the caller's transaction, so two concurrent sends can never pass a
 * cap together (every write runs on the one connection, serialized by the store's lock).
 *
 * Contract for other modules (campaigns, workflows, …):
 *
 *   await consumeQuota(trx, ctx, projectId, "campaigns", n)
 *
 * - Call it INSIDE the transaction that persists the work being charged (the email rows), before or
 *   after writing them: when it throws, the caller's transaction rolls back and nothing is sent.
 * - `trx` is a Kysely transaction (or ctx.db when the caller has no transaction and n is the only write).
 * - `n` is the number of emails (or inbound messages) the work adds; 0 is a no-op.
 * - Throws AppError 402 BILLING_LIMIT_EXCEEDED with details `{ category, used, limit, requested }`
 *   when `used + n` would pass the category's cap of the current calendar month (UTC); `used` is
 *   unchanged then. A null cap is unlimited.
 * - Campaign send: charge the whole audience before any fan-out (one call). A workflow email:
 *   charge 1 in the step's transaction and fail the step on the 402.
 *
 * `consumeQuotaRaw` is the same rule for the raw-statement hot path (/v1/send inside
 * `Q` on the request's transaction). `admitInbound` never throws: over the cap it counts
 * the message as dropped and answers false.
 */
import type { Q } from "../../db/raw";
import type { Kysely } from "kysely";
import type { AppContext } from "../../context";
import type { DB } from "../../db";
import type { BillingCategory } from "../../db/tables/billing";
import { AppError } from "../../http/errors";
import { isSandbox } from "../../mail/outbox/sandbox";

export type { BillingCategory } from "../../db/tables/billing";
export const CATEGORIES: BillingCategory[] = ["transactional", "campaigns", "workflows", "inbound"];

/** First instant (epoch ms) of the calendar month (UTC) holding `now`, and of the next one. */
export function periodOf(now: number): { start: number; end: number } {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  return { start: Date.UTC(y, m, 1), end: Date.UTC(y, m + 1, 1) };
}

export function billingLimitExceeded(category: BillingCategory, used: number, limit: number, requested: number) {
  return new AppError(402, "BILLING_LIMIT_EXCEEDED", `The monthly ${category} limit of ${limit} is reached (${used} used, ${requested} requested)`, {
    details: { category, used, limit, requested },
    suggestion: "Raise the limit with PUT /users/@me/projects/:id/billing-limits or wait for the next calendar month (UTC).",
  });
}

export async function consumeQuota(trx: Kysely<DB>, ctx: AppContext, projectId: string, category: BillingCategory, n: number): Promise<void> {
  if (n <= 0) return;
  // A sandbox's mail is captured, never sent: neither capped nor counted (inbound mail is real).
  if (category !== "inbound" && (await isSandbox(ctx, projectId, trx))) return;
  const period = periodOf(ctx.clock.now()).start;
  const limits = await trx.selectFrom("billing_limits").select(category).where("project_id", "=", projectId).executeTakeFirst();
  const limit = limits ? (limits[category] as number | null) : null;
  if (limit !== null) {
    const row = await trx
      .selectFrom("billing_usage")
      .select("used")
      .where("project_id", "=", projectId)
      .where("period_start", "=", period)
      .where("category", "=", category)
      .executeTakeFirst();
    const used = row?.used ?? 0;
    if (used + n > limit) throw billingLimitExceeded(category, used, limit, n);
  }
  // The count only moves while it stays within the cap: the read above is no guard against another
  // instance's transaction counting at the same moment (PostgreSQL, several instances), the
  // conditional upsert is (it waits for that row and re-checks against its newest count).
  const added = await trx
    .insertInto("billing_usage")
    .values({ project_id: projectId, period_start: period, category, used: n, dropped: 0 })
    .onConflict((oc) => {
      const up = oc.columns(["project_id", "period_start", "category"]).doUpdateSet((eb) => ({ used: eb("billing_usage.used", "+", n) }));
      return limit === null ? up : up.where((eb) => eb(eb("billing_usage.used", "+", n), "<=", limit));
    })
    .executeTakeFirst();
  if (limit !== null && Number(added.numInsertedOrUpdatedRows ?? 0) === 0) throw await overCap(trx, projectId, period, category, limit, n);
}

/** The 402 of a count a concurrent request took first (its `used` as it is now). */
async function overCap(trx: Kysely<DB>, projectId: string, period: number, category: BillingCategory, limit: number, n: number) {
  const row = await trx.selectFrom("billing_usage").select("used").where("project_id", "=", projectId).where("period_start", "=", period).where("category", "=", category).executeTakeFirst();
  return billingLimitExceeded(category, row?.used ?? 0, limit, n);
}

// Raw statements for the /v1/send hot path (see src/modules/send/service.ts); same rule as above.
const LIMIT_SQL: Record<BillingCategory, string> = Object.fromEntries(
  ["transactional", "campaigns", "workflows", "inbound"].map((c) => [c, `SELECT ${c} AS cap FROM billing_limits WHERE project_id = ?`]),
) as Record<BillingCategory, string>;
const USED_SQL = "SELECT used FROM billing_usage WHERE project_id = ? AND period_start = ? AND category = ?";
const ADD_SQL =
  "INSERT INTO billing_usage (project_id, period_start, category, used, dropped) VALUES (?, ?, ?, ?, 0) " +
  "ON CONFLICT (project_id, period_start, category) DO UPDATE SET used = billing_usage.used + excluded.used";
/** ADD_SQL that leaves the count alone when it would pass the cap (see consumeQuota). */
const ADD_CAPPED_SQL = ADD_SQL + " WHERE billing_usage.used + excluded.used <= ?";

/** consumeQuota for callers running raw statements inside their transaction. */
export async function consumeQuotaRaw(q: Q, now: number, projectId: string, category: BillingCategory, n: number): Promise<void> {
  if (n <= 0) return;
  const period = periodOf(now).start;
  const cap = (await q.get<{ cap: number | null }>(LIMIT_SQL[category], [projectId]))?.cap ?? null;
  if (cap !== null) {
    const used = (await q.get<{ used: number }>(USED_SQL, [projectId, period, category]))?.used ?? 0;
    if (used + n > cap) throw billingLimitExceeded(category, used, cap, n);
    if ((await q.run(ADD_CAPPED_SQL, [projectId, period, category, n, cap])) === 0) {
      throw billingLimitExceeded(category, (await q.get<{ used: number }>(USED_SQL, [projectId, period, category]))?.used ?? 0, cap, n);
    }
    return;
  }
  await q.run(ADD_SQL, [projectId, period, category, n]);
}

/**
 * One inbound message for `projectId`, inside the caller's transaction: counted and true under the
 * cap; over it, counted as dropped and false (the caller then stores nothing).
 */
export async function admitInbound(trx: Kysely<DB>, ctx: AppContext, projectId: string): Promise<boolean> {
  try {
    await consumeQuota(trx, ctx, projectId, "inbound", 1);
    return true;
  } catch (e) {
    if (!(e instanceof AppError) || e.status !== 402) throw e;
    await trx
      .insertInto("billing_usage")
      .values({ project_id: projectId, period_start: periodOf(ctx.clock.now()).start, category: "inbound", used: 0, dropped: 1 })
      .onConflict((oc) => oc.columns(["project_id", "period_start", "category"]).doUpdateSet((eb) => ({ dropped: eb("billing_usage.dropped", "+", 1) })))
      .execute();
    return false;
  }
}

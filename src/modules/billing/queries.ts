// SQL of the billing module (limits, usage, subscription state, invoices, processed webhook events).
import type { Kysely } from "kysely";
import type { DB } from "../../db";
import type { BillingCategory, BillingInvoicesTable, BillingSubscriptionsTable } from "../../db/tables/billing";

export type Limits = Record<BillingCategory, number | null>;

export async function readLimits(db: Kysely<DB>, projectId: string): Promise<Limits> {
  const r = await db
    .selectFrom("billing_limits")
    .select(["transactional", "campaigns", "workflows", "inbound"])
    .where("project_id", "=", projectId)
    .executeTakeFirst();
  return r ?? { transactional: null, campaigns: null, workflows: null, inbound: null };
}

export async function writeLimits(db: Kysely<DB>, projectId: string, limits: Limits, now: number): Promise<void> {
  await db
    .insertInto("billing_limits")
    .values({ project_id: projectId, ...limits, updated_at: now })
    .onConflict((oc) => oc.column("project_id").doUpdateSet({ ...limits, updated_at: now }))
    .execute();
}

export async function readUsage(db: Kysely<DB>, projectId: string, periodStart: number) {
  return db
    .selectFrom("billing_usage")
    .select(["category", "used", "dropped"])
    .where("project_id", "=", projectId)
    .where("period_start", "=", periodStart)
    .execute();
}

export async function subscriptionOf(db: Kysely<DB>, projectId: string) {
  return db.selectFrom("billing_subscriptions").selectAll().where("project_id", "=", projectId).executeTakeFirst();
}

export async function projectOfCustomer(db: Kysely<DB>, customerId: string): Promise<string | null> {
  const r = await db.selectFrom("billing_subscriptions").select("project_id").where("customer_id", "=", customerId).executeTakeFirst();
  return r?.project_id ?? null;
}

export async function projectExists(db: Kysely<DB>, projectId: string): Promise<boolean> {
  return !!(await db.selectFrom("projects").select("id").where("id", "=", projectId).executeTakeFirst());
}

/** Upserts the subscription row; undefined fields keep their stored value. */
export async function saveSubscription(
  db: Kysely<DB>,
  projectId: string,
  patch: Partial<Omit<BillingSubscriptionsTable, "project_id" | "updated_at">>,
  now: number,
): Promise<void> {
  const set = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  await db
    .insertInto("billing_subscriptions")
    .values({ project_id: projectId, customer_id: null, subscription_id: null, status: null, price_id: null, current_period_end: null, ...set, updated_at: now })
    .onConflict((oc) => oc.column("project_id").doUpdateSet({ ...set, updated_at: now }))
    .execute();
}

export async function saveInvoice(db: Kysely<DB>, row: BillingInvoicesTable): Promise<void> {
  const { id, project_id, created_at, ...rest } = row;
  await db
    .insertInto("billing_invoices")
    .values(row)
    .onConflict((oc) => oc.column("id").doUpdateSet(rest))
    .execute();
}

export async function listInvoices(db: Kysely<DB>, projectId: string) {
  return db.selectFrom("billing_invoices").selectAll().where("project_id", "=", projectId).orderBy("created_at", "desc").orderBy("id", "desc").limit(100).execute();
}

/** Records a webhook event id; false when it was already applied (a replay). */
export async function claimEvent(db: Kysely<DB>, id: string, type: string, now: number): Promise<boolean> {
  const r = await db.insertInto("billing_events").values({ id, type, received_at: now }).onConflict((oc) => oc.doNothing()).executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

import type { Q } from "../db/raw";
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../db";
import type { WebhookDeliveriesTable } from "../db/tables/webhooks";

/** SQL of the webhook dispatcher and the event consumer (the delivery rows are their queue). */

export type DeliveryInsert = Omit<WebhookDeliveriesTable, "locked_by">;

/** The Kysely form of insertDeliveriesRaw (the portable sibling). */
export async function insertDeliveries(db: Kysely<DB> | Transaction<DB>, rows: DeliveryInsert[]): Promise<void> {
  // 15 columns: 60 rows stay well under SQLite's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 60) await db.insertInto("webhook_deliveries").values(rows.slice(i, i + 60)).execute();
}

/** A delivery row waiting for its first attempt (due now). */
export function pendingDelivery(d: { projectId: string; endpointId: string; eventId: string | null; event: string; payload: string; now: number }): DeliveryInsert {
  return {
    id: Bun.randomUUIDv7(),
    project_id: d.projectId,
    endpoint_id: d.endpointId,
    event_id: d.eventId,
    event: d.event,
    payload: d.payload,
    status: "PENDING",
    attempts: 0,
    next_attempt_at: d.now,
    response_status: null,
    response_body: null,
    error: null,
    created_at: d.now,
    updated_at: d.now,
    delivered_at: null,
  };
}

const DELIVERY_COLUMNS = [
  "id", "project_id", "endpoint_id", "event_id", "event", "payload", "status", "attempts", "next_attempt_at",
  "response_status", "response_body", "error", "created_at", "updated_at", "delivered_at",
] as const satisfies readonly (keyof DeliveryInsert)[];
const INSERT_DELIVERY = `INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS.join(", ")}) VALUES (${DELIVERY_COLUMNS.map(() => "?").join(", ")})`;

/**
 * insertDeliveries as one prepared statement per row, on the connection of the caller's open
 * transaction (the event feed's): raw because every email event passes here (two rows per email in
 * scripts/bench/send.ts --webhooks, where Kysely's compile of the multi-row inserts was 5% of the server's CPU).
 */
export async function insertDeliveriesRaw(q: Q, rows: DeliveryInsert[]): Promise<void> {
  for (const r of rows) await q.run(INSERT_DELIVERY, DELIVERY_COLUMNS.map((k) => r[k] ?? null));
}

export function enabledEndpointsOf(db: Kysely<DB> | Transaction<DB>, projectIds: string[]) {
  return db
    .selectFrom("webhook_endpoints")
    .select(["id", "project_id", "events"])
    .where("project_id", "in", projectIds)
    .where("enabled", "=", 1)
    .execute();
}

export function contactEmails(db: Kysely<DB> | Transaction<DB>, ids: string[]) {
  return db.selectFrom("contacts").select(["id", "email"]).where("id", "in", ids).execute();
}

/** Endpoints that have PENDING deliveries due (the dispatcher's outer loop). */
export function endpointsWithDue(db: Kysely<DB>, now: number) {
  return db
    .selectFrom("webhook_endpoints as e")
    .select(["e.id", "e.url", "e.secret"])
    .where("e.enabled", "=", 1)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom("webhook_deliveries as d")
          .select("d.id")
          .whereRef("d.endpoint_id", "=", "e.id")
          .where("d.status", "=", "PENDING")
          .where("d.next_attempt_at", "<=", now),
      ),
    )
    .execute();
}

/** The next deliveries of one endpoint due by `now`, oldest first. */
export function dueDeliveries(db: Kysely<DB>, endpointId: string, now: number, limit: number) {
  return db
    .selectFrom("webhook_deliveries")
    .select(["id", "endpoint_id", "payload", "attempts", "next_attempt_at"])
    .where("endpoint_id", "=", endpointId)
    .where("status", "=", "PENDING")
    .where("next_attempt_at", "<=", now)
    .orderBy("next_attempt_at")
    .orderBy("id")
    .limit(limit)
    .execute();
}

/**
 * PostgreSQL, several instances: takes one due delivery for this instance before it is sent, a
 * compare-and-set on the next_attempt_at it was read with, moved to `leaseUntil` (MAILSVC_LEASE). False:
 * another instance took it (or it changed). The attempt's outcome then sets next_attempt_at as always; a
 * delivery whose instance died is due again when the lease ends.
 */
export async function claimDelivery(q: Q, id: string, readAt: number, leaseUntil: number, instance: string): Promise<boolean> {
  return (await q.run("UPDATE webhook_deliveries SET next_attempt_at = ?, locked_by = ? WHERE id = ? AND status = 'PENDING' AND next_attempt_at = ?", [leaseUntil, instance, id, readAt])) > 0;
}

/** At start-up: deliveries this instance id claimed before it died are due again now (others' wait for their lease). */
export function releaseOwnDeliveries(q: Q, instance: string, now: number): Promise<number> {
  return q.run("UPDATE webhook_deliveries SET next_attempt_at = ?, locked_by = NULL WHERE status = 'PENDING' AND locked_by = ?", [now, instance]);
}

export interface AttemptRecord {
  status: "PENDING" | "DELIVERED" | "FAILED";
  attempts: number;
  nextAttemptAt: number | null;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
  deliveredAt: number | null;
  now: number;
}

/**
 * recordAttempt for a group of attempts, in one transaction (the caller's): every
 * webhook attempt passes here (scripts/bench/send.ts --webhooks: Kysely's per-row updates were 6% of the
 * server's CPU). Only a row still PENDING changes (a deleted endpoint's rows are gone).
 */
export async function recordAttemptsRaw(q: Q, attempts: { id: string; record: AttemptRecord }[]): Promise<void> {
  const upd = `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, response_status = ?, response_body = ?, error = ?,
       delivered_at = ?, updated_at = ?, locked_by = NULL WHERE id = ? AND status = 'PENDING'`;
  for (const { id, record: r } of attempts) await q.run(upd, [r.status, r.attempts, r.nextAttemptAt, r.responseStatus, r.responseBody, r.error, r.deliveredAt, r.now, id]);
}

/** Records one attempt (the test ping); only a row still PENDING changes. */
export async function recordAttempt(db: Kysely<DB> | Transaction<DB>, id: string, r: AttemptRecord): Promise<void> {
  await db
    .updateTable("webhook_deliveries")
    .set({
      status: r.status,
      attempts: r.attempts,
      next_attempt_at: r.nextAttemptAt,
      response_status: r.responseStatus,
      response_body: r.responseBody,
      error: r.error,
      delivered_at: r.deliveredAt,
      updated_at: r.now,
    })
    .where("id", "=", id)
    .where("status", "=", "PENDING")
    .execute();
}

/** Marks an endpoint's waiting deliveries failed (endpoint disabled: nothing is sent afterwards). */
export async function failPendingOf(db: Kysely<DB> | Transaction<DB>, endpointId: string, reason: string, now: number): Promise<void> {
  await db
    .updateTable("webhook_deliveries")
    .set({ status: "FAILED", error: reason, next_attempt_at: null, updated_at: now })
    .where("endpoint_id", "=", endpointId)
    .where("status", "=", "PENDING")
    .execute();
}

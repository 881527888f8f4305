// The suppression list's data: who must never be mailed again in a project (hard bounces,
// complaints) and how an address gets there. One lookup, in two flavours: Kysely (inside a
// caller's transaction) and its raw sibling for the hot paths (/v1/send, the outbox claim;
// benchmarked by scripts/bench/send.ts), which runs through `Q` on the caller's transaction.
import type { Q } from "../../db/raw";
import type { Kysely, Selectable, Transaction } from "kysely";
import { iso } from "../../clock";
import type { DB } from "../../db";
import type { SuppressionReason, SuppressionSource, SuppressionsTable } from "../../db/tables/delivery";
import { subscribed } from "../../webhooks/events";
import { enabledEndpointsOf, insertDeliveries, pendingDelivery, type DeliveryInsert } from "../../webhooks/store";
import { normalizeEmail } from "../../net/email-address";

type Db = Kysely<DB> | Transaction<DB>;

/** The reply stored on an email that was never attempted because its address is suppressed. */
export const SUPPRESSED_REPLY = "address is suppressed (earlier hard bounce, complaint or a manual entry; see /suppressions)";

/** The addresses among `emails` (lower-case) that are suppressed in the project. */
export async function suppressedAmong(db: Db, projectId: string, emails: string[]): Promise<Set<string>> {
  if (!emails.length) return new Set();
  const rows = await db.selectFrom("suppressions").select("email").where("project_id", "=", projectId).where("email", "in", emails).execute();
  return new Set(rows.map((r) => r.email));
}

/** suppressedAmong as one raw statement (hot path). */
export async function suppressedAmongRaw(q: Q, projectId: string, emails: string[]): Promise<Set<string>> {
  if (!emails.length) return new Set();
  const rows =
    emails.length === 1
      ? await q.all<{ email: string }>("SELECT email FROM suppressions WHERE project_id = ? AND email = ?", [projectId, emails[0]!])
      : await q.all<{ email: string }>("SELECT email FROM suppressions WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))", [projectId, JSON.stringify(emails)]);
  return new Set(rows.map((r) => r.email));
}

export interface Suppression {
  projectId: string;
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  /** EMAIL (a bounce or complaint of `emailId`), API, IMPORT (`jobId`). */
  source?: SuppressionSource;
  emailId?: string | null;
  jobId?: string | null;
  now: number;
}

export type SuppressionRow = Selectable<SuppressionsTable>;

/** The API view of a suppression: why the address is blocked and where that came from. */
export function viewSuppression(r: SuppressionRow) {
  return {
    id: r.id,
    email: r.email,
    reason: r.reason,
    detail: r.detail,
    source: { type: r.source, emailId: r.email_id, jobId: r.job_id },
    createdAt: iso(r.created_at)!,
  };
}

/**
 * Queues `suppression.created` / `suppression.deleted` for the project's enabled endpoints subscribed
 * to it, in the caller's transaction (the delivery rows are the dispatcher's durable queue; it polls
 * them, so nothing has to be woken). No events row: a suppressed address need not be a contact.
 */
export type EndpointRows = Awaited<ReturnType<typeof enabledEndpointsOf>>;

export async function queueSuppressionWebhooks(
  db: Db,
  name: "suppression.created" | "suppression.deleted",
  rows: SuppressionRow[],
  now: number,
  /** The projects' enabled endpoints when the caller has read them already (an import reads them once per chunk). */
  known?: EndpointRows,
): Promise<number> {
  if (!rows.length) return 0;
  const endpoints = known ?? (await enabledEndpointsOf(db, [...new Set(rows.map((r) => r.project_id))]));
  if (!endpoints.length) return 0;
  const out: DeliveryInsert[] = [];
  for (const r of rows) {
    const payload = JSON.stringify({ type: name, timestamp: iso(now), data: viewSuppression(r) });
    for (const ep of endpoints) {
      if (ep.project_id !== r.project_id || !subscribed(JSON.parse(ep.events) as string[], name)) continue;
      out.push(pendingDelivery({ projectId: r.project_id, endpointId: ep.id, eventId: null, event: name, payload, now }));
    }
  }
  await insertDeliveries(db, out);
  return out.length;
}

/**
 * Adds an address to the project's suppression list (the first reason stays) and queues
 * `suppression.created`. Returns the new row, or null when the address was already suppressed.
 */
export async function suppress(db: Db, s: Suppression, endpoints?: EndpointRows): Promise<SuppressionRow | null> {
  const email = normalizeEmail(s.email);
  const exists = await db.selectFrom("suppressions").select("id").where("project_id", "=", s.projectId).where("email", "=", email).executeTakeFirst();
  if (exists) return null;
  const row: SuppressionRow = {
    id: Bun.randomUUIDv7(undefined, s.now),
    project_id: s.projectId,
    email,
    reason: s.reason,
    detail: s.detail,
    source: s.source ?? "EMAIL",
    email_id: s.emailId ?? null,
    job_id: s.jobId ?? null,
    created_at: s.now,
  };
  const r = await db.insertInto("suppressions").values(row).onConflict((oc) => oc.columns(["project_id", "email"]).doNothing()).executeTakeFirst();
  if (r && Number(r.numInsertedOrUpdatedRows ?? 1n) === 0) return null;
  await queueSuppressionWebhooks(db, "suppression.created", [row], s.now, endpoints);
  return row;
}

/** The project's enabled webhook endpoints, read once for several suppress() calls (an import chunk). */
export const suppressionEndpoints = (db: Db, projectId: string): Promise<EndpointRows> => enabledEndpointsOf(db, [projectId]);

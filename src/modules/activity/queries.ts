import { countRows } from "../../db/count";
import { dialect } from "../../db/dialect";
import { sql, type Kysely } from "kysely";
import type { DB } from "../../db";
import { idAtTime } from "../../db/ids";


/** isReservedEventName (src/audience/events.ts) as SQL GLOB patterns, for filtering client events in the database. */
export const SYSTEM_PATTERNS = ["email.*", "contact.subscribed", "contact.unsubscribed", "contact.confirmed", "segment.*.entry", "segment.*.exit"];

export interface ActivityFilters {
  /** Activity types: a system event name (email.open…) or "event" for client events. */
  types?: string[];
  /** Narrows client events to one name. */
  name?: string;
  contactId?: string;
  fromMs?: number;
  toMs?: number;
}

function filtered(db: Kysely<DB>, projectId: string, f: ActivityFilters) {
  let q = db.selectFrom("events as e").where("e.project_id", "=", projectId);
  if (f.fromMs !== undefined) q = q.where("e.id", ">=", idAtTime(f.fromMs));
  if (f.toMs !== undefined) q = q.where("e.id", "<", idAtTime(f.toMs + 1)); // `to` is inclusive
  if (f.contactId) q = q.where("e.contact_id", "=", f.contactId);
  if (f.name) q = q.where("e.name", "=", f.name);
  if (f.types?.length) {
    const names = f.types.filter((t) => t !== "event");
    const wantClient = f.types.includes("event");
    q = q.where((eb) => {
      const ors = [];
      if (names.length) ors.push(eb("e.name", "in", names));
      if (wantClient) ors.push(eb.not(eb.or(SYSTEM_PATTERNS.map((p) => dialect().glob("e.name", p)))));
      return eb.or(ors);
    });
  }
  return q;
}

export function listActivity(db: Kysely<DB>, projectId: string, f: ActivityFilters, beforeId: string | null, limit: number) {
  let q = filtered(db, projectId, f)
    .leftJoin("contacts as c", "c.id", "e.contact_id")
    .select(["e.id", "e.name", "e.contact_id", "e.email_id", "e.data", "e.created_at", "c.email as contact_email"]);
  if (beforeId) q = q.where("e.id", "<", beforeId);
  return q.orderBy("e.id", "desc").limit(limit + 1).execute();
}

export type ActivityRow = Awaited<ReturnType<typeof listActivity>>[number];

/** Counts a filtered feed that has no rollup (a contact's events): one pass over the (contact_id, id) index. */
export async function countActivity(db: Kysely<DB>, projectId: string, f: ActivityFilters): Promise<number> {
  return countRows(filtered(db, projectId, f));
}

/** Emails waiting for a (re)try and import/bulk jobs still queued: the upcoming work that exists now. */
export function upcomingEmails(db: Kysely<DB>, projectId: string, limit: number) {
  return db
    .selectFrom("emails")
    .select(["id", "to_email", "contact_id", "status", "attempts", "next_attempt_at", "campaign_id", "last_reply"])
    .where("project_id", "=", projectId)
    .where("status", "in", ["PENDING", "DEFERRED"])
    .orderBy("next_attempt_at")
    .limit(limit)
    .execute();
}

export function upcomingJobs(db: Kysely<DB>, projectId: string, limit: number, hiddenTypes: readonly string[]) {
  let q = db
    .selectFrom("jobs")
    .select(["id", "type", "state", "run_at", "progress"])
    .where("project_id", "=", projectId)
    .where("state", "in", ["waiting", "active"]);
  if (hiddenTypes.length) q = q.where("type", "not in", hiddenTypes);
  return q
    .orderBy("run_at")
    .limit(limit)
    .execute();
}

/**
 * Events: the one table of client events (/v1/track) and system events (contact.subscribed,
 * email.*, segment.<slug>.entry/exit). Writers call recordEvent inside their own transaction and,
 * after it commits, notifyEvents, which wakes the event feed (src/jobs/event-feed.ts: workflow
 * triggers, outbound webhooks, analytics rollups).
 */
import type { Kysely, Selectable, Transaction } from "kysely";
import { iso } from "../clock";
import type { AppContext } from "../context";
import type { DB } from "../db";
import type { EventsTable } from "../db/tables/audience";
import { parseData, type Data } from "./data-rules";

export type EventRow = Selectable<EventsTable>;
export type Db = Kysely<DB> | Transaction<DB>;

export const CONTACT_SUBSCRIBED = "contact.subscribed";
export const CONTACT_UNSUBSCRIBED = "contact.unsubscribed";
/** Double opt-in: the contact opened its confirmation link. */
export const CONTACT_CONFIRMED = "contact.confirmed";
export const MAX_EVENT_NAME_LENGTH = 255;

/** Names clients cannot track: `email.*`, contact.(un)subscribed/confirmed, `segment.<slug>.entry|exit` (case-insensitive). */
export function isReservedEventName(name: string): boolean {
  const n = name.trim().toLowerCase();
  return n.startsWith("email.") || n === CONTACT_SUBSCRIBED || n === CONTACT_UNSUBSCRIBED || n === CONTACT_CONFIRMED || /^segment\..+\.(entry|exit)$/.test(n);
}

/** A recorded event as the onEvent hook receives it. */
export interface RecordedEvent {
  projectId: string;
  contactId: string;
  eventId: string;
  name: string;
  data: Data;
}

/** Event ids are UUIDv7 of the service clock: id order is time order, within a millisecond too. */
export const newEventId = (now: number) => Bun.randomUUIDv7(undefined, now);

export interface RecordEventInput {
  projectId: string;
  contactId: string;
  name: string;
  data?: Data | null;
  emailId?: string | null;
}

/** Inserts one event row (inside the caller's transaction when `db` is one). Returns the event id. */
export async function recordEvent(db: Db, ctx: AppContext, input: RecordEventInput): Promise<string> {
  const now = ctx.clock.now();
  const id = newEventId(now);
  await db
    .insertInto("events")
    .values({
      id,
      project_id: input.projectId,
      contact_id: input.contactId,
      name: input.name,
      data: input.data && Object.keys(input.data).length ? JSON.stringify(input.data) : null,
      email_id: input.emailId ?? null,
      created_at: now,
    })
    .execute();
  return id;
}

/**
 * After a commit that recorded events: wakes the event feed, whose consumers (workflow triggers and
 * waits, outbound webhooks, analytics rollups) each take them from the log in their own transaction.
 */
export async function notifyEvents(ctx: AppContext, events: readonly RecordedEvent[]): Promise<void> {
  if (events.length) ctx.feed.wake();
}

/** The event record of the API: `{ id, name, contactId, data, createdAt }`. */
export function viewEvent(row: Pick<EventRow, "id" | "name" | "contact_id" | "data" | "created_at">) {
  return { id: row.id, name: row.name, contactId: row.contact_id, data: parseData(row.data), createdAt: iso(row.created_at)! };
}

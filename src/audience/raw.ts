/**
 * Raw prepared-statement executors of the contact upsert and event insert, for the hot paths
 * (/v1/track micro-batches, CSV import chunks). They run ONLY inside `ctx.store.exclusive` within
 * one sqlite transaction, and decide with the same planner as the Kysely path (planUpsert).
 */
import type { Q } from "../db/raw";
import type { Data } from "./data-rules";
import { newContactRow, normalizeContactEmail, planUpsert, updatedContactRow, type ContactRow, type UpsertInput } from "./contacts";
import { newEventId, type RecordedEvent } from "./events";

const SELECT_BY_EMAIL =
  "SELECT id, project_id, email, subscribed, data, created_at, updated_at FROM contacts WHERE project_id = ? AND email = ?";
// The same row plus the contact's stored segment memberships (ids, space-separated): what the
// tracked-segment follower diffs against, read in the one lookup instead of a second statement.
const SELECT_BY_EMAIL_WITH_MEMBERSHIPS =
  "SELECT id, project_id, email, subscribed, data, created_at, updated_at, (SELECT group_concat(m.segment_id, ' ') FROM segment_members m WHERE m.contact_id = contacts.id) AS memberships FROM contacts WHERE project_id = ? AND email = ?";
// PostgreSQL's spelling of the same (string_agg for group_concat).
const SELECT_BY_EMAIL_WITH_MEMBERSHIPS_PG = SELECT_BY_EMAIL_WITH_MEMBERSHIPS.replace("group_concat(m.segment_id, ' ')", "string_agg(m.segment_id, ' ')");
const INSERT_CONTACT =
  "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)";
// pending_confirmation * (1 - subscribed): a subscribe ends a pending double opt-in.
const UPDATE_CONTACT = "UPDATE contacts SET subscribed = ?, data = ?, updated_at = ?, pending_confirmation = pending_confirmation * (1 - ?) WHERE id = ?";
const INSERT_EVENT =
  "INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)";

export interface RawUpsertResult {
  contact: ContactRow;
  isNew: boolean;
  /** True when an existing contact's row was written (data changed or subscription flipped). */
  changed: boolean;
  vars: Data;
  provided: Data;
  events: RecordedEvent[];
  /** The contact's data after the write, parsed (what tracked segments evaluate in memory). */
  stored: Data;
  /** Top-level data keys the write set or deleted. */
  changedKeys: readonly string[];
  /** The subscription event the write recorded, if it flipped `subscribed`. */
  flip: string | null;
  /** The contact's stored segment memberships before the write (asked with `withMemberships`; empty for a new contact). */
  memberships?: ReadonlySet<string>;
}

export async function upsertContactRaw(q: Q, now: number, input: UpsertInput, opts: { withMemberships?: boolean } = {}): Promise<RawUpsertResult> {
  const email = normalizeContactEmail(input.email);
  const withMemberships = q.engine === "postgres" ? SELECT_BY_EMAIL_WITH_MEMBERSHIPS_PG : SELECT_BY_EMAIL_WITH_MEMBERSHIPS;
  const row = (await q.get<ContactRow & { memberships?: string | null }>(opts.withMemberships ? withMemberships : SELECT_BY_EMAIL, [input.projectId, email])) ?? null;
  let existing: ContactRow | null = row;
  let memberships: ReadonlySet<string> | undefined;
  if (opts.withMemberships) {
    memberships = new Set(row?.memberships ? row.memberships.split(" ") : []);
    if (row) {
      const { memberships: _ids, ...rest } = row;
      existing = rest;
    }
  }
  const plan = planUpsert(existing, input);
  const events: RecordedEvent[] = [];
  let contact: ContactRow;
  if (!existing) {
    contact = newContactRow(input.projectId, email, plan, now);
    await q.run(INSERT_CONTACT, [contact.id, contact.project_id, email, contact.subscribed, contact.data, now, now]);
  } else if (plan.write) {
    contact = updatedContactRow(existing, plan, now);
    await q.run(UPDATE_CONTACT, [contact.subscribed, contact.data, now, contact.subscribed, contact.id]);
  } else {
    contact = existing;
  }
  if (plan.flip) {
    const data = { source: input.source ?? "api" };
    const eventId = await insertEventRaw(q, now, { projectId: input.projectId, contactId: contact.id, name: plan.flip, data });
    events.push({ projectId: input.projectId, contactId: contact.id, eventId, name: plan.flip, data });
  }
  return {
    contact,
    isNew: plan.isNew,
    changed: !plan.isNew && plan.write,
    vars: plan.vars,
    provided: plan.provided,
    events,
    stored: plan.stored,
    changedKeys: plan.changedKeys,
    flip: plan.flip,
    memberships,
  };
}

/** Chunks of multi-row INSERT INTO events (7 parameters a row: well under either engine's limit). */
const EVENTS_PER_STATEMENT = 500;
const insertEventsSql = new Map<number, string>();
function insertEventsText(n: number): string {
  let t = insertEventsSql.get(n);
  if (!t) {
    t = "INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES " + Array(n).fill("(?, ?, ?, ?, ?, ?, ?)").join(", ");
    insertEventsSql.set(n, t);
  }
  return t;
}

/**
 * Several events in as few statements as possible, in the given order (ids are UUIDv7 taken in that
 * order); answers their ids. The set-based sibling of insertEventRaw (the campaign fan-out's suppressed rows).
 */
export async function insertEventsRaw(
  q: Q,
  now: number,
  evs: readonly { projectId: string; contactId: string; name: string; data?: Data | null; emailId?: string | null }[],
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < evs.length; i += EVENTS_PER_STATEMENT) {
    const chunk = evs.slice(i, i + EVENTS_PER_STATEMENT);
    const params: unknown[] = [];
    for (const ev of chunk) {
      const id = newEventId(now);
      ids.push(id);
      const data = ev.data && Object.keys(ev.data).length ? JSON.stringify(ev.data) : null;
      params.push(id, ev.projectId, ev.contactId, ev.name, data, ev.emailId ?? null, now);
    }
    await q.run(insertEventsText(chunk.length), params);
  }
  return ids;
}

export async function insertEventRaw(
  q: Q,
  now: number,
  ev: { projectId: string; contactId: string; name: string; data?: Data | null; emailId?: string | null },
): Promise<string> {
  const id = newEventId(now);
  const data = ev.data && Object.keys(ev.data).length ? JSON.stringify(ev.data) : null;
  await q.run(INSERT_EVENT, [id, ev.projectId, ev.contactId, ev.name, data, ev.emailId ?? null, now]);
  return id;
}

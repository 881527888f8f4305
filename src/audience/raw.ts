/**
 * Raw prepared-statement executors of the contact upsert and event insert, for the hot paths
 * (/v1/track micro-batches, CSV import chunks, /v1/send). They run through `Q` inside the caller's
 * transaction, and decide with the same planner as the Kysely path (planUpsert).
 */
import { multiRowInsert, type Q } from "../db/raw";
import type { Data } from "./data-rules";
import { newContactRow, normalizeContactEmail, planUpsert, updatedContactRow, type ContactRow, type UpsertInput } from "./contacts";
import { newEventId, type RecordedEvent } from "./events";

const SELECT_BY_EMAIL =
  "SELECT id, project_id, email, subscribed, data, created_at, updated_at FROM contacts WHERE project_id = ? AND email = ?";
// The same row plus the contact's stored segment memberships (ids, space-separated): what the
// tracked-segment follower diffs against, read in the one lookup instead of a second statement.
const SELECT_BY_EMAIL_WITH_MEMBERSHIPS =
  "SELECT id, project_id, email, subscribed, data, created_at, updated_at, (SELECT group_concat(m.segment_id, ' ') FROM segment_members m WHERE m.contact_id = contacts.id) AS memberships FROM contacts WHERE project_id = ? AND email = ?";
// PostgreSQL's spelling of the same (string_agg for group_concat), locking the row: another instance's
// write of the same contact waits for this transaction, so neither merges into data the other is replacing.
const SELECT_BY_EMAIL_WITH_MEMBERSHIPS_PG =
  SELECT_BY_EMAIL_WITH_MEMBERSHIPS.replace("group_concat(m.segment_id, ' ')", "string_agg(m.segment_id, ' ')") + " FOR UPDATE OF contacts";
const SELECT_BY_EMAIL_PG = SELECT_BY_EMAIL + " FOR UPDATE";
const INSERT_CONTACT =
  "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)";
// pending_confirmation * (1 - subscribed): a subscribe ends a pending double opt-in.
const UPDATE_CONTACT = "UPDATE contacts SET subscribed = ?, data = ?, updated_at = ?, pending_confirmation = pending_confirmation * (1 - ?) WHERE id = ?";

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
  const pg = q.engine === "postgres";
  const text = opts.withMemberships ? (pg ? SELECT_BY_EMAIL_WITH_MEMBERSHIPS_PG : SELECT_BY_EMAIL_WITH_MEMBERSHIPS) : pg ? SELECT_BY_EMAIL_PG : SELECT_BY_EMAIL;
  const row = (await q.get<ContactRow & { memberships?: string | null }>(text, [input.projectId, email])) ?? null;
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
const insertEventsText = multiRowInsert("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)", 7);

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

/** One event: insertEventsRaw with one row. */
export async function insertEventRaw(
  q: Q,
  now: number,
  ev: { projectId: string; contactId: string; name: string; data?: Data | null; emailId?: string | null },
): Promise<string> {
  return (await insertEventsRaw(q, now, [ev]))[0]!;
}

// ---- PostgreSQL's set-based batch (the /v1/track hot path) -------------------------------------------
// On PostgreSQL every statement is a round trip inside the writer's turn, so a batch of tracks reads
// every contact at once and writes the new contacts and the changed ones in one statement each (arrays
// through unnest), and the events with insertEventsRaw. The planning stays the per-row planner's (audience/track.ts).

/** A contact's key in a batch: its project and lower-cased email. */
export interface ContactKey {
  projectId: string;
  email: string;
}

// Locked (as the per-row read is), in id order so two instances' batches take their locks in one order.
const SELECT_MANY_PG =
  "SELECT c.id, c.project_id, c.email, c.subscribed, c.data, c.created_at, c.updated_at FROM contacts c JOIN unnest($1::text[], $2::text[]) AS k(p, e) ON c.project_id = k.p AND c.email = k.e ORDER BY c.id FOR UPDATE OF c";
const INSERT_CONTACTS_PG =
  "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) SELECT id, p, e, s, d::jsonb, c, u FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::bigint[]) AS t(id, p, e, s, d, c, u)";
// pending_confirmation * (1 - a): `a` is 1 when any of the batch's writes of the contact subscribed it (as the per-row UPDATE does write by write).
const UPDATE_CONTACTS_PG =
  "UPDATE contacts SET subscribed = v.s, data = v.d::jsonb, updated_at = v.u, pending_confirmation = contacts.pending_confirmation * (1 - v.a) FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bigint[]) AS v(id, s, d, u, a) WHERE contacts.id = v.id";

/** PostgreSQL: the stored contacts of `keys` (one statement). */
export async function contactsByEmailPg(q: Q, keys: readonly ContactKey[]): Promise<ContactRow[]> {
  if (!keys.length) return [];
  return q.all<ContactRow>(SELECT_MANY_PG, [keys.map((k) => k.projectId), keys.map((k) => k.email)]);
}

/** PostgreSQL: inserts new contacts (one statement). */
export async function insertContactsPg(q: Q, rows: readonly ContactRow[]): Promise<void> {
  if (!rows.length) return;
  await q.run(INSERT_CONTACTS_PG, [
    rows.map((r) => r.id),
    rows.map((r) => r.project_id),
    rows.map((r) => r.email),
    rows.map((r) => r.subscribed),
    rows.map((r) => r.data),
    rows.map((r) => r.created_at),
    rows.map((r) => r.updated_at),
  ]);
}

/** PostgreSQL: writes each contact's new state (one statement); `subscribedOnce` per row as described above. */
export async function updateContactsPg(q: Q, rows: readonly { row: ContactRow; subscribedOnce: boolean }[]): Promise<void> {
  if (!rows.length) return;
  await q.run(UPDATE_CONTACTS_PG, [
    rows.map((r) => r.row.id),
    rows.map((r) => r.row.subscribed),
    rows.map((r) => r.row.data),
    rows.map((r) => r.row.updated_at),
    rows.map((r) => (r.subscribedOnce ? 1 : 0)),
  ]);
}

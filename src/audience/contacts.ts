/**
 * Contacts as other modules use them: upsert by email (POST /contacts, /v1/track, /v1/send,
 * import), subscription changes (PATCH, bulk jobs, unsubscribe pages, bounces, complaints) and the
 * API view. Every write path decides with the same pure planner (planUpsert / flipEventName), so
 * the data rules and the contact.subscribed/unsubscribed events behave the same everywhere.
 *
 * Decisions: a NEW contact records no subscription event (nothing flipped); omitting `subscribed`
 * for an existing contact keeps its state; every actual flip records the event in the caller's
 * transaction with `data.source` naming the path (api, track, send, import, bulk, …).
 */
import type { Selectable } from "kysely";
import { iso } from "../clock";
import type { AppContext } from "../context";
import type { ContactsTable } from "../db/tables/audience";
import { applyDataRules, parseData, type Data } from "./data-rules";
import { CONTACT_SUBSCRIBED, CONTACT_UNSUBSCRIBED, recordEvent, type Db, type RecordedEvent } from "./events";

export type ContactRow = Selectable<ContactsTable>;

export function viewContact(row: ContactRow) {
  return {
    id: row.id,
    email: row.email,
    subscribed: row.subscribed === 1,
    // Double opt-in: subscribed through the public key, waiting for the confirmation link. Present only
    // then (`pendingConfirmation: true`), so every other contact keeps the spec's exact shape.
    ...(row.subscribed !== 1 && row.pending_confirmation === 1 ? { pendingConfirmation: true as const } : {}),
    data: parseData(row.data),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
  };
}
export type ContactView = ReturnType<typeof viewContact>;

export const newContactId = (now: number) => Bun.randomUUIDv7(undefined, now);

/** The event a subscription change records, or null when nothing changes. */
export function flipEventName(before: boolean, after: boolean): string | null {
  if (before === after) return null;
  return after ? CONTACT_SUBSCRIBED : CONTACT_UNSUBSCRIBED;
}

export interface UpsertInput {
  projectId: string;
  /** Any case; stored lower-case. The caller has validated it. */
  email: string;
  /** Omitted: a new contact gets `defaultSubscribed`, an existing one keeps its state. */
  subscribed?: boolean;
  defaultSubscribed: boolean;
  data?: Data | null;
  /** Recorded as `data.source` of a subscription event (api, track, send, import…). */
  source?: string;
}

export interface UpsertPlan {
  isNew: boolean;
  subscribed: boolean;
  stored: Data;
  /** Whether the row must be written (new, data changed or subscription flipped). */
  write: boolean;
  flip: string | null;
  vars: Data;
  provided: Data;
  /** Top-level data keys this write set or deleted (every stored key of a new contact). */
  changedKeys: readonly string[];
}

/** Pure: what an upsert does to `existing` (null when the contact does not exist yet). */
export function planUpsert(existing: { subscribed: number; data: string } | null, input: UpsertInput): UpsertPlan {
  if (!existing) {
    const r = applyDataRules({}, input.data);
    return {
      isNew: true,
      subscribed: input.subscribed ?? input.defaultSubscribed,
      stored: r.stored,
      write: true,
      flip: null,
      vars: r.vars,
      provided: r.provided,
      changedKeys: r.changedKeys,
    };
  }
  const before = existing.subscribed === 1;
  const after = input.subscribed ?? before;
  const r = applyDataRules(parseData(existing.data), input.data);
  const flip = flipEventName(before, after);
  return { isNew: false, subscribed: after, stored: r.stored, write: r.changed || flip !== null, flip, vars: r.vars, provided: r.provided, changedKeys: r.changedKeys };
}

export const normalizeContactEmail = (email: string) => email.trim().toLowerCase();

/** The row a new contact gets from an upsert plan (shared by the Kysely and the raw hot path). */
export function newContactRow(projectId: string, email: string, plan: UpsertPlan, now: number): ContactRow {
  return {
    id: newContactId(now),
    project_id: projectId,
    email,
    subscribed: plan.subscribed ? 1 : 0,
    data: JSON.stringify(plan.stored),
    created_at: now,
    updated_at: now,
    pending_confirmation: 0,
    confirmation_sent_at: null,
  };
}

/** An existing contact's row after an upsert plan that writes. */
export function updatedContactRow(existing: ContactRow, plan: UpsertPlan, now: number): ContactRow {
  return { ...existing, subscribed: plan.subscribed ? 1 : 0, data: JSON.stringify(plan.stored), updated_at: now };
}

export interface UpsertResult {
  contact: ContactRow;
  isNew: boolean;
  isUpdate: boolean;
  /** Template variables for this send/event: stored data plus non-persistent values. */
  vars: Data;
  /** The data this call supplied after the rules (an event's own data). */
  provided: Data;
  /** Events recorded in the transaction (pass to notifyEvents after commit). */
  events: RecordedEvent[];
}

/** Creates or updates the contact of `email` inside `db` (a transaction when the caller has one). */
export async function upsertContact(db: Db, ctx: AppContext, input: UpsertInput): Promise<UpsertResult> {
  const email = normalizeContactEmail(input.email);
  const now = ctx.clock.now();
  // Locked on PostgreSQL (as audience/raw.ts does): another instance's write of this contact waits for
  // this transaction, so neither merges data into a row the other is replacing.
  const existing = await db
    .selectFrom("contacts")
    .selectAll()
    .where("project_id", "=", input.projectId)
    .where("email", "=", email)
    .$if(ctx.store.engine === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  const plan = planUpsert(existing ?? null, input);
  const events: RecordedEvent[] = [];
  let contact: ContactRow;
  if (!existing) {
    contact = newContactRow(input.projectId, email, plan, now);
    await db.insertInto("contacts").values(contact).execute();
  } else if (plan.write) {
    contact = updatedContactRow(existing, plan, now);
    await db
      .updateTable("contacts")
      .set({ subscribed: contact.subscribed, ...(contact.subscribed === 1 ? { pending_confirmation: 0 } : {}), data: contact.data, updated_at: now })
      .where("id", "=", existing.id)
      .execute();
  } else {
    contact = existing;
  }
  if (plan.flip) {
    const data = { source: input.source ?? "api" };
    const eventId = await recordEvent(db, ctx, { projectId: input.projectId, contactId: contact.id, name: plan.flip, data });
    events.push({ projectId: input.projectId, contactId: contact.id, eventId, name: plan.flip, data });
  }
  return { contact, isNew: plan.isNew, isUpdate: !plan.isNew, vars: plan.vars, provided: plan.provided, events };
}

export interface SetSubscribedInput {
  projectId: string;
  contactId: string;
  subscribed: boolean;
  /** Recorded as `data.source` of the event (api, bulk, import, unsubscribe-page, bounce, complaint…). */
  source?: string;
  /** Extra event data (e.g. the email id of a bounce). */
  emailId?: string | null;
}

export interface SetSubscribedResult {
  contact: ContactRow;
  changed: boolean;
  events: RecordedEvent[];
}

/** Sets a contact's subscription; records the flip event only on an actual change. Null when the contact is not in the project. */
export async function setSubscribed(db: Db, ctx: AppContext, input: SetSubscribedInput): Promise<SetSubscribedResult | null> {
  const row = await db
    .selectFrom("contacts")
    .selectAll()
    .where("id", "=", input.contactId)
    .where("project_id", "=", input.projectId)
    .executeTakeFirst();
  if (!row) return null;
  const flip = flipEventName(row.subscribed === 1, input.subscribed);
  if (!flip) return { contact: row, changed: false, events: [] };
  const now = ctx.clock.now();
  const subscribed = input.subscribed ? 1 : 0;
  // A subscribe by any path ends a pending double opt-in (pendingConfirmation).
  await db.updateTable("contacts").set({ subscribed, ...(subscribed === 1 ? { pending_confirmation: 0 } : {}), updated_at: now }).where("id", "=", row.id).execute();
  const data = { source: input.source ?? "api" };
  const eventId = await recordEvent(db, ctx, {
    projectId: input.projectId,
    contactId: row.id,
    name: flip,
    data,
    emailId: input.emailId ?? null,
  });
  return {
    contact: { ...row, subscribed, updated_at: now },
    changed: true,
    events: [{ projectId: input.projectId, contactId: row.id, eventId, name: flip, data }],
  };
}

// The feedback loop's view of the audience (contacts, events) and of sender domains: one narrow
// adapter over the audience services, so the rest of the module speaks in small typed calls.
import type { Kysely, Transaction } from "kysely";
import type { AppContext } from "../../context";
import type { DB } from "../../db";
import * as contacts from "../../audience/contacts";
import * as events from "../../audience/events";

export type Conn = Kysely<DB> | Transaction<DB>;
/** An event written inside a transaction, announced (notifyEvents wakes the event feed) after the commit. */
export type PendingEvent = events.RecordedEvent;
export { notifyEvents } from "../../audience/events";

export interface ContactRef {
  id: string;
  email: string;
  subscribed: boolean;
}

const ref = (r: { id: string; email: string; subscribed: number }): ContactRef => ({ id: r.id, email: r.email, subscribed: r.subscribed === 1 });

export async function findContact(db: Conn, projectId: string, contactId: string): Promise<ContactRef | null> {
  const r = await db.selectFrom("contacts").select(["id", "email", "subscribed"]).where("project_id", "=", projectId).where("id", "=", contactId).executeTakeFirst();
  return r ? ref(r) : null;
}

export async function findContactByEmail(db: Conn, projectId: string, email: string): Promise<ContactRef | null> {
  const r = await db
    .selectFrom("contacts")
    .select(["id", "email", "subscribed"])
    .where("project_id", "=", projectId)
    .where("email", "=", contacts.normalizeContactEmail(email))
    .executeTakeFirst();
  return r ? ref(r) : null;
}

export async function recordEvent(
  db: Conn,
  ctx: AppContext,
  ev: { projectId: string; contactId: string; name: string; data?: Record<string, unknown>; emailId?: string | null },
): Promise<PendingEvent> {
  const data = ev.data ?? {};
  const eventId = await events.recordEvent(db, ctx, { projectId: ev.projectId, contactId: ev.contactId, name: ev.name, data, emailId: ev.emailId ?? null });
  return { projectId: ev.projectId, contactId: ev.contactId, eventId, name: ev.name, data };
}

/** Sets `subscribed`; on an actual flip records contact.subscribed / contact.unsubscribed. */
export async function setSubscribed(
  db: Conn,
  ctx: AppContext,
  input: { projectId: string; contactId: string; subscribed: boolean; source?: string; emailId?: string | null },
): Promise<PendingEvent[]> {
  const r = await contacts.setSubscribed(db, ctx, input);
  return r?.events ?? [];
}

/** The contact of an address, created when missing: unsubscribed (writing to us is not consent to marketing). */
export async function ensureContact(db: Conn, ctx: AppContext, projectId: string, email: string): Promise<{ contact: ContactRef; events: PendingEvent[] }> {
  const r = await contacts.upsertContact(db, ctx, { projectId, email, defaultSubscribed: false, source: "inbound" });
  return { contact: ref(r.contact), events: r.events };
}

// ---- sender domains ----------------------------------------------------------------------------


/** Projects for which `domain` is a VERIFIED sender domain (index domains_domain_status). */
export async function projectsWithVerifiedDomain(db: Conn, domain: string): Promise<string[]> {
  const rows = await db.selectFrom("domains").select("project_id").where("domain", "=", domain.toLowerCase()).where("status", "=", "VERIFIED").execute();
  return rows.map((x) => x.project_id);
}

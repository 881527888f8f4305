// The feedback loop's view of the audience (contacts, events) and of sender domains.
// One narrow adapter so the rest of the module does not care where these live.
// TEMPORARY: until issue 3 (contacts/events) is on main, the audience calls are minimal
// implementations over the agreed schema; after the merge they delegate to the real services.
import { sql, type Kysely, type Transaction } from "kysely";
import type { AppContext } from "../../context";
import type { DB } from "../../db";

export type Conn = Kysely<DB> | Transaction<DB>;

export interface ContactRef {
  id: string;
  email: string;
  subscribed: boolean;
}

/** An event written inside a transaction, to announce (ctx.hooks.onEvent) after the commit. */
export interface PendingEvent {
  projectId: string;
  contactId: string;
  eventId: string;
  name: string;
  data: Record<string, unknown>;
}

export async function findContact(db: Conn, projectId: string, contactId: string): Promise<ContactRef | null> {
  const r = await sql<{ id: string; email: string; subscribed: number }>`
    SELECT id, email, subscribed FROM contacts WHERE project_id = ${projectId} AND id = ${contactId}`.execute(db);
  const row = r.rows[0];
  return row ? { id: row.id, email: row.email, subscribed: !!row.subscribed } : null;
}

export async function findContactByEmail(db: Conn, projectId: string, email: string): Promise<ContactRef | null> {
  const r = await sql<{ id: string; email: string; subscribed: number }>`
    SELECT id, email, subscribed FROM contacts WHERE project_id = ${projectId} AND email = ${email.toLowerCase()}`.execute(db);
  const row = r.rows[0];
  return row ? { id: row.id, email: row.email, subscribed: !!row.subscribed } : null;
}

export async function recordEvent(
  db: Conn,
  ctx: AppContext,
  ev: { projectId: string; contactId: string; name: string; data?: Record<string, unknown>; emailId?: string | null },
): Promise<PendingEvent> {
  const id = Bun.randomUUIDv7();
  const data = ev.data ?? {};
  await sql`INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at)
    VALUES (${id}, ${ev.projectId}, ${ev.contactId}, ${ev.name}, ${JSON.stringify(data)}, ${ev.emailId ?? null}, ${ctx.clock.now()})`.execute(db);
  return { projectId: ev.projectId, contactId: ev.contactId, eventId: id, name: ev.name, data };
}

/** Sets `subscribed`; on an actual flip records contact.subscribed / contact.unsubscribed. */
export async function setSubscribed(
  db: Conn,
  ctx: AppContext,
  input: { projectId: string; contactId: string; subscribed: boolean; source?: string },
): Promise<PendingEvent[]> {
  const c = await findContact(db, input.projectId, input.contactId);
  if (!c || c.subscribed === input.subscribed) return [];
  await sql`UPDATE contacts SET subscribed = ${input.subscribed ? 1 : 0}, updated_at = ${ctx.clock.now()}
    WHERE project_id = ${input.projectId} AND id = ${input.contactId}`.execute(db);
  const ev = await recordEvent(db, ctx, {
    projectId: input.projectId,
    contactId: input.contactId,
    name: input.subscribed ? "contact.subscribed" : "contact.unsubscribed",
    data: input.source ? { source: input.source } : {},
  });
  return [ev];
}

/** The contact of an address, created (unsubscribed: writing to us is not consent) when missing. */
export async function ensureContact(db: Conn, ctx: AppContext, projectId: string, email: string): Promise<ContactRef> {
  const found = await findContactByEmail(db, projectId, email);
  if (found) return found;
  const id = Bun.randomUUIDv7();
  const now = ctx.clock.now();
  await sql`INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at)
    VALUES (${id}, ${projectId}, ${email.toLowerCase()}, 0, '{}', ${now}, ${now})`.execute(db);
  return { id, email: email.toLowerCase(), subscribed: false };
}

/** Announces events after their transaction committed (workflow triggers live behind the hook). */
export async function notifyEvents(ctx: AppContext, events: PendingEvent[]): Promise<void> {
  const hook = ctx.hooks.onEvent;
  if (!hook) return;
  for (const ev of events) {
    try {
      await hook(ctx, ev);
    } catch (err) {
      ctx.log.error("onEvent hook failed", { event: ev.name, eventId: ev.eventId, error: String((err as Error)?.stack ?? err) });
    }
  }
}

// ---- sender domains ----------------------------------------------------------------------------

/** The bounce subdomain of a sender domain (its MX points at MAILSVC_HOSTNAME). */
export { bounceDomainFor } from "../domains/service";

/** Projects for which `domain` is a VERIFIED sender domain (index domains_domain_status). */
export async function projectsWithVerifiedDomain(db: Conn, domain: string): Promise<string[]> {
  const rows = await db.selectFrom("domains").select("project_id").where("domain", "=", domain.toLowerCase()).where("status", "=", "VERIFIED").execute();
  return rows.map((x) => x.project_id);
}

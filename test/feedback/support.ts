// Rows the feedback loop acts on, inserted directly so a test controls their state (no delivery needed).
import { sql } from "kysely";
import { upsertContact } from "../../src/audience/contacts";
import type { TestServer } from "../support/server";

/** A contact created through the audience service (as the API would). */
export async function insertContact(srv: TestServer, projectId: string, email: string, subscribed = true): Promise<string> {
  const r = await upsertContact(srv.ctx.db, srv.ctx, { projectId, email, subscribed, defaultSubscribed: true });
  return r.contact.id;
}

/** A sender domain in VERIFIED state (the DNS dance is the domains module's own test). */
export async function verifiedDomain(srv: TestServer, projectId: string, domain: string, status: "VERIFIED" | "PENDING" | "FAILED" = "VERIFIED") {
  const now = srv.clock.now();
  await srv.ctx.db
    .insertInto("domains")
    .values({
      id: Bun.randomUUIDv7(),
      project_id: projectId,
      domain,
      status,
      dkim_selector: "mailsvc",
      dkim_private_key: "unused",
      dkim_public_key: "unused",
      verified_at: now,
      last_checked_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export interface EmailFixture {
  projectId: string;
  contactId: string | null;
  to: string;
  type?: "TRANSACTIONAL" | "MARKETING" | "HEADLESS";
  status?: string;
  from?: string;
  html?: string;
  campaignId?: string;
}

/** One email_contents + emails pair, as the engine would leave it after delivery. */
export async function insertEmail(srv: TestServer, f: EmailFixture): Promise<string> {
  const now = srv.clock.now();
  const contentId = Bun.randomUUIDv7();
  const id = Bun.randomUUIDv7();
  await srv.ctx.db
    .insertInto("email_contents")
    .values({
      id: contentId,
      project_id: f.projectId,
      subject: "Hello",
      html: f.html ?? "<p>Hello</p>",
      from_email: f.from ?? "news@example.com",
      from_name: null,
      reply_to: null,
      type: f.type ?? "MARKETING",
      headers: null,
      attachments: null,
      created_at: now,
    })
    .execute();
  await srv.ctx.db
    .insertInto("emails")
    .values({
      id,
      project_id: f.projectId,
      content_id: contentId,
      contact_id: f.contactId,
      to_email: f.to,
      to_name: null,
      vars: null,
      status: (f.status ?? "DELIVERED") as any,
      source_type: f.campaignId ? "CAMPAIGN" : "TRANSACTIONAL",
      campaign_id: f.campaignId ?? null,
      template_id: null,
      workflow_execution_id: null,
      message_id: `<${id}@mailsvc.test>`,
      next_attempt_at: null,
      lease_until: null,
      last_reply: null,
      mx_host: null,
      created_at: now,
      updated_at: now,
      sent_at: now,
      delivered_at: now,
      opened_at: null,
      clicked_at: null,
      bounced_at: null,
      complained_at: null,
      failed_at: null,
    })
    .execute();
  return id;
}

export async function emailRow(srv: TestServer, id: string) {
  return srv.ctx.db.selectFrom("emails").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

export async function contactRow(srv: TestServer, id: string) {
  const r = await sql<{ id: string; email: string; subscribed: number }>`SELECT id, email, subscribed FROM contacts WHERE id = ${id}`.execute(srv.ctx.db);
  return r.rows[0]!;
}

export async function contactByEmail(srv: TestServer, projectId: string, email: string) {
  const r = await sql<{ id: string; email: string; subscribed: number }>`
    SELECT id, email, subscribed FROM contacts WHERE project_id = ${projectId} AND email = ${email}`.execute(srv.ctx.db);
  return r.rows[0];
}

export async function eventsOf(srv: TestServer, contactId: string): Promise<{ name: string; data: any; email_id: string | null }[]> {
  const r = await sql<{ name: string; data: string; email_id: string | null }>`
    SELECT name, data, email_id FROM events WHERE contact_id = ${contactId} ORDER BY id`.execute(srv.ctx.db);
  return r.rows.map((x) => ({ ...x, data: x.data ? JSON.parse(x.data) : {} }));
}

export async function suppression(srv: TestServer, projectId: string, email: string) {
  return srv.ctx.db.selectFrom("suppressions").selectAll().where("project_id", "=", projectId).where("email", "=", email).executeTakeFirst();
}

/** Pulls href values of <a> tags out of HTML (a test's view of a delivered body). */
export function hrefs(html: string): string[] {
  return [...html.matchAll(/<a\b[^>]*\bhref="([^"]*)"/gi)].map((m) => m[1]!.replace(/&amp;/g, "&"));
}

export function imgSrcs(html: string): string[] {
  return [...html.matchAll(/<img\b[^>]*\bsrc="([^"]*)"/gi)].map((m) => m[1]!.replace(/&amp;/g, "&"));
}

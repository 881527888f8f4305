// How emails enter the outbox (for /v1/send, account emails and later campaigns and workflows):
// insert the shared content once, then one row per recipient, inside the caller's transaction;
// after the commit call wakeOutbox(ctx). A row is due when next_attempt_at <= now.
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../db";
import type { EmailSourceType, EmailStatus } from "../db/tables/delivery";
import type { AttachmentInput } from "./compose";
import { messageIdFor } from "./build";

type Db = Kysely<DB> | Transaction<DB>;

export interface NewContent {
  projectId: string | null;
  /** Template sources (rendered per recipient at delivery time). */
  subject: string;
  html: string;
  text?: string | null;
  fromEmail: string;
  fromName?: string | null;
  replyTo?: string | null;
  type?: "TRANSACTIONAL" | "MARKETING" | "HEADLESS";
  headers?: Record<string, string> | null;
  attachments?: AttachmentInput[] | null;
}

export async function insertContent(db: Db, now: number, c: NewContent): Promise<string> {
  const id = Bun.randomUUIDv7();
  await db
    .insertInto("email_contents")
    .values({
      id,
      project_id: c.projectId,
      subject: c.subject,
      html: c.html,
      text: c.text ?? null,
      from_email: c.fromEmail,
      from_name: c.fromName ?? null,
      reply_to: c.replyTo ?? null,
      type: c.type ?? "TRANSACTIONAL",
      headers: c.headers && Object.keys(c.headers).length ? JSON.stringify(c.headers) : null,
      attachments: c.attachments && c.attachments.length ? JSON.stringify(c.attachments) : null,
      created_at: now,
    })
    .execute();
  return id;
}

export interface NewEmail {
  projectId: string | null;
  contentId: string;
  contactId: string | null;
  toEmail: string;
  toName?: string | null;
  /** Render variables of this recipient (contact fields, data incl. non-persistent values). */
  vars?: Record<string, unknown> | null;
  sourceType: EmailSourceType;
  campaignId?: string | null;
  templateId?: string | null;
  workflowExecutionId?: string | null;
  /** PENDING (default) or SUPPRESSED (recorded, never attempted). */
  status?: Extract<EmailStatus, "PENDING" | "SUPPRESSED">;
  /** When the first attempt is due (default: now). */
  runAt?: number;
}

/** Our MAILSVC_HOSTNAME is needed for the Message-ID, so callers pass it. */
export async function insertEmails(db: Db, now: number, hostname: string, rows: NewEmail[]): Promise<string[]> {
  if (!rows.length) return [];
  const ids = rows.map(() => Bun.randomUUIDv7());
  const values = rows.map((e, i) => {
    const status = e.status ?? "PENDING";
    return {
      id: ids[i]!,
      project_id: e.projectId,
      content_id: e.contentId,
      contact_id: e.contactId,
      to_email: e.toEmail,
      to_name: e.toName ?? null,
      vars: e.vars ? JSON.stringify(e.vars) : null,
      status,
      source_type: e.sourceType,
      campaign_id: e.campaignId ?? null,
      template_id: e.templateId ?? null,
      workflow_execution_id: e.workflowExecutionId ?? null,
      message_id: messageIdFor(ids[i]!, hostname),
      next_attempt_at: status === "PENDING" ? (e.runAt ?? now) : null,
      last_reply: status === "SUPPRESSED" ? "address is suppressed (earlier hard bounce or complaint)" : null,
      lease_until: null,
      mx_host: null,
      created_at: now,
      updated_at: now,
      sent_at: null,
      delivered_at: null,
      opened_at: null,
      clicked_at: null,
      bounced_at: null,
      complained_at: null,
      failed_at: null,
    };
  });
  // SQLite caps bound parameters per statement; 25 columns x 500 rows stays well under it.
  for (let i = 0; i < values.length; i += 500) await db.insertInto("emails").values(values.slice(i, i + 500)).execute();
  return ids;
}

/** The addresses among `emails` (lower-case) that are suppressed in the project. */
export async function suppressedAddresses(db: Db, projectId: string, emails: string[]): Promise<Set<string>> {
  if (!emails.length) return new Set();
  const rows = await db.selectFrom("suppressions").select("email").where("project_id", "=", projectId).where("email", "in", emails).execute();
  return new Set(rows.map((r) => r.email));
}

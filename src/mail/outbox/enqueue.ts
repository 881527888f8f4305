// How emails enter the outbox (for /v1/send, account emails and later campaigns and workflows):
// insert the shared content once, then one row per recipient, in the caller's transaction; after
// the commit call wakeOutbox(ctx). A row is due when next_attempt_at <= now.
// One email insert (insertEmailsRaw: chunks of multi-row VALUES on the caller's transaction, the hot
// /v1/send and fan-out paths; insertEmailRaw is its one-row call); insertEmails runs it on a Kysely transaction.
import { multiRowInsert, qOf, type Q } from "../../db/raw";
import { dialect } from "../../db/dialect";
import type { Insertable, Kysely, Transaction } from "kysely";
import type { DB } from "../../db";
import type { EmailContentsTable, EmailSourceType, EmailStatus, EmailsTable } from "../../db/tables/delivery";
import type { AttachmentInput } from "../message/compose";
import { messageIdFor } from "../message/build";
import { SUPPRESSED_REPLY } from "./suppressions";
import { newEventId, type RecordedEvent } from "../../audience/events";
import { insertEventsRaw } from "../../audience/raw";

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
  /** Never tracked, whatever the project's tracking mode (a campaign's test send). */
  noTracking?: boolean;
  /** The open pixel (the campaign's, template's or workflow step's trackOpens): null/absent = the project's mode. */
  trackOpens?: boolean | null;
}

export interface NewEmail {
  projectId: string | null;
  contentId: string;
  contactId: string | null;
  toEmail: string;
  toName?: string | null;
  /** Render variables of this recipient (contact fields, data incl. non-persistent values). */
  vars?: Record<string, unknown> | null;
  /** The same variables already serialized (campaign fan-out: the contact's stored data JSON). */
  varsJson?: string | null;
  sourceType: EmailSourceType;
  campaignId?: string | null;
  templateId?: string | null;
  workflowExecutionId?: string | null;
  /** PENDING (default) or SUPPRESSED (recorded, never attempted). */
  status?: Extract<EmailStatus, "PENDING" | "SUPPRESSED">;
  /** When the first attempt is due (default: now). */
  runAt?: number;
  /** Outbox claim priority: 0 (default) before 1 (campaign mail). */
  priority?: number;
}

function contentRow(id: string, now: number, c: NewContent): Insertable<EmailContentsTable> & { type: string } {
  return {
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
    ...(c.noTracking ? { no_tracking: 1 } : {}),
    ...(c.trackOpens === true || c.trackOpens === false ? { track_opens: c.trackOpens ? 1 : 0 } : {}),
  };
}

function emailRow(id: string, now: number, hostname: string, e: NewEmail): Insertable<EmailsTable> {
  const status = e.status ?? "PENDING";
  return {
    id,
    project_id: e.projectId,
    content_id: e.contentId,
    contact_id: e.contactId,
    to_email: e.toEmail,
    to_name: e.toName ?? null,
    vars: e.varsJson ?? (e.vars ? JSON.stringify(e.vars) : null),
    status,
    source_type: e.sourceType,
    campaign_id: e.campaignId ?? null,
    template_id: e.templateId ?? null,
    workflow_execution_id: e.workflowExecutionId ?? null,
    message_id: messageIdFor(id, hostname),
    next_attempt_at: status === "PENDING" ? (e.runAt ?? now) : null,
    last_reply: status === "SUPPRESSED" ? SUPPRESSED_REPLY : null,
    created_at: now,
    updated_at: now,
    priority: e.priority ?? 0,
  };
}

export async function insertContent(db: Db, now: number, c: NewContent): Promise<string> {
  const id = Bun.randomUUIDv7();
  await db.insertInto("email_contents").values(contentRow(id, now, c)).execute();
  return id;
}

/** The `email.suppressed` event of an email recorded SUPPRESSED at enqueue (never attempted). */
function suppressedEvent(id: string, e: NewEmail): Omit<RecordedEvent, "eventId"> | null {
  if ((e.status ?? "PENDING") !== "SUPPRESSED" || !e.projectId || !e.contactId) return null;
  const data = { emailId: id, to: e.toEmail, ...(e.campaignId ? { campaignId: e.campaignId } : {}), reply: SUPPRESSED_REPLY };
  return { projectId: e.projectId, contactId: e.contactId, name: "email.suppressed", data };
}

/**
 * Our MAILSVC_HOSTNAME is needed for the Message-ID, so callers pass it. A SUPPRESSED row records
 * its `email.suppressed` event in the same transaction; pass `recorded` to notify it after the commit.
 */
export async function insertEmails(db: Db, now: number, hostname: string, rows: NewEmail[], recorded?: RecordedEvent[]): Promise<string[]> {
  // The one email insert (insertEmailsRaw), on the caller's transaction.
  return insertEmailsRaw(qOf(db, dialect().engine), now, hostname, rows, recorded);
}

// ---- raw flavour (through `Q`, on the caller's transaction) ---------------------------------------

const CONTENT_COLUMNS = ["id", "project_id", "subject", "html", "text", "from_email", "from_name", "reply_to", "type", "headers", "attachments", "created_at", "track_opens"] as const;
const EMAIL_COLUMNS = [
  "id",
  "project_id",
  "content_id",
  "contact_id",
  "to_email",
  "to_name",
  "vars",
  "status",
  "source_type",
  "campaign_id",
  "template_id",
  "workflow_execution_id",
  "message_id",
  "next_attempt_at",
  "last_reply",
  "created_at",
  "updated_at",
  "priority",
] as const;
const INSERT_CONTENT = multiRowInsert(`INSERT INTO email_contents (${CONTENT_COLUMNS.join(", ")})`, CONTENT_COLUMNS.length)(1);

export async function insertContentRaw(q: Q, now: number, c: NewContent): Promise<string> {
  const id = Bun.randomUUIDv7();
  const row = contentRow(id, now, c) as Record<string, unknown>;
  await q.run(INSERT_CONTENT, CONTENT_COLUMNS.map((k) => row[k] ?? null));
  return id;
}

/** One email row: insertEmailsRaw with one row (the /v1/send hot path). */
export async function insertEmailRaw(q: Q, now: number, hostname: string, e: NewEmail, recorded?: RecordedEvent[]): Promise<string> {
  return (await insertEmailsRaw(q, now, hostname, [e], recorded))[0]!;
}

/** Rows per multi-row INSERT INTO emails: 18 parameters a row, well under PostgreSQL's 65,535 and SQLite's 32,766. */
const EMAILS_PER_STATEMENT = 500;
const insertEmailsText = multiRowInsert(`INSERT INTO emails (${EMAIL_COLUMNS.join(", ")})`, EMAIL_COLUMNS.length);

/**
 * THE email insert: rows (built by emailRow) in chunks of multi-row VALUES, in the caller's
 * transaction, then the `email.suppressed` events of the SUPPRESSED rows (multi-row too), in the
 * rows' order; `recorded` gets them for notification after the commit. Answers the ids in the rows' order.
 */
export async function insertEmailsRaw(q: Q, now: number, hostname: string, rows: readonly NewEmail[], recorded?: RecordedEvent[]): Promise<string[]> {
  const ids: string[] = [];
  const events: (Omit<RecordedEvent, "eventId"> & { emailId: string })[] = [];
  for (let i = 0; i < rows.length; i += EMAILS_PER_STATEMENT) {
    const chunk = rows.slice(i, i + EMAILS_PER_STATEMENT);
    const params: unknown[] = [];
    for (const e of chunk) {
      const id = Bun.randomUUIDv7();
      ids.push(id);
      const row = emailRow(id, now, hostname, e) as Record<string, unknown>;
      for (const k of EMAIL_COLUMNS) params.push(row[k] ?? null);
      const ev = suppressedEvent(id, e);
      if (ev) events.push({ ...ev, emailId: id });
    }
    await q.run(insertEmailsText(chunk.length), params);
  }
  if (events.length) {
    const eventIds = await insertEventsRaw(q, now, events);
    if (recorded) events.forEach(({ emailId: _, ...ev }, i) => recorded.push({ ...ev, eventId: eventIds[i]! }));
  }
  return ids;
}

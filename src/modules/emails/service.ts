import { iso } from "../../clock";
import type { AppContext } from "../../context";
import type { EmailStatus } from "../../db/tables/delivery";
import { AppError, notFound } from "../../http/errors";
import { cursorPage, type CursorParams } from "../../http/pagination";
import { renderSubject } from "../../mail/message/render";
import { rawMessage } from "../../mail/outbox/sandbox";
import { messageView } from "./message";
import { countEmails, getEmail, listEmails, type EmailFilters, type EmailLogRow } from "./queries";

export const EMAIL_STATUSES: EmailStatus[] = [
  "PENDING",
  "SENDING",
  "SENT",
  "DELIVERED",
  "DEFERRED",
  "OPENED",
  "CLICKED",
  "BOUNCED",
  "COMPLAINED",
  "FAILED",
  "SUPPRESSED",
  "CANCELLED",
];

function subjectOf(row: EmailLogRow): string {
  let vars: Record<string, unknown> = {};
  try {
    vars = row.vars ? JSON.parse(row.vars) : {};
  } catch {}
  try {
    return renderSubject(row.subject, vars);
  } catch {
    return row.subject;
  }
}

/** The per-message log entry: everything needed to answer "did my email arrive, and if not, why?". */
export function viewEmail(row: EmailLogRow) {
  const out: Record<string, unknown> = {
    id: row.id,
    to: row.to_email,
    from: row.from_email,
    subject: subjectOf(row),
    status: row.status,
    sourceType: row.source_type,
    contactId: row.contact_id,
    attempts: row.attempts,
    messageId: row.message_id,
    createdAt: iso(row.created_at),
  };
  const optional: Record<string, unknown> = {
    toName: row.to_name,
    fromName: row.from_name,
    type: row.type,
    campaignId: row.campaign_id,
    templateId: row.template_id,
    lastReply: row.last_reply,
    mxHost: row.mx_host,
    nextAttemptAt: row.status === "DEFERRED" || row.status === "PENDING" ? iso(row.next_attempt_at) : null,
    sentAt: iso(row.sent_at),
    deliveredAt: iso(row.delivered_at),
    openedAt: iso(row.opened_at),
    clickedAt: iso(row.clicked_at),
    bouncedAt: iso(row.bounced_at),
    complainedAt: iso(row.complained_at),
    failedAt: iso(row.failed_at),
  };
  for (const [k, v] of Object.entries(optional)) if (v !== null && v !== undefined) out[k] = v;
  // Captured by the sandbox (never sent): GET /emails/:id/raw has the message.
  if (row.sandbox) out.sandbox = true;
  return out;
}

export async function list(ctx: AppContext, projectId: string, filters: EmailFilters, page: CursorParams) {
  const rows = await listEmails(ctx.db, projectId, filters, page.after?.id ?? null, page.limit);
  const total = page.isFirstPage ? await countEmails(ctx.db, projectId, filters) : 0;
  return cursorPage(rows, page, { total: () => total, sortValue: () => null, id: (r) => r.id, map: viewEmail });
}

const NOT_KEPT = () =>
  new AppError(404, "NOT_FOUND", "Message not found: only sandbox mail is kept, and other mail while MAILSVC_KEEP_RAW is set", {
    suggestion: "Turn the project's sandbox on, or set MAILSVC_KEEP_RAW=true, before sending",
  });

/** The message as handed to SMTP, while the project keeps it (sandbox mail always; other mail with MAILSVC_KEEP_RAW). */
export async function raw(ctx: AppContext, projectId: string, id: string): Promise<Buffer> {
  const kept = await rawMessage(ctx, projectId, id);
  if (!kept) throw NOT_KEPT();
  return kept.raw;
}

/** The kept message read back for the dashboard's email view (headers, HTML, text, attachments, DKIM). */
export async function message(ctx: AppContext, projectId: string, id: string) {
  const row = await getEmail(ctx.db, projectId, id);
  if (!row) throw notFound("Email");
  const kept = await rawMessage(ctx, projectId, id);
  if (!kept) throw NOT_KEPT();
  return { email: viewEmail(row), message: await messageView(ctx, projectId, kept.raw) };
}

export async function get(ctx: AppContext, projectId: string, id: string) {
  const row = await getEmail(ctx.db, projectId, id);
  if (!row) throw notFound("Email");
  return viewEmail(row);
}

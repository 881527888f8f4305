// POST /v1/send: one transactional email per recipient, persisted (contact upserts, the shared
// content, one email row per recipient) in ONE transaction, then handed to the outbox.
import { atomic } from "../../db/raw";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { dataErrors } from "../../audience/data-rules";
import { upsertContactRaw } from "../../audience/raw";
import { notifyEvents, type RecordedEvent } from "../../audience/events";
import { contactsChanged } from "../../audience/changes";
import { payloadTooLarge, validationError, type FieldError } from "../../http/errors";
import { isValidEmail } from "../../net/email-address";
import type { AttachmentInput } from "../../mail/message/compose";
import type { EmailSourceType } from "../../db/tables/delivery";
import { checkCustomHeaders } from "../../mail/message/custom-headers";
import { insertContentRaw, insertEmailRaw } from "../../mail/outbox/enqueue";
import { suppressedAmongRaw } from "../../mail/outbox/suppressions";
import { wakeOutbox } from "../../mail/outbox/outbox";
import { isSandbox } from "../../mail/outbox/sandbox";
import { consumeQuotaRaw } from "../billing/quota";
import { assertSenderAllowed } from "../domains/service";
import { assertTemplateSyntax, getTemplate, trackOpensOf, type TemplateRow } from "../templates/service";
import { parseMailbox } from "../../net/email-address";

export type Mailbox = { name?: string | null; email: string };

export interface SendInput {
  to: string | Mailbox | (string | Mailbox)[];
  subject?: string;
  body?: string;
  template?: string;
  from?: string | Mailbox;
  name?: string | null;
  subscribed?: boolean;
  /** An object (checked by `validate`: the schema takes any value so that nothing coerces it). */
  data?: unknown;
  /** An object of string values (checked by `validate`). */
  headers?: unknown;
  reply?: string | null;
  attachments?: (Omit<AttachmentInput, "contentType"> & { contentType?: string | null })[] | null;
}

/** What a caller other than the HTTP route may add (SMTP submission); never reachable from a request body. */
export interface SendOptions {
  /** The email rows' source in the message log (default TRANSACTIONAL). */
  sourceType?: Extract<EmailSourceType, "TRANSACTIONAL" | "SMTP">;
  /** The plain-text part as given, a template source like `body` (default: derived from the HTML). */
  text?: string | null;
  /** A Cc header shown to every recipient (already one line; the service owns Cc otherwise). */
  cc?: string | null;
}

export interface SendResult {
  emails: { contact: { id: string; email: string }; email: string }[];
  timestamp: string;
}

/** Decoded attachment bytes per request (spec: "10 MB total by default"). */
export const MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024;
/** The MIME type Bun knows for the filename's extension (application/octet-stream when unknown). */
function contentTypeOf(filename: string): string {
  const type = Bun.file(filename).type.split(";")[0]!.trim();
  return type || "application/octet-stream";
}

/** Whole message (spec: 40 MB), estimated from the body sources and the base64 attachments. */
export const MAX_MESSAGE_BYTES = 40 * 1024 * 1024;

const BASE64 = /^[A-Za-z0-9+/\r\n]*={0,2}[\r\n]*$/;

function decodedLength(b64: string): number {
  const clean = b64.replace(/[\r\n]/g, "");
  const pad = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.floor((clean.length * 3) / 4) - pad;
}

interface Recipient {
  email: string;
  name: string | null;
}

function recipients(input: SendInput, errors: FieldError[]): Recipient[] {
  const list = Array.isArray(input.to) ? input.to : [input.to];
  const out: Recipient[] = [];
  list.forEach((r, i) => {
    const field = Array.isArray(input.to) ? `to.${i}` : "to";
    const email = (typeof r === "string" ? r : r.email).trim();
    if (!isValidEmail(email)) {
      errors.push({ field: typeof r === "string" ? field : `${field}.email`, message: "Invalid email address", code: "invalid_string", received: email });
      return;
    }
    out.push({ email: email.toLowerCase(), name: typeof r === "string" ? null : (r.name?.trim() || null) });
  });
  return out;
}

/** Validates everything that needs no database, in one 422 (and 413 for sizes). */
function validate(input: SendInput) {
  const errors: FieldError[] = [];
  const to = recipients(input, errors);
  if (!input.template) {
    if (input.subject === undefined) errors.push({ field: "subject", message: "Required when no template is given", code: "invalid_type", received: "undefined" });
    if (input.body === undefined) errors.push({ field: "body", message: "Required when no template is given", code: "invalid_type", received: "undefined" });
  }
  let from: Mailbox | null = null;
  if (input.from !== undefined) {
    if (typeof input.from === "string") {
      const m = parseMailbox(input.from);
      if (!m) errors.push({ field: "from", message: "Invalid sender email address", code: "invalid_string", received: input.from });
      else from = m;
    } else if (!isValidEmail(input.from.email.trim())) {
      errors.push({ field: "from.email", message: "Invalid sender email address", code: "invalid_string", received: input.from.email });
    } else from = { name: input.from.name?.trim() || null, email: input.from.email.trim().toLowerCase() };
  }
  if (input.reply && !isValidEmail(input.reply.trim())) errors.push({ field: "reply", message: "Invalid reply-to email address", code: "invalid_string", received: input.reply });
  errors.push(...dataErrors(input.data));
  const headers = checkCustomHeaders(input.headers);
  errors.push(...headers.errors);
  let attachmentBytes = 0;
  let encodedBytes = 0;
  (input.attachments ?? []).forEach((a, i) => {
    if (!BASE64.test(a.content) || a.content.replace(/[\r\n]/g, "").length % 4 !== 0) {
      errors.push({ field: `attachments.${i}.content`, message: "Attachment content must be base64", code: "invalid_string" });
      return;
    }
    attachmentBytes += decodedLength(a.content);
    encodedBytes += a.content.length;
  });
  try {
    assertTemplateSyntax({ subject: input.subject, body: input.body });
  } catch (e) {
    const extra = (e as { extra?: { errors?: FieldError[] } }).extra;
    if (extra?.errors) errors.push(...extra.errors);
    else throw e;
  }
  if (errors.length) throw validationError(errors);
  if (attachmentBytes > MAX_ATTACHMENT_BYTES) {
    throw payloadTooLarge(`Attachments total ${attachmentBytes} bytes; at most ${MAX_ATTACHMENT_BYTES} bytes (10 MB) per email`);
  }
  const estimate = (input.body?.length ?? 0) * 2 + encodedBytes + 64 * 1024;
  if (estimate > MAX_MESSAGE_BYTES) throw payloadTooLarge(`The message would be larger than ${MAX_MESSAGE_BYTES} bytes (40 MB)`);
  return { to, from, headers: headers.headers };
}

export async function send(ctx: AppContext, projectId: string, input: SendInput, opts: SendOptions = {}): Promise<SendResult> {
  const v = validate(input);
  const headers = opts.cc ? { ...v.headers, Cc: opts.cc } : v.headers;
  const tpl: TemplateRow | null = input.template ? await getTemplate(ctx, projectId, input.template) : null;

  const fromEmail = v.from?.email ?? tpl?.from_email ?? null;
  if (!fromEmail) throw validationError([{ field: "from", message: "Required when the template has no sender", code: "invalid_type", received: "undefined" }]);
  const fromName = v.from?.name || input.name?.trim() || (tpl ? tpl.from_name : null) || null;
  await assertSenderAllowed(ctx, projectId, fromEmail);
  // A sandbox's mail is captured, never sent: not charged to the billing caps.
  const charged = (await isSandbox(ctx, projectId)) ? 0 : v.to.length;

  const subject = input.subject ?? tpl!.subject;
  const html = input.body ?? tpl!.body;
  const replyTo = input.reply?.trim() || tpl?.reply_to || null;

  const now = ctx.clock.now();
  const attachments = input.attachments?.map((a) => ({
    filename: a.filename,
    content: a.content.replace(/[\r\n]/g, ""),
    contentType: a.contentType || contentTypeOf(a.filename),
    ...(a.contentId ? { contentId: a.contentId } : {}),
    ...(a.disposition ? { disposition: a.disposition } : {}),
  }));
  const events: RecordedEvent[] = [];
  // One transaction for the contact upserts, the content and every email row (raw statements:
  // this is the hot path of campaigns-by-API, see scripts/bench/send.ts).
  const result = await atomic(ctx.db, ctx.store.engine, async (q) => {
    // The cap check and the count, in the same transaction as the email rows (402 rolls back everything).
    await consumeQuotaRaw(q, now, projectId, "transactional", charged);
    const contentId = await insertContentRaw(q, now, { projectId, subject, html, fromEmail, fromName, replyTo, type: "TRANSACTIONAL", headers, attachments, text: opts.text ?? null, trackOpens: tpl ? trackOpensOf(tpl.track_opens) : null });
    const out: { contact: { id: string; email: string }; email: string }[] = [];
    for (const r of v.to) {
      const up = await upsertContactRaw(q, now, {
        projectId,
        email: r.email,
        subscribed: input.subscribed,
        defaultSubscribed: false,
        data: (input.data ?? undefined) as Record<string, unknown> | undefined,
        source: "send",
      });
      events.push(...up.events);
      const suppressed = (await suppressedAmongRaw(q, projectId, [up.contact.email])).size > 0;
      const email = await insertEmailRaw(q, now, ctx.config.hostname, {
        projectId,
        contentId,
        contactId: up.contact.id,
        toEmail: up.contact.email,
        toName: r.name,
        vars: { ...up.vars, email: up.contact.email, id: up.contact.id },
        sourceType: opts.sourceType ?? "TRANSACTIONAL",
        templateId: tpl?.id ?? null,
        status: suppressed ? "SUPPRESSED" : "PENDING",
      }, events);
      out.push({ contact: { id: up.contact.id, email: up.contact.email }, email });
    }
    return out;
  });
  wakeOutbox(ctx);
  await notifyEvents(ctx, events);
  await contactsChanged(ctx, projectId, result.map((r) => r.contact.id));
  return { emails: result, timestamp: iso(now)! };
}

/** setup-state: whether (and when) the project queued its first email. */
export async function firstSend(ctx: AppContext, projectId: string) {
  const r = await ctx.db.selectFrom("emails").select("created_at").where("project_id", "=", projectId).orderBy("id").limit(1).executeTakeFirst();
  return { hasSentEmail: !!r, firstSendAt: iso(r?.created_at) };
}

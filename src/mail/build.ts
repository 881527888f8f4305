// From an email row and its shared content to the signed bytes on the wire:
// vars -> render (subject, HTML, text) -> feedback-loop decoration -> MIME -> DKIM.
import type { AppContext } from "../context";
import { domainOf } from "./address";
import { composeMessage, toWire, type AttachmentInput } from "./compose";
import { decorateMessage, getSigningKey, renderHtml, renderSubject, renderText, subscriptionUrls, bounceDomainFor, type SigningKey } from "./deps";
import { dkimHeader, prepareDkim } from "./dkim";
import { htmlToText } from "./html-text";
import type { ClaimedEmail, ContentRow } from "./outbox-store";
import { systemSigningProject } from "./outbox-store";
import type { Signer } from "./signer";
import { usesUnsubscribeUrl, type MailType } from "./tracking";

export interface BuiltMessage {
  raw: Buffer;
  envelopeFrom: string;
  /** Whether a DKIM signature was added (no key: sent unsigned). */
  signed: boolean;
}

/**
 * The DKIM key for a message: the sender domain's key in the email's project (getSigningKey caches
 * KeyObjects). Account emails (no project) use the key of the project where MAILSVC_SYSTEM_FROM's
 * domain is VERIFIED, looked up once a minute.
 */
export class SigningKeys {
  private system = new Map<string, { projectId: string | null; expires: number }>();
  constructor(
    private readonly ctx: AppContext,
    private readonly ttlMs = 60_000,
  ) {}

  async get(projectId: string | null, domain: string): Promise<SigningKey | null> {
    let pid = projectId;
    if (pid === null) {
      const now = this.ctx.clock.now();
      const hit = this.system.get(domain);
      if (hit && hit.expires > now) pid = hit.projectId;
      else {
        pid = await this.ctx.store.exclusive((sqlite) => systemSigningProject(sqlite, domain));
        this.system.set(domain, { projectId: pid, expires: now + this.ttlMs });
      }
    }
    return pid ? getSigningKey(this.ctx, pid, domain) : null;
  }
}

export const messageIdFor = (emailId: string, hostname: string) => `<${emailId}@${hostname}>`;

export function envelopeFromFor(emailId: string, fromEmail: string): string {
  return `bounces+${emailId}@${bounceDomainFor(domainOf(fromEmail))}`;
}


/**
 * The plain-text part when the content has none: the HTML *template* converted to a text template
 * once per content, then rendered per recipient (converting each rendered 20 KB body would cost
 * more than the rest of the message). Falls back to converting the rendered HTML.
 */
const textTemplates = new WeakMap<ContentRow, string>();
function derivedText(content: ContentRow, vars: Record<string, unknown>, html: string): string {
  let tpl = textTemplates.get(content);
  if (tpl === undefined) textTemplates.set(content, (tpl = htmlToText(content.html)));
  try {
    return renderText(tpl, vars);
  } catch {
    return htmlToText(html);
  }
}

/** Attachments are parsed once per content: a campaign would otherwise re-parse up to 10 MB of base64 per recipient. */
const parsedAttachments = new WeakMap<ContentRow, AttachmentInput[] | null>();
function attachmentsOf(content: ContentRow): AttachmentInput[] | null {
  let a = parsedAttachments.get(content);
  if (a === undefined) parsedAttachments.set(content, (a = content.attachments ? (JSON.parse(content.attachments) as AttachmentInput[]) : null));
  return a;
}

/** Rendered parts of one recipient's message (before MIME). */
export async function renderFor(ctx: AppContext, row: ClaimedEmail, content: ContentRow) {
  if (row.source_type === "SYSTEM") {
    // Account emails are written by the server itself: no template syntax, no tracking.
    return { subject: content.subject, html: content.html, text: content.text ?? htmlToText(content.html), headers: {} as Record<string, string> };
  }
  const vars: Record<string, unknown> = row.vars ? JSON.parse(row.vars) : {};
  if (row.project_id) Object.assign(vars, subscriptionUrls(ctx, row.project_id, row.contact_id, row.to_email));
  const subject = renderSubject(content.subject, vars);
  let html = renderHtml(content.html, vars);
  let headers: Record<string, string> = {};
  if (row.project_id) {
    const dec = await decorateMessage(ctx, {
      projectId: row.project_id,
      emailId: row.id,
      contactId: row.contact_id,
      toEmail: row.to_email,
      type: (content.type as MailType) ?? "TRANSACTIONAL",
      html,
      bodyUsesUnsubscribeUrl: usesUnsubscribeUrl(content.html),
    });
    html = dec.html;
    headers = dec.headers;
  }
  const text = content.text !== null ? renderText(content.text, vars) : derivedText(content, vars, html);
  return { subject, html, text, headers };
}

export async function buildMessage(ctx: AppContext, row: ClaimedEmail, content: ContentRow, keys: SigningKeys, signer: Signer): Promise<BuiltMessage> {
  const r = await renderFor(ctx, row, content);
  const custom: Record<string, string> = content.headers ? JSON.parse(content.headers) : {};
  const attachments = attachmentsOf(content);
  const now = ctx.clock.now();
  const msg = await composeMessage({
    messageId: (row.message_id ?? messageIdFor(row.id, ctx.config.hostname)).replace(/^<|>$/g, ""),
    date: new Date(now),
    from: { name: content.from_name, email: content.from_email },
    to: { name: row.to_name, email: row.to_email },
    replyTo: content.reply_to,
    subject: r.subject,
    html: r.html,
    text: r.text,
    headers: { ...custom, ...r.headers },
    attachments,
  });
  const envelopeFrom = envelopeFromFor(row.id, content.from_email);
  const key = await keys.get(row.project_id, domainOf(content.from_email));
  if (!key) return { raw: toWire(msg), envelopeFrom, signed: false };
  const t0 = performance.now();
  const prepared = prepareDkim(msg, { domain: key.domain, selector: key.selector, timeMs: now });
  const signature = await signer.sign(key.privateKeyPem, prepared.data);
  ctx.metrics.dkimSignSeconds.observe((performance.now() - t0) / 1000);
  return { raw: toWire(msg, dkimHeader(prepared, signature)), envelopeFrom, signed: true };
}

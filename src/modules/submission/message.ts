// A submitted message (RFC 5322 bytes + the envelope's recipients) as the input of the /v1/send path:
// From, Reply-To, Subject, the text and HTML parts, attachments (inline cid: images stay inline),
// Cc (shown to every recipient) and the sender's own headers are kept; Bcc, Received, the MIME
// structure and everything else the engine writes itself are not. The content is not a template:
// "{{" is sent as written (literalSource).
import { checkCustomHeaders, MAX_CUSTOM_HEADERS } from "../../mail/message/custom-headers";
import { escapeHtml, literalSource } from "../../mail/message/render";
import { MAX_ATTACHMENTS } from "../send/schemas";
import type { Mailbox, SendInput, SendOptions } from "../send/service";
import { parseMessage, type MailboxAddress, type MimeAttachment, type ParsedMessage } from "./mime";
import { smtpError } from "./replies";

export interface Submitted {
  input: SendInput;
  options: SendOptions;
}

/** Headers that describe the submission's transport or MIME structure, never copied (beyond custom-headers.ts's reserved ones). */
const TRANSPORT_HEADERS = new Set(["x-original-to", "envelope-to", "x-envelope-from", "x-envelope-to", "errors-to"]);

const CONTENT_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+$/;

/** Synchronous on purpose (mime.ts): the client is waiting for its 250. */
export function toSendInput(raw: Buffer, envelope: { mailFrom: string; rcptTo: string[] }): Submitted {
  const mail = parseMessage(raw);
  const names = displayNames(mail.to, mail.cc);
  const seen = new Set<string>();
  const to: Mailbox[] = [];
  for (const r of envelope.rcptTo) {
    const email = r.trim().toLowerCase();
    if (seen.has(email)) continue;
    seen.add(email);
    to.push({ email, name: names.get(email) || null });
  }

  const fromBox = mail.from[0];
  const from = fromBox?.address ? { email: fromBox.address, name: fromBox.name || null } : envelope.mailFrom ? { email: envelope.mailFrom, name: null } : null;
  if (!from) throw smtpError(550, "5.1.7 The message has no From address");

  const html = mail.html;
  const text = mail.text !== null && mail.text.trim() !== "" ? mail.text : null;

  const attachments = mail.attachments;
  if (attachments.length > MAX_ATTACHMENTS) throw smtpError(552, `5.3.4 At most ${MAX_ATTACHMENTS} attachments per message (this one has ${attachments.length})`);

  const input: SendInput = {
    to,
    from,
    subject: literalSource(headerText(mail.subject ?? "").slice(0, 998)),
    body: literalSource(html ?? (text !== null ? textToHtml(text) : "")),
    headers: customHeaders(mail),
    attachments: attachments.map(attachmentInput),
  };
  const reply = mail.replyTo[0]?.address;
  if (reply) input.reply = reply;
  const cc = rawHeader(mail, "cc");
  return { input, options: { sourceType: "SMTP", text: text !== null ? literalSource(text) : html === null ? "" : null, cc: cc || null } };
}

/** Recipient -> display name, from the To and Cc headers (the envelope has addresses only). */
function displayNames(...lists: MailboxAddress[][]): Map<string, string> {
  const out = new Map<string, string>();
  for (const l of lists) for (const a of l) if (a.address && a.name) out.set(a.address.toLowerCase(), headerText(a.name).slice(0, 200));
  return out;
}

const headerText = (s: string) => s.replace(/[\x00-\x1f\x7f]+/g, " ").trim();

/** A header's value as the client wrote it (encoded words kept), unfolded to one line; "" when absent. */
function rawHeader(mail: ParsedMessage, key: string): string {
  const line = mail.headerLines.find((h) => h.key === key)?.line;
  return line ? unfold(line.slice(line.indexOf(":") + 1)) : "";
}

const unfold = (v: string) => v.replace(/\r?\n(?=[ \t])/g, "").replace(/[\r\n]/g, "").trim();

/**
 * The client's own headers (X-*, In-Reply-To, References, List-Unsubscribe, ...): the first of each
 * name that custom-headers.ts accepts (reserved ones such as Bcc, Received, Content-* are left out),
 * at most MAX_CUSTOM_HEADERS.
 */
function customHeaders(mail: ParsedMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const taken = new Set<string>();
  for (const { key, line } of mail.headerLines) {
    if (taken.has(key) || TRANSPORT_HEADERS.has(key) || key.startsWith("content-")) continue;
    taken.add(key);
    const name = line.slice(0, line.indexOf(":")).trim();
    const value = unfold(line.slice(line.indexOf(":") + 1));
    if (checkCustomHeaders({ [name]: value }).errors.length) continue;
    out[name] = value;
    if (Object.keys(out).length >= MAX_CUSTOM_HEADERS) break;
  }
  return out;
}

/** A text-only message's HTML part: the text, escaped, line breaks kept, web links clickable. */
const WEB_LINK = /\bhttps?:\/\/[^\s<>"]*[^\s<>".,;:!?)\]'`]/g;
function textToHtml(text: string): string {
  let out = "";
  let last = 0;
  for (const m of text.matchAll(WEB_LINK)) {
    const url = escapeHtml(m[0]);
    out += escapeHtml(text.slice(last, m.index)) + `<a href="${url}">${url}</a>`;
    last = m.index + m[0].length;
  }
  return `<div style="white-space:pre-wrap">${out + escapeHtml(text.slice(last))}</div>`;
}

function attachmentInput(a: MimeAttachment, i: number): NonNullable<SendInput["attachments"]>[number] {
  const cid = a.cid && !/[\r\n<>]/.test(a.cid) ? a.cid.slice(0, 255) : null;
  const filename = headerText(a.filename ?? "").slice(0, 255) || `attachment-${i + 1}`;
  return {
    filename,
    content: a.content.toString("base64"),
    contentType: CONTENT_TYPE.test(a.contentType) ? a.contentType : "application/octet-stream",
    contentId: cid,
    disposition: a.disposition === "inline" && cid ? "inline" : "attachment",
  };
}

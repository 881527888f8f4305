// From a build plan and the shared content to the signed bytes on the wire:
// vars -> render (subject, HTML, text) -> decoration -> MIME -> DKIM -> SMTP DATA form.
// Pure: no database and no AppContext, so it runs in the message-building worker (build-worker.ts)
// as well as in-process (builder.ts). The plan is made on the main thread (plan.ts).
import { composeAlternativeWith, composeMessage, toWire, type AttachmentInput, type HeaderInput, type RawMessage } from "./compose";
import { applyDecoration, type DecorationPlan } from "../tracking/decorate";
import { dkimHeader, prepareDkim } from "../dkim/dkim";
import { htmlToText } from "./html-text";
import type { ContentRow } from "../outbox/outbox-store";
import { renderHtml, renderSubject, renderText, type Vars } from "./render";
import type { Signer } from "../dkim/signer";
import { prepareSkeleton, writeHtml, writeText, type Skeleton } from "./skeleton";
import { toSmtpData } from "../smtp/smtp-data";
import type { FreshLinks, LinkKeys } from "../tracking/tracked-links";

/** Everything about one recipient's message that needs the database or the installation's secrets, as plain data. */
export interface BuildPlan {
  emailId: string;
  contentId: string;
  /** SYSTEM mail (account emails) is written by the server itself: no template syntax, no decoration. */
  system: boolean;
  /** Without angle brackets. */
  messageId: string;
  toEmail: string;
  toName: string | null;
  /** The recipient's render variables (JSON, from the email row). */
  varsJson: string | null;
  /** Reserved variables added at build time (the signed subscription links). */
  extraVars: Record<string, string> | null;
  decoration: DecorationPlan | null;
  dkim: { domain: string; selector: string; privateKeyPem: string; ed25519?: { selector: string; privateKeyPem: string } | null } | null;
  /** Date header and DKIM t=, epoch ms. */
  now: number;
}

export interface BuiltMessage {
  /** The message ready for SMTP DATA (see smtp-data.ts). */
  raw: Buffer;
  /** Whether a DKIM signature was added (no key: sent unsigned). */
  signed: boolean;
  /** Time spent signing (ms), for the dkim metric. */
  signMs: number;
  /** Click-tracked links seen first: store them before the message leaves. */
  links: FreshLinks;
  /** Built from its content's skeleton (a few KB of garbage, not tens). */
  fromSkeleton?: boolean;
}

export const messageIdFor = (emailId: string, hostname: string) => `<${emailId}@${hostname}>`;

/**
 * The plain-text part when the content has none: the HTML *template* converted to a text template
 * once per content, then rendered per recipient (converting each rendered 20 KB body would cost
 * more than the rest of the message). Falls back to converting the rendered HTML.
 */
const textTemplates = new WeakMap<ContentRow, string>();
function textTemplateOf(content: ContentRow): string {
  let tpl = textTemplates.get(content);
  if (tpl === undefined) textTemplates.set(content, (tpl = htmlToText(content.html)));
  return tpl;
}
function derivedText(content: ContentRow, vars: Record<string, unknown>, html: string): string {
  const tpl = textTemplateOf(content);
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

const customHeaders = new WeakMap<ContentRow, Record<string, string>>();
function customHeadersOf(content: ContentRow): Record<string, string> {
  let h = customHeaders.get(content);
  if (h === undefined) customHeaders.set(content, (h = content.headers ? (JSON.parse(content.headers) as Record<string, string>) : {}));
  return h;
}

interface Rendered {
  subject: string;
  html: string;
  text: string;
  headers: Record<string, string>;
}

function varsOf(plan: BuildPlan): Vars {
  const vars: Vars = plan.varsJson ? JSON.parse(plan.varsJson) : {};
  if (plan.extraVars) Object.assign(vars, plan.extraVars);
  return vars;
}

function render(plan: BuildPlan, content: ContentRow, linkKeys: LinkKeys, links: FreshLinks): Rendered {
  if (plan.system) return { subject: content.subject, html: content.html, text: content.text ?? htmlToText(content.html), headers: {} };
  const vars = varsOf(plan);
  const subject = renderSubject(content.subject, vars);
  let html = renderHtml(content.html, vars);
  let headers: Record<string, string> = {};
  const d = plan.decoration;
  if (d) ({ html, headers } = applyDecoration(html, d, linkKeys.forMessage(d.projectId, d.linkGeneration, links)));
  let text = content.text !== null ? renderText(content.text, vars) : derivedText(content, vars, html);
  if (d?.textFooter) text += d.textFooter;
  return { subject, html, text, headers };
}

/**
 * A content's skeleton (skeleton.ts), prepared when its second message is built: a content with
 * many recipients (a campaign's) is rendered, decorated and encoded once; a one-off /v1/send content
 * never pays for preparing one. Null when the content cannot have one (attachments, see skeleton.ts).
 */
const skeletons = new WeakMap<ContentRow, Skeleton | null | "once">();
function skeletonOf(content: ContentRow): Skeleton | null {
  const s = skeletons.get(content);
  if (s === undefined) {
    skeletons.set(content, "once");
    return null;
  }
  if (s !== "once") return s;
  const sk = attachmentsOf(content)?.length ? null : prepareSkeleton(content.html, content.text ?? textTemplateOf(content));
  skeletons.set(content, sk);
  return sk;
}

function headerInput(plan: BuildPlan, content: ContentRow, subject: string, headers: Record<string, string>): HeaderInput {
  return {
    messageId: plan.messageId,
    date: new Date(plan.now),
    from: { name: content.from_name, email: content.from_email },
    to: { name: plan.toName, email: plan.toEmail },
    replyTo: content.reply_to,
    subject,
    headers: { ...customHeadersOf(content), ...headers },
  };
}

/**
 * Renders and composes in one synchronous stretch: the rendered bodies (tens of KB of strings per
 * message) are garbage before the next await, so they never survive into the old generation.
 */
function compose(plan: BuildPlan, content: ContentRow, linkKeys: LinkKeys, links: FreshLinks): RawMessage & { fromSkeleton?: boolean } {
  const sk = plan.system ? null : skeletonOf(content);
  if (sk) {
    const vars = varsOf(plan);
    const d = plan.decoration;
    const clickBase = d?.clickBase;
    const track = d && clickBase !== undefined ? { base: clickBase, key: linkKeys.forMessage(d.projectId, d.linkGeneration, links) } : null;
    const fill = { vars, decoration: d, track };
    const msg = composeAlternativeWith(
      headerInput(plan, content, renderSubject(content.subject, vars), d?.headers ?? {}),
      (w) => writeText(w, sk, fill),
      (w) => writeHtml(w, sk, fill),
    );
    return { ...msg, fromSkeleton: true };
  }
  const r = render(plan, content, linkKeys, links);
  return composeMessage({ ...headerInput(plan, content, r.subject, r.headers), html: r.html, text: r.text, attachments: attachmentsOf(content) });
}

export async function buildPlanned(plan: BuildPlan, content: ContentRow, linkKeys: LinkKeys, signer: Signer): Promise<BuiltMessage> {
  const links: FreshLinks = [];
  const msg = compose(plan, content, linkKeys, links);
  const key = plan.dkim;
  const plainBody = msg.plain ? msg.body.length : 0;
  const fromSkeleton = !!msg.fromSkeleton;
  if (!key) return { raw: toSmtpData(toWire(msg), plainBody), signed: false, signMs: 0, links, fromSkeleton };
  const t0 = performance.now();
  const prepared = prepareDkim(msg, { domain: key.domain, selector: key.selector, timeMs: plan.now });
  let leading = dkimHeader(prepared, await signer.sign(key.privateKeyPem, prepared.data));
  if (key.ed25519) {
    // RFC 8463 dual signing: a receiver that knows Ed25519 checks that one, any other the RSA one.
    const ed = prepareDkim(msg, { algorithm: "ed25519-sha256", domain: key.domain, selector: key.ed25519.selector, timeMs: plan.now });
    leading = dkimHeader(ed, await signer.sign(key.ed25519.privateKeyPem, ed.data)) + leading;
  }
  const signMs = performance.now() - t0;
  return { raw: toSmtpData(toWire(msg, leading), plainBody), signed: true, signMs, links, fromSkeleton };
}

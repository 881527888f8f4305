// The main thread's half of building a message: everything that needs the database or the
// installation's secrets (tracking settings, signed links, the DKIM key), gathered into a BuildPlan
// of plain data that build.ts turns into bytes, in the build worker as a rule.
import type { AppContext } from "../../context";
import { bounceDomainFor, domainOf } from "../../net/email-address";
import { messageIdFor, type BuildPlan } from "../message/build";
import type { ClaimedEmail, ContentRow } from "./outbox-store";
import { getSigningKey, type SigningKey } from "../dkim/signing-keys";
import { planDecoration, subscriptionUrls, usesUnsubscribeUrl, type MailType } from "../tracking/tracking";

/**
 * The DKIM key for a message: the sender domain's key in the email's project (getSigningKey caches
 * KeyObjects). Account emails (no project) use the key of the project where MAILSVC_SYSTEM_FROM's
 * domain is VERIFIED, looked up once a minute.
 */
export class SigningKeys {
  private system = new Map<string, { projectId: string | null; expires: number }>();
  constructor(
    private readonly ctx: AppContext,
    private readonly systemSigningProject: (domain: string) => Promise<string | null>,
    private readonly ttlMs = 60_000,
  ) {}

  async get(projectId: string | null, domain: string): Promise<SigningKey | null> {
    let pid = projectId;
    if (pid === null) {
      const now = this.ctx.clock.now();
      const hit = this.system.get(domain);
      if (hit && hit.expires > now) pid = hit.projectId;
      else {
        pid = await this.systemSigningProject(domain);
        this.system.set(domain, { projectId: pid, expires: now + this.ttlMs });
      }
    }
    return pid ? getSigningKey(this.ctx, pid, domain) : null;
  }
}

export function envelopeFromFor(emailId: string, fromEmail: string): string {
  return `bounces+${emailId}@${bounceDomainFor(domainOf(fromEmail))}`;
}

/** Whether the content's HTML places the unsubscribe link itself (once per content). */
const placesUnsubscribe = new WeakMap<ContentRow, boolean>();
function contentUsesUnsubscribeUrl(content: ContentRow): boolean {
  let v = placesUnsubscribe.get(content);
  if (v === undefined) placesUnsubscribe.set(content, (v = usesUnsubscribeUrl(content.html)));
  return v;
}

/** Whether the content's text part (its own text, or the HTML it is derived from) places the unsubscribe link itself. */
const textPlacesUnsubscribe = new WeakMap<ContentRow, boolean>();
function contentTextUsesUnsubscribeUrl(content: ContentRow): boolean {
  if (content.text === null) return contentUsesUnsubscribeUrl(content);
  let v = textPlacesUnsubscribe.get(content);
  if (v === undefined) textPlacesUnsubscribe.set(content, (v = usesUnsubscribeUrl(content.text)));
  return v;
}

/** `trackingMode`, `postalAddress`: the project's, read by the caller for a whole batch (looked up when absent). */
export async function planMessage(ctx: AppContext, row: ClaimedEmail, content: ContentRow, keys: SigningKeys, trackingMode?: string, postalAddress?: string | null): Promise<BuildPlan> {
  const system = row.source_type === "SYSTEM";
  const project = system ? null : row.project_id;
  const urls = project ? subscriptionUrls(ctx, project, row.contact_id, row.to_email) : null;
  const decoration = project
    ? await planDecoration(ctx, {
        projectId: project,
        emailId: row.id,
        contactId: row.contact_id,
        toEmail: row.to_email,
        type: (content.type as MailType) ?? "TRANSACTIONAL",
        bodyUsesUnsubscribeUrl: contentUsesUnsubscribeUrl(content),
        textUsesUnsubscribeUrl: contentTextUsesUnsubscribeUrl(content),
        trackOpens: content.track_opens === null || content.track_opens === undefined ? null : content.track_opens === 1,
        fromEmail: content.from_email,
        trackingMode,
        postalAddress,
        urls: urls ?? undefined,
      })
    : null;
  const key = await keys.get(row.project_id, domainOf(content.from_email));
  return {
    emailId: row.id,
    contentId: content.id,
    system,
    messageId: (row.message_id ?? messageIdFor(row.id, ctx.config.hostname)).replace(/^<|>$/g, ""),
    toEmail: row.to_email,
    toName: row.to_name,
    varsJson: row.vars,
    extraVars: urls,
    decoration,
    dkim: key ? { domain: key.domain, selector: key.selector, privateKeyPem: key.privateKeyPem, ed25519: key.ed25519 } : null,
    now: ctx.clock.now(),
  };
}

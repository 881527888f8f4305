// Seam between the delivery engine and the feedback loop (src/modules/feedback, which serves the links made here).
// The engine calls `subscriptionUrls` for the reserved template variables before rendering, and
// `planDecoration` for what decoration does to the message (open pixel, click-tracked links, the
// MARKETING footer and the List-Unsubscribe headers, as the project's settings say); the plan is
// applied to the rendered HTML where the message is built (decorate.ts).
import type { AppContext } from "../../context";
import { bounceDomainFor, domainOf } from "../../net/email-address";
import { isQualifiedHostname } from "../deliverability/deliverability";
import { clickEmailToken, openToken, secretOf, subscriptionToken, unsubscribeLocalPart } from "./tokens";
import { LinkKeys, linkGeneration, storeLinks, type FreshLinks } from "./tracked-links";
import { applyDecoration, footerHtml, footerText, type Decorated, type DecorationPlan } from "./decorate";
import { trackingSettings } from "../outbox/store";

export { applyDecoration, decodeEntities, decorateHtml, footerHtml, footerText, pixelHtml, type Decorated, type DecorationPlan, type HtmlDecoration } from "./decorate";

export type MailType = "TRANSACTIONAL" | "MARKETING" | "HEADLESS";
export type TrackingMode = "ENABLED" | "DISABLED" | "MARKETING_ONLY";

export interface DecorateInput {
  projectId: string;
  emailId: string;
  contactId: string | null;
  toEmail: string;
  type: MailType;
  /** The rendered HTML body. */
  html: string;
  /** Whether the body source already used {{unsubscribeUrl}} (then no footer is appended). */
  bodyUsesUnsubscribeUrl: boolean;
  /** The same for the text part's source (its own text, or the HTML it is derived from); default: bodyUsesUnsubscribeUrl. */
  textUsesUnsubscribeUrl?: boolean;
  /**
   * The open pixel for this content (the campaign's, template's or workflow step's `trackOpens`):
   * null/undefined = as the project's tracking mode says; false = never; true = whenever the
   * project's mode is not DISABLED (which turns every pixel off).
   */
  trackOpens?: boolean | null;
  /** The sender address (for the List-Unsubscribe mailto on its bounce domain); looked up from the email row when absent. */
  fromEmail?: string;
  /** The project's postal address (null: none), when the caller has it (the outbox reads it once per batch); looked up when absent. */
  postalAddress?: string | null;
  /** The project's tracking mode, when the caller has it (the outbox reads it once per batch); looked up when absent. */
  trackingMode?: string;
  /** The recipient's subscription links, when the caller has computed them (three signatures); computed when absent. */
  urls?: SubscriptionUrls;
}

/** Public paths of the feedback loop (served by src/modules/feedback). */
export const PATHS = {
  open: "/t/o/",
  click: "/t/c/",
  unsubscribe: "/unsubscribe/",
  subscribe: "/subscribe/",
  manage: "/manage/",
} as const;

/** Plans open pixel, click-tracking links, unsubscribe footer and List-Unsubscribe headers as the project's settings say; null = nothing to do. */
export async function planDecoration(ctx: AppContext, input: Omit<DecorateInput, "html">): Promise<DecorationPlan | null> {
  const listMail = input.type === "MARKETING" || input.type === "HEADLESS";
  const { mode, fromEmail, postalAddress } = await messageSettings(ctx, input);
  // Opens and clicks are attributed to a contact; mail to nobody in particular (system mail,
  // campaign test sends) is never tracked.
  const track = !!input.contactId && trackingApplies(mode, input.type);
  const opens = !!input.contactId && mode !== "DISABLED" && (input.trackOpens ?? trackingApplies(mode, input.type));
  if (!listMail && !track && !opens) return null;

  const urls = input.urls ?? subscriptionUrls(ctx, input.projectId, input.contactId, input.toEmail);
  const headers: Record<string, string> = {};
  let footer: string | undefined;
  let textFooter: string | undefined;
  if (listMail) {
    const targets = [`<${urls.unsubscribeUrl}>`];
    // The mailto target reaches us only through the bounce domain's MX (published for a qualified MAILSVC_HOSTNAME)
    // and the inbound listener: without them it would be an address nobody receives.
    const mailtoReachable = ctx.config.inboundSmtpPort > 0 && isQualifiedHostname(ctx.config.hostname);
    if (fromEmail && mailtoReachable) targets.push(`<mailto:${unsubscribeLocalPart(ctx, input.emailId)}@${bounceDomainFor(domainOf(fromEmail))}?subject=unsubscribe>`);
    headers["List-Unsubscribe"] = targets.join(", ");
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
    if (input.type === "MARKETING" && !input.bodyUsesUnsubscribeUrl) footer = footerHtml(urls.unsubscribeUrl, urls.manageUrl, input.toEmail, postalAddress);
    if (!(input.textUsesUnsubscribeUrl ?? input.bodyUsesUnsubscribeUrl)) textFooter = footerText(urls.unsubscribeUrl, urls.manageUrl, input.toEmail, postalAddress);
  }
  const base = ctx.config.publicUrl;
  return {
    projectId: input.projectId,
    footer,
    textFooter,
    pixelUrl: opens ? base + PATHS.open + openToken(ctx, input.emailId) : undefined,
    document: listMail || opens,
    clickBase: track ? `${base}${PATHS.click}${clickEmailToken(ctx, input.emailId)}.` : undefined,
    skipPrefixes: [PATHS.open, PATHS.click, PATHS.unsubscribe, PATHS.subscribe, PATHS.manage].map((p) => base + p),
    headers,
    linkGeneration: linkGeneration(ctx),
  };
}

/** Plans and applies decoration in one go, storing new links first (tests, benchmarks, one-off messages). */
export async function decorateMessage(ctx: AppContext, input: DecorateInput): Promise<Decorated> {
  const plan = await planDecoration(ctx, input);
  if (!plan) return { html: input.html, headers: {} };
  const fresh: FreshLinks = [];
  const out = applyDecoration(input.html, plan, new LinkKeys(secretOf(ctx)).forMessage(plan.projectId, plan.linkGeneration, fresh));
  // The links must be stored before the message can leave (a click may come at once).
  await storeLinks(ctx, plan.projectId, fresh);
  return out;
}

/** The reserved template variables of a recipient: signed links to the subscription pages. */
export type SubscriptionUrls = ReturnType<typeof subscriptionUrls>;
export function subscriptionUrls(ctx: AppContext, projectId: string, contactId: string | null, email: string) {
  const token = subscriptionToken(ctx, { projectId, contactId, email: email.toLowerCase() });
  const base = ctx.config.publicUrl;
  return {
    unsubscribeUrl: base + PATHS.unsubscribe + token,
    subscribeUrl: base + PATHS.subscribe + token,
    manageUrl: base + PATHS.manage + token,
  };
}

/** Whether a body source places the unsubscribe link itself (`{{unsubscribeUrl}}`, `{{{ unsubscribeUrl }}}`…): then no footer. */
export function usesUnsubscribeUrl(source: string): boolean {
  return /\{\{\{?\s*unsubscribeUrl\s*(\?\?[^}]*)?\}/.test(source);
}

/** ENABLED tracks every type; MARKETING_ONLY tracks list mail (MARKETING and HEADLESS); DISABLED nothing. */
export function trackingApplies(mode: string, type: MailType): boolean {
  if (mode === "DISABLED") return false;
  if (mode === "MARKETING_ONLY") return type !== "TRANSACTIONAL";
  return true;
}

/** The project's tracking mode and the email's sender, when the caller did not pass them (the outbox does). */
async function messageSettings(ctx: AppContext, input: Omit<DecorateInput, "html">): Promise<{ mode: string; fromEmail: string | null; postalAddress: string | null }> {
  if (input.trackingMode !== undefined && input.fromEmail !== undefined && input.postalAddress !== undefined) {
    return { mode: input.trackingMode, fromEmail: input.fromEmail, postalAddress: input.postalAddress };
  }
  const row = await trackingSettings(ctx.db, input.projectId, input.emailId);
  return { mode: input.trackingMode ?? row?.mode ?? "ENABLED", fromEmail: input.fromEmail ?? row?.fromEmail ?? null, postalAddress: input.postalAddress !== undefined ? input.postalAddress : (row?.postalAddress ?? null) };
}


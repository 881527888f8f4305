// Seam between the delivery engine (issue 5) and the feedback loop (issue 6), which owns this file.
// The engine calls `subscriptionUrls` for the reserved template variables before rendering, and
// `decorateMessage` on the rendered HTML before composing: open pixel, click-tracked links,
// the MARKETING footer and the List-Unsubscribe headers, as the project's settings say.
import type { AppContext } from "../context";
import { bounceDomainFor } from "../modules/domains/records";
import { domainOf } from "./address";
import { clickEmailToken, openToken, subscriptionToken, unsubscribeLocalPart } from "./tokens";
import { linkBatch } from "./tracked-links";

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
  /** The sender address (for the List-Unsubscribe mailto on its bounce domain); looked up from the email row when absent. */
  fromEmail?: string;
}

export interface Decorated {
  html: string;
  /** Extra headers (List-Unsubscribe, List-Unsubscribe-Post). */
  headers: Record<string, string>;
}

/** Public paths of the feedback loop (served by src/modules/tracking). */
export const PATHS = {
  open: "/t/o/",
  click: "/t/c/",
  unsubscribe: "/unsubscribe/",
  subscribe: "/subscribe/",
  manage: "/manage/",
} as const;

/** Adds open pixel, click-tracking links, unsubscribe footer and List-Unsubscribe headers as the project's settings say. */
export async function decorateMessage(ctx: AppContext, input: DecorateInput): Promise<Decorated> {
  const listMail = input.type === "MARKETING" || input.type === "HEADLESS";
  const { mode, fromEmail } = await messageSettings(ctx, input);
  // Opens and clicks are attributed to a contact; mail to nobody in particular (system mail,
  // campaign test sends) is never tracked.
  const track = !!input.contactId && trackingApplies(mode, input.type);
  if (!listMail && !track) return { html: input.html, headers: {} };

  const urls = subscriptionUrls(ctx, input.projectId, input.contactId, input.toEmail);
  const headers: Record<string, string> = {};
  let footer: string | undefined;
  if (listMail) {
    const targets = [`<${urls.unsubscribeUrl}>`];
    if (fromEmail) targets.push(`<mailto:${unsubscribeLocalPart(ctx, input.emailId)}@${bounceDomainFor(domainOf(fromEmail))}?subject=unsubscribe>`);
    headers["List-Unsubscribe"] = targets.join(", ");
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
    if (input.type === "MARKETING" && !input.bodyUsesUnsubscribeUrl) footer = footerHtml(urls.unsubscribeUrl, urls.manageUrl);
  }
  const base = ctx.config.publicUrl;
  const links = track ? linkBatch(ctx, input.projectId) : null;
  const clickBase = track ? `${base}${PATHS.click}${clickEmailToken(ctx, input.emailId)}.` : "";
  const html = decorateHtml(input.html, {
    footer,
    pixelUrl: track ? base + PATHS.open + openToken(ctx, input.emailId) : undefined,
    trackUrl: links ? (url) => clickBase + links.key(url) : undefined,
    skipPrefixes: [PATHS.open, PATHS.click, PATHS.unsubscribe, PATHS.subscribe, PATHS.manage].map((p) => base + p),
  });
  // The links must be stored before the message can leave (a click may come at once).
  await links?.flush();
  return { html, headers };
}

/** The reserved template variables of a recipient: signed links to the subscription pages. */
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

const SETTINGS_SQL = `SELECT p.tracking AS tracking, c.from_email AS from_email
  FROM projects p LEFT JOIN emails e ON e.id = ?1 AND e.project_id = p.id LEFT JOIN email_contents c ON c.id = e.content_id
  WHERE p.id = ?2`;

/** The project's tracking mode and the email's sender: one cached statement per message (campaign hot path). */
async function messageSettings(ctx: AppContext, input: DecorateInput): Promise<{ mode: string; fromEmail: string | null }> {
  const row = await ctx.store.exclusive((sqlite) =>
    sqlite.query<{ tracking: string; from_email: string | null }, [string, string]>(SETTINGS_SQL).get(input.emailId, input.projectId),
  );
  return { mode: row?.tracking ?? "ENABLED", fromEmail: input.fromEmail ?? row?.from_email ?? null };
}

// ---- HTML ------------------------------------------------------------------------------------------

export interface HtmlDecoration {
  /** Appended at the end of <body> (or of the document). */
  footer?: string;
  /** The open pixel's URL, appended last. */
  pixelUrl?: string;
  /** Maps an original http(s) link to its tracked URL; absent = no click tracking. */
  trackUrl?: (url: string) => string;
  /** Links starting with these are never rewritten (our own pages). */
  skipPrefixes?: string[];
}

// Links: an <a>/<area> start tag (attribute values may hold ">"), plus the regions to step over.
const SCAN = /<(?:a|area)\b(?:[^>"']|"[^"]*"|'[^']*')*>|<!--|<(script|style)\b/gi;
const HREF = /(\shref\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))/i;
const NO_TRACK = /\sdata-no-track\b/i;
const HTTP_URL = /^https?:\/\/[^\s]/i;
const ATTR_UNSAFE = /[&"<>]/;

/**
 * Rewrites links and appends footer and pixel. A single regex pass over the markup (no DOM: this runs
 * once per recipient of a campaign): comments and <script>/<style> contents are stepped over.
 * Not rewritten: anything but absolute http(s) URLs (mailto:, tel:, #anchors, relative links), our
 * own subscription/tracking links, and links marked `data-no-track`.
 */
export function decorateHtml(html: string, d: HtmlDecoration): string {
  const tail = (d.footer ?? "") + (d.pixelUrl ? pixelHtml(d.pixelUrl) : "");
  if (!tail && !d.trackUrl) return html;
  let out = html;
  if (d.trackUrl) {
    const track = d.trackUrl;
    const skip = d.skipPrefixes ?? [];
    const parts: string[] = [];
    let last = 0;
    const re = new RegExp(SCAN);
    let m: RegExpExecArray | null;
    while ((m = re.exec(html))) {
      const tag = m[0];
      if (tag === "<!--") {
        const end = html.indexOf("-->", m.index + 4);
        re.lastIndex = end < 0 ? html.length : end + 3;
        continue;
      }
      if (m[1]) {
        const end = html.toLowerCase().indexOf(`</${m[1].toLowerCase()}`, re.lastIndex);
        re.lastIndex = end < 0 ? html.length : end;
        continue;
      }
      const h = HREF.exec(tag);
      if (!h || NO_TRACK.test(tag)) continue;
      const url = decodeEntities(h[2] ?? h[3] ?? h[4] ?? "").trim();
      if (!HTTP_URL.test(url) || skip.some((p) => url.startsWith(p))) continue;
      const tracked = track(url);
      parts.push(html.slice(last, m.index), tag.slice(0, h.index), `${h[1]}"${ATTR_UNSAFE.test(tracked) ? escapeAttr(tracked) : tracked}"`, tag.slice(h.index + h[0].length));
      last = m.index + tag.length;
    }
    if (parts.length) out = parts.join("") + html.slice(last);
  }
  if (!tail) return out;
  const close = out.toLowerCase().lastIndexOf("</body");
  return close < 0 ? out + tail : out.slice(0, close) + tail + out.slice(close);
}

export function pixelHtml(url: string): string {
  return `<img src="${escapeAttr(url)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`;
}

export function footerHtml(unsubscribeUrl: string, manageUrl: string): string {
  return (
    `<div style="margin:32px 0 0;padding:16px 0 0;border-top:1px solid #e5e5e5;font:12px/1.5 Arial,Helvetica,sans-serif;color:#6b6b6b;text-align:center">` +
    `You are receiving this email because you subscribed to it. ` +
    `<a href="${escapeAttr(unsubscribeUrl)}" style="color:#6b6b6b;text-decoration:underline">Unsubscribe</a> &middot; ` +
    `<a href="${escapeAttr(manageUrl)}" style="color:#6b6b6b;text-decoration:underline">Manage preferences</a>` +
    `</div>`
  );
}

const escapeAttr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** Attribute values come raw from the rewriter: decode the entities an href may carry (&amp; above all). */
export function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  // &amp; alone (query strings) is by far the most common case: one cheap pass.
  if (!/&(?!amp;)(#|[a-z]+;)/i.test(s)) return s.replaceAll("&amp;", "&");
  return s.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === "#") {
      const n = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return Number.isFinite(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : m;
    }
    return NAMED[e.toLowerCase()] ?? m;
  });
}

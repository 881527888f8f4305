// Decoration of a rendered HTML body (open pixel, click-tracked links, unsubscribe footer) as pure
// functions of the HTML and a plan: no database, no AppContext. The plan is made on the main thread
// (tracking.ts, planDecoration); this file also runs in the message-building worker.

export interface Decorated {
  html: string;
  /** Extra headers (List-Unsubscribe, List-Unsubscribe-Post). */
  headers: Record<string, string>;
}

/**
 * The plain-text counterpart of the footer, appended to the text part (MARKETING and HEADLESS mail):
 * a reader of the text alternative gets the same unsubscribe and preferences links as one of the HTML.
 */
export function footerText(unsubscribeUrl: string, manageUrl: string, toEmail?: string, postalAddress?: string | null): string {
  return `\n\n---\n${receivingLine(toEmail)}\nUnsubscribe: ${unsubscribeUrl}\nManage preferences: ${manageUrl}\n${postalAddress ? postalAddress + "\n" : ""}`;
}

/** Why the recipient gets the message, naming the address it went to when known (which one is subscribed). */
const receivingLine = (toEmail?: string) =>
  toEmail ? `This email was sent to ${toEmail} because you subscribed to it.` : "You are receiving this email because you subscribed to it.";

/**
 * What decoration does to one message, as plain data: computed on the main thread (it reads the
 * project's settings), applied to the rendered HTML wherever the message is built (applyDecoration,
 * in the build worker as a rule).
 */
export interface DecorationPlan {
  projectId: string;
  /** Appended at the end of <body>. */
  footer?: string;
  /** Appended at the end of the text part (footerText). */
  textFooter?: string;
  pixelUrl?: string;
  /**
   * A body that is a fragment (no <html>/<body>) is sent as a complete HTML document (documentOpen,
   * documentClose): list mail and every message with the open pixel.
   */
  document?: boolean;
  /** Click tracking: a link becomes `clickBase + <link key>`. */
  clickBase?: string;
  skipPrefixes: string[];
  /** List-Unsubscribe and List-Unsubscribe-Post for list mail. */
  headers: Record<string, string>;
  /** linkGeneration() when planned (see tracked-links.ts). */
  linkGeneration: number;
}

/** Applies a plan to the rendered HTML; `linkKey` names a tracked URL (LinkKeys.forMessage). */
export function applyDecoration(html: string, plan: DecorationPlan, linkKey: (url: string) => string): Decorated {
  const clickBase = plan.clickBase;
  const out = decorateHtml(html, {
    footer: plan.footer,
    pixelUrl: plan.pixelUrl,
    trackUrl: clickBase !== undefined ? (url) => clickBase + linkKey(url) : undefined,
    skipPrefixes: plan.skipPrefixes,
  });
  return { html: plan.document && isFragment(html) ? documentOpen + out + documentClose : out, headers: plan.headers };
}

// ---- the HTML document around a fragment ---------------------------------------------------------
//
// A body written as a fragment ("<h1>..</h1><p>..</p>") is sent inside a complete HTML document, as
// mail clients expect one: the common email boilerplate ("Good Email Code", Mark Robbins): charset, a
// viewport for phones, no automatic reformatting or data detection, Outlook's DPI setting and a
// 600px column it can center (a conditional table: Outlook ignores max-width), an article landmark
// for screen readers. It is markup mail clients use, not filler. That it lengthens the HTML part
// matters for SpamAssassin's HTML_IMAGE_ONLY_* rules, which fire on any <img> in an HTML part of at
// most 3200 bytes, markup included, so the open pixel alone used to fire them on a bare ~2 KB
// newsletter. Shorter messages still pay for the pixel: the editors say what it costs (README, "Open
// tracking and spam filters").

/** Whether a body is a fragment: no doctype, <html> or <body> of its own (comments aside). */
export function isFragment(html: string): boolean {
  return !/<(?:!doctype|html|body)\b/i.test(html.includes("<!--") ? html.replace(/<!--[\s\S]*?-->/g, "") : html);
}

export const documentOpen = [
  `<!DOCTYPE html>`,
  `<html dir="auto" xmlns="http://www.w3.org/1999/xhtml" xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office">`,
  `<head>`,
  `<meta http-equiv="Content-Type" content="text/html; charset=utf-8">`,
  `<meta name="x-apple-disable-message-reformatting">`,
  `<meta http-equiv="x-ua-compatible" content="ie=edge">`,
  `<meta name="viewport" content="width=device-width, initial-scale=1">`,
  `<meta name="format-detection" content="telephone=no, date=no, address=no, email=no">`,
  `<!--[if mso]><noscript><xml><o:OfficeDocumentSettings><o:PixelsPerInch>96</o:PixelsPerInch></o:OfficeDocumentSettings></xml></noscript><![endif]-->`,
  `</head>`,
  `<body style="margin:0;padding:0;word-spacing:normal;background-color:#ffffff">`,
  `<div role="article" aria-roledescription="email" dir="auto" style="text-size-adjust:100%;-webkit-text-size-adjust:100%;-ms-text-size-adjust:100%">`,
  `<!--[if mso]><table role="presentation" align="center" style="width:600px"><tr><td><![endif]-->`,
  `<div style="max-width:600px;margin:0 auto;padding:24px 16px;font-family:Arial,Helvetica,sans-serif;font-size:16px;line-height:1.5;color:#1f1f1f">`,
  ``,
].join("\n");
export const documentClose = `\n</div>\n<!--[if mso]></td></tr></table><![endif]-->\n</div>\n</body>\n</html>\n`;

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

/** An `<a>`/`<area>` start tag's href attribute, as found by linkSites. */
export interface LinkSite {
  /** The start tag, [tagStart, tagEnd). */
  tagStart: number;
  tagEnd: number;
  /** The href attribute (` href="..."`), [start, end): what tracking replaces. */
  start: number;
  end: number;
  /** The attribute up to the value: ` href=`. */
  prefix: string;
  /** The value as written (entities not decoded), and its quote ("" when unquoted). */
  value: string;
  quote: string;
}

/**
 * The href attributes a tracker may rewrite: one pass of a regex over the markup (no DOM: this runs
 * once per recipient of a message that is not a campaign's); comments and <script>/<style> contents
 * are stepped over, and tags marked `data-no-track` left out.
 */
export function linkSites(html: string): LinkSite[] {
  const sites: LinkSite[] = [];
  for (const t of linkTags(html)) {
    const tag = html.slice(t.start, t.end);
    const h = HREF.exec(tag);
    if (!h || NO_TRACK.test(tag)) continue;
    const start = t.start + h.index;
    sites.push({
      tagStart: t.start,
      tagEnd: t.end,
      start,
      end: start + h[0].length,
      prefix: h[1]!,
      value: h[2] ?? h[3] ?? h[4] ?? "",
      quote: h[2] !== undefined ? '"' : h[3] !== undefined ? "'" : "",
    });
  }
  return sites;
}

/** Every `<a>`/`<area>` start tag, [start, end), outside comments and <script>/<style> contents. */
export function linkTags(html: string): { start: number; end: number }[] {
  const tags: { start: number; end: number }[] = [];
  const re = new RegExp(SCAN);
  let m: RegExpExecArray | null;
  while ((m = re.exec(html))) {
    if (m[0] === "<!--") {
      const end = html.indexOf("-->", m.index + 4);
      re.lastIndex = end < 0 ? html.length : end + 3;
      continue;
    }
    if (m[1]) {
      const end = html.toLowerCase().indexOf(`</${m[1].toLowerCase()}`, re.lastIndex);
      re.lastIndex = end < 0 ? html.length : end;
      continue;
    }
    tags.push({ start: m.index, end: m.index + m[0].length });
  }
  return tags;
}

/** The URL an href value stands for, when it is one a tracker rewrites (absolute http(s), not one of `skip`); else null. */
export function trackableUrl(value: string, skip: readonly string[]): string | null {
  const url = decodeEntities(value).trim();
  return HTTP_URL.test(url) && !skip.some((p) => url.startsWith(p)) ? url : null;
}

/** The href attribute pointing at `tracked`. */
export const trackedHref = (prefix: string, tracked: string) => `${prefix}"${ATTR_UNSAFE.test(tracked) ? escapeAttr(tracked) : tracked}"`;

/** What goes before `</body>`: the footer, then the open pixel. */
export const tailHtml = (d: Pick<HtmlDecoration, "footer" | "pixelUrl">) => (d.footer ?? "") + (d.pixelUrl ? pixelHtml(d.pixelUrl) : "");

/** Where the tail goes: the last `</body` (any case), or the end. */
export function tailAt(html: string): number {
  const close = html.toLowerCase().lastIndexOf("</body");
  return close < 0 ? html.length : close;
}

/**
 * Rewrites links and appends footer and pixel.
 * Not rewritten: anything but absolute http(s) URLs (mailto:, tel:, #anchors, relative links), our
 * own subscription/tracking links, and links marked `data-no-track`.
 */
export function decorateHtml(html: string, d: HtmlDecoration): string {
  const tail = tailHtml(d);
  if (!tail && !d.trackUrl) return html;
  let out = html;
  if (d.trackUrl) {
    const track = d.trackUrl;
    const skip = d.skipPrefixes ?? [];
    const parts: string[] = [];
    let last = 0;
    for (const s of linkSites(html)) {
      const url = trackableUrl(s.value, skip);
      if (url === null) continue;
      parts.push(html.slice(last, s.start), trackedHref(s.prefix, track(url)));
      last = s.end;
    }
    if (parts.length) out = parts.join("") + html.slice(last);
  }
  if (!tail) return out;
  const at = tailAt(out);
  return out.slice(0, at) + tail + out.slice(at);
}

export function pixelHtml(url: string): string {
  return `<img src="${escapeAttr(url)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0" />`;
}

export function footerHtml(unsubscribeUrl: string, manageUrl: string, toEmail?: string, postalAddress?: string | null): string {
  return (
    `<div style="margin:32px 0 0;padding:16px 0 0;border-top:1px solid #e5e5e5;font:12px/1.5 Arial,Helvetica,sans-serif;color:#6b6b6b;text-align:center">` +
    `${escapeText(receivingLine(toEmail))} ` +
    `<a href="${escapeAttr(unsubscribeUrl)}" style="color:#6b6b6b;text-decoration:underline">Unsubscribe</a> &middot; ` +
    `<a href="${escapeAttr(manageUrl)}" style="color:#6b6b6b;text-decoration:underline">Manage preferences</a>` +
    (postalAddress ? `<br>${escapeText(postalAddress)}` : "") +
    `</div>`
  );
}

const escapeText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
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

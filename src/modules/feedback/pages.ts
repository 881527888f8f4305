// The public subscription pages: small, accessible HTML with inline styles and no external assets.
// Forms post back to the page's own URL (action omitted), so they work behind any public URL prefix.
import type { SubscriptionState } from "./subscriptions";

const esc = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

const STYLE = `
:root{color-scheme:light dark}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;background:#f4f4f5;color:#18181b}
main{max-width:30rem;margin:10vh auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.4rem;margin:0 0 1rem}
p{margin:0 0 1rem}
.who{font-weight:600;word-break:break-all}
fieldset{border:0;margin:0 0 1rem;padding:0}
legend{font-weight:600;margin-bottom:.5rem}
label{display:block;padding:.35rem 0;cursor:pointer}
button{font:inherit;padding:.6rem 1.2rem;border:0;border-radius:8px;background:#18181b;color:#fff;cursor:pointer}
button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid #2563eb;outline-offset:2px}
.muted{color:#52525b;font-size:.9rem}
a{color:#1d4ed8}
@media (prefers-color-scheme:dark){body{background:#18181b;color:#f4f4f5}main{background:#27272a}button{background:#f4f4f5;color:#18181b}.muted{color:#a1a1aa}a{color:#93c5fd}}
`.trim();

export function page(title: string, content: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex,nofollow">` +
    `<title>${esc(title)}</title><style>${STYLE}</style></head>` +
    `<body><main>${content}</main></body></html>`
  );
}

/** Masks the address a little (the link may be forwarded): jo***@example.com. */
function masked(email: string): string {
  const at = email.lastIndexOf("@");
  if (at < 1) return email;
  const local = email.slice(0, at);
  return `${local.slice(0, Math.min(2, local.length))}${"*".repeat(Math.max(1, Math.min(6, local.length - 2)))}${email.slice(at)}`;
}

const who = (s: SubscriptionState) => `<span class="who">${esc(masked(s.contact?.email ?? s.token.email))}</span>`;
const from = (s: SubscriptionState) => esc(s.projectName);
const form = (label: string, fields = "") => `<form method="post">${fields}<button type="submit">${esc(label)}</button></form>`;
const link = (href: string, text: string) => `<p class="muted"><a href="${esc(href)}">${esc(text)}</a></p>`;

export interface PageLinks {
  unsubscribeUrl: string;
  subscribeUrl: string;
  manageUrl: string;
}

export function notOnList(s: SubscriptionState): string {
  return page("Not on the list", `<h1>Not on the list</h1><p>${who(s)} is not on the mailing list of ${from(s)}, so there is nothing to change.</p>`);
}

export function unsubscribePage(s: SubscriptionState, links: PageLinks): string {
  if (!s.contact) return notOnList(s);
  if (!s.contact.subscribed) {
    return page(
      "You are unsubscribed",
      `<h1>You are unsubscribed</h1><p>${who(s)} does not receive marketing email from ${from(s)}.</p>${link(links.subscribeUrl, "Subscribe again")}`,
    );
  }
  return page(
    "Unsubscribe",
    `<h1>Unsubscribe</h1><p>Stop marketing email from ${from(s)} to ${who(s)}?</p>` +
      form("Unsubscribe", `<input type="hidden" name="confirm" value="yes">`) +
      link(links.manageUrl, "Manage your preferences instead"),
  );
}

export function unsubscribedPage(s: SubscriptionState, links: PageLinks): string {
  if (!s.contact) return notOnList(s);
  return page(
    "You are unsubscribed",
    `<h1>You are unsubscribed</h1><p role="status">${who(s)} will no longer receive marketing email from ${from(s)}.</p>` +
      `<p class="muted">Transactional messages (receipts, password resets) may still be sent.</p>` +
      link(links.subscribeUrl, "Unsubscribed by mistake? Subscribe again"),
  );
}

export function subscribePage(s: SubscriptionState, links: PageLinks): string {
  if (!s.contact) return page("Link no longer valid", `<h1>Link no longer valid</h1><p>This subscription no longer exists at ${from(s)}.</p>`);
  if (s.contact.subscribed) {
    return page("You are subscribed", `<h1>You are subscribed</h1><p>${who(s)} receives email from ${from(s)}.</p>${link(links.manageUrl, "Manage your preferences")}`);
  }
  return page(
    "Subscribe",
    `<h1>Subscribe</h1><p>Receive email from ${from(s)} at ${who(s)}?</p>` + form("Subscribe", `<input type="hidden" name="confirm" value="yes">`),
  );
}

export function subscribedPage(s: SubscriptionState, links: PageLinks): string {
  if (!s.contact) return subscribePage(s, links);
  return page(
    "You are subscribed",
    `<h1>You are subscribed</h1><p role="status">${who(s)} will receive email from ${from(s)}.</p>${link(links.unsubscribeUrl, "Unsubscribe")}`,
  );
}

export function managePage(s: SubscriptionState, saved = false): string {
  if (!s.contact) return notOnList(s);
  const on = s.contact.subscribed;
  const radio = (value: string, checked: boolean, text: string) =>
    `<label><input type="radio" name="subscribed" value="${value}"${checked ? " checked" : ""}> ${esc(text)}</label>`;
  return page(
    "Email preferences",
    `<h1>Email preferences</h1>` +
      (saved ? `<p role="status"><strong>Your preferences were saved.</strong></p>` : "") +
      `<p>Address: ${who(s)}</p>` +
      form(
        "Save preferences",
        `<fieldset><legend>Marketing email from ${from(s)}</legend>` +
          radio("true", on, "Subscribed: send me email") +
          radio("false", !on, "Unsubscribed: no marketing email") +
          `</fieldset>`,
      ),
  );
}

export function invalidLinkPage(): string {
  return page("Link not valid", `<h1>Link not valid</h1><p>This link is not valid. Please use the link from the most recent email you received.</p>`);
}

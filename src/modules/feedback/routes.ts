// Public endpoints of the feedback loop (no API key: the signed token is the authority).
//   GET  /t/o/:token            open pixel (1x1 GIF)
//   GET  /t/c/:token            click redirect (302 to the signed original URL)
//   GET  /unsubscribe/:token    confirm page;  POST unsubscribes (form or RFC 8058 one-click)
//   GET  /subscribe/:token      confirm page;  POST subscribes
//   GET  /manage/:token         preferences;   POST subscribed=true|false
//   POST /webhooks/sns          Amazon SES notifications through SNS (signature verified)
// A token that does not verify is 404 (JSON envelope for pixel/redirect, an HTML page for pages).
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { readBounded, readBoundedText } from "../../http/body";
import { badRequest, forbidden, notFound } from "../../http/errors";
import { readClickToken, readOpenToken } from "../../mail/tracking/tokens";
import { resolveClick } from "../../mail/tracking/tracked-links";
import { PATHS } from "../../mail/tracking/tracking";
import { recordClick, recordOpen } from "./engagement";
import * as pages from "./pages";
import { handleSns } from "./sns";
import { changeSubscription, loadSubscription, type SubscriptionState } from "./subscriptions";

const PIXEL = Buffer.from("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7", "base64");
const NO_STORE = "no-store, no-cache, must-revalidate, max-age=0, private";
const TokenParams = t.Object({ token: t.String({ minLength: 1, maxLength: 8192 }) });

function html(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": NO_STORE,
      "referrer-policy": "no-referrer",
      "x-robots-tag": "noindex, nofollow",
      "x-content-type-options": "nosniff",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    },
  });
}

/** Bodies these public routes read: a form or an SNS notification, never more. */
const FORM_LIMIT = 64 * 1024;
const SNS_LIMIT = 256 * 1024;

/**
 * Reads a small form body whatever its encoding (urlencoded, multipart, text), through the byte
 * limit (413 past it, the rest never read); an unreadable form is an empty one.
 */
async function formFields(request: Request): Promise<URLSearchParams> {
  const type = request.headers.get("content-type") ?? "";
  const bytes = await readBounded(request, FORM_LIMIT);
  try {
    if (type.startsWith("multipart/form-data")) {
      const fd = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": type } }).formData();
      const out = new URLSearchParams();
      for (const [k, v] of fd.entries()) if (typeof v === "string") out.append(k, v);
      return out;
    }
    return new URLSearchParams(new TextDecoder().decode(bytes));
  } catch {
    return new URLSearchParams();
  }
}

/**
 * The form a handler reads: formFields' result, or (should another parser ever have run first) any
 * other body as fields: an object's string values, a string as urlencoded; anything else is empty.
 */
function formOf(body: unknown): URLSearchParams {
  if (body instanceof URLSearchParams) return body;
  if (typeof body === "string") return new URLSearchParams(body);
  const out = new URLSearchParams();
  if (body && typeof body === "object" && !Array.isArray(body)) {
    for (const [k, v] of Object.entries(body)) if (typeof v === "string") out.append(k, v);
  }
  return out;
}

export function feedbackRoutes(ctx: AppContext) {
  const linksOf = (s: SubscriptionState, token: string) => {
    const base = ctx.config.publicUrl;
    return { unsubscribeUrl: base + PATHS.unsubscribe + token, subscribeUrl: base + PATHS.subscribe + token, manageUrl: base + PATHS.manage + token };
  };
  const safely = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      // Never let bookkeeping break the recipient's image or link.
      ctx.log.error(`tracking: ${what} not recorded`, { error: String((err as Error)?.stack ?? err) });
    }
  };

  /** A subscription page, or the invalid-link page (404) when the token does not verify. */
  const pageOr404 = (s: SubscriptionState | null, render: (s: SubscriptionState) => string, status = 200) =>
    s ? html(status, render(s)) : html(404, pages.invalidLinkPage());
  const showPage = (render: (s: SubscriptionState, token: string) => string) => async ({ params }: { params: { token: string } }) =>
    pageOr404(await loadSubscription(ctx, params.token), (s) => render(s, params.token));
  const formRoute = { params: TokenParams, parse: ({ request }: { request: Request }) => formFields(request) };

  const formPaths = [PATHS.unsubscribe, PATHS.subscribe, PATHS.manage];
  return new Elysia()
    .onRequest(({ request }) => {
      // The app-wide parser reads a body without Content-Type as JSON (curl -d). A one-click POST
      // without one (RFC 8058 senders, bare HTTP clients) is a form: label it before parsing.
      if (request.method !== "POST" || request.headers.has("content-type")) return;
      const path = new URL(request.url).pathname;
      if (formPaths.some((p) => path.startsWith(p))) request.headers.set("content-type", "application/x-www-form-urlencoded");
    })
    .get(
      `${PATHS.open}:token`,
      async ({ params }) => {
        const tok = readOpenToken(ctx, params.token);
        if (!tok) throw notFound("Tracking link");
        await safely("open", () => recordOpen(ctx, tok.emailId));
        return new Response(PIXEL, { headers: { "content-type": "image/gif", "cache-control": NO_STORE, "content-length": String(PIXEL.length) } });
      },
      { params: TokenParams },
    )
    .get(
      `${PATHS.click}:token`,
      async ({ params }) => {
        const tok = readClickToken(ctx, params.token);
        const link = tok ? await resolveClick(ctx, tok.emailId, tok.linkKey) : null;
        if (!tok || !link || !/^https?:\/\//i.test(link.url)) throw notFound("Tracking link");
        await safely("click", () => recordClick(ctx, tok.emailId, link.url));
        return new Response(null, { status: 302, headers: { location: link.url, "cache-control": NO_STORE, "referrer-policy": "no-referrer" } });
      },
      { params: TokenParams },
    )
    .get(`${PATHS.unsubscribe}:token`, showPage((s, token) => pages.unsubscribePage(s, linksOf(s, token))), { params: TokenParams })
    .post(
      `${PATHS.unsubscribe}:token`,
      async ({ params, body }) => {
        // RFC 8058: a POST with List-Unsubscribe=One-Click unsubscribes at once; so does the page's form.
        const oneClick = formOf(body).get("List-Unsubscribe") === "One-Click";
        const s = await changeSubscription(ctx, params.token, false, oneClick ? "one-click" : "unsubscribe-page");
        return pageOr404(s, (s) => pages.unsubscribedPage(s, linksOf(s, params.token)));
      },
      formRoute,
    )
    .get(`${PATHS.subscribe}:token`, showPage((s, token) => pages.subscribePage(s, linksOf(s, token))), { params: TokenParams })
    .post(
      `${PATHS.subscribe}:token`,
      async ({ params }) => pageOr404(await changeSubscription(ctx, params.token, true, "subscribe-page"), (s) => pages.subscribedPage(s, linksOf(s, params.token))),
      formRoute,
    )
    .get(`${PATHS.manage}:token`, showPage((s) => pages.managePage(s)), { params: TokenParams })
    .post(
      `${PATHS.manage}:token`,
      async ({ params, body }) => {
        const v = formOf(body).get("subscribed");
        if (v !== "true" && v !== "false") return pageOr404(await loadSubscription(ctx, params.token), (s) => pages.managePage(s), 400);
        return pageOr404(await changeSubscription(ctx, params.token, v === "true", "manage-page"), (s) => pages.managePage(s, true));
      },
      formRoute,
    )
    .post(
      "/webhooks/sns",
      async ({ body }) => {
        const r = await handleSns(ctx, body);
        if (r.status === 400) throw badRequest(`Not a valid SNS message: ${r.outcome}`);
        if (r.status === 403) throw forbidden("SNS message signature could not be verified");
        return { success: true, outcome: r.outcome };
      },
      // SNS posts JSON labelled text/plain: read the text whatever the label says.
      { parse: async ({ request }) => (request.headers.get("content-length") === "0" ? "" : readBoundedText(request, SNS_LIMIT)) },
    );
}

import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { page } from "../feedback/pages";
import { confirm, CONFIRM_PATH } from "./service";

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;");

function html(status: number, body: string): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "referrer-policy": "no-referrer", "x-robots-tag": "noindex" },
  });
}

/** GET /confirm/:token: the link of a double opt-in email (public; the token is signed). */
export function doubleOptInRoutes(ctx: AppContext) {
  return new Elysia().get(
    `${CONFIRM_PATH}:token`,
    async ({ params }) => {
      const r = await confirm(ctx, params.token);
      switch (r.kind) {
        case "confirmed":
          if (r.redirectUrl) return new Response(null, { status: 303, headers: { location: r.redirectUrl, "cache-control": "no-store", "referrer-policy": "no-referrer" } });
          return html(200, page("Subscription confirmed", `<h1>Subscription confirmed</h1><p role="status">Thank you: you are now subscribed to email from ${esc(r.projectName)}.</p>`));
        case "used":
          return html(410, page("Link already used", `<h1>Link already used</h1><p>This confirmation link has already been used. If you confirmed before, you are subscribed; nothing more to do.</p>`));
        case "expired":
          return html(410, page("Link expired", `<h1>Link expired</h1><p>This confirmation link has expired (links work for 7 days). Subscribe again to receive a new one.</p>`));
        default:
          return html(404, page("Link not valid", `<h1>Link not valid</h1><p>This confirmation link is not valid. Please use the link from the most recent confirmation email you received.</p>`));
      }
    },
    { params: t.Object({ token: t.String() }) },
  );
}

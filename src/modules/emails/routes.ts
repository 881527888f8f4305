import { optionalStrings } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import type { EmailStatus } from "../../db/tables/delivery";
import { authPlugin } from "../../http/auth";
import { badRequest } from "../../http/errors";
import { parseCursorParams } from "../../http/pagination";
import { EMAIL_STATUSES, get, list, message, raw } from "./service";

export function emailRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get(
      "/emails",
      ({ auth, query }) => {
        if (query.status && !EMAIL_STATUSES.includes(query.status as EmailStatus)) {
          throw badRequest(`status must be one of ${EMAIL_STATUSES.join(", ")}`, { details: { status: query.status } });
        }
        return list(
          ctx,
          auth.projectId,
          { contactId: query.contactId, campaignId: query.campaignId, status: query.status as EmailStatus | undefined, to: query.to },
          parseCursorParams(query),
        );
      },
      {
        auth: "secret",
        query: optionalStrings("limit", "cursor", "contactId", "campaignId", "status", "to"),
      },
    )
    .get("/emails/:id", ({ auth, params }) => get(ctx, auth.projectId, params.id), { auth: "secret", params: t.Object({ id: t.String() }) })
    .get(
      "/emails/:id/raw",
      async ({ auth, params }) =>
        new Response(new Uint8Array(await raw(ctx, auth.projectId, params.id)), {
          headers: { "content-type": "message/rfc822", "content-disposition": `attachment; filename="${params.id.replace(/[^A-Za-z0-9-]/g, "")}.eml"` },
        }),
      { auth: "secret", params: t.Object({ id: t.String() }) },
    )
    .get("/emails/:id/message", ({ auth, params }) => message(ctx, auth.projectId, params.id), { auth: "secret", params: t.Object({ id: t.String() }) });
}

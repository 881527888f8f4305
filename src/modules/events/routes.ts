import { optionalStrings } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { parseCursorParams } from "../../http/pagination";
import * as svc from "./service";

const TrackBody = t.Object({
  email: t.String({ maxLength: 320 }),
  event: t.String({ minLength: 1, maxLength: 255 }),
  subscribed: t.Optional(t.Boolean()),
  data: t.Optional(t.Unknown()),
});

const PageQuery = {
  limit: t.Optional(t.String()),
  cursor: t.Optional(t.String()),
};

export function eventRoutes(ctx: AppContext) {
  const trackHandler = ({ auth, body, request, path }: { auth: { projectId: string; via: string }; body: svc.TrackRequest; request: Request; path: string }) =>
    svc.track(ctx, auth.projectId, body, { key: request.headers.get("idempotency-key"), method: "POST", path }, auth.via);

  return new Elysia()
    .use(authPlugin(ctx))
    .post("/v1/track", trackHandler, { auth: "track", body: TrackBody })
    .post("/events/track", trackHandler, { auth: "track", body: TrackBody })
    .get(
      "/events",
      ({ auth, query }) =>
        svc.listEvents(ctx, auth.projectId, { name: query.name, contactId: query.contactId, page: parseCursorParams(query) }),
      { auth: "secret", query: t.Object({ ...PageQuery, name: t.Optional(t.String()), contactId: t.Optional(t.String()) }) },
    )
    .get("/events/stats", ({ auth, query }) => svc.stats(ctx, auth.projectId, query), {
      auth: "secret",
      query: optionalStrings("days", "from", "to"),
    })
    .get("/events/names", ({ auth }) => svc.names(ctx, auth.projectId), { auth: "secret" })
    .get(
      "/events/contact/:contactId",
      ({ auth, params, query }) =>
        svc.listEvents(ctx, auth.projectId, { contactId: params.contactId, name: query.name, page: parseCursorParams(query) }),
      { auth: "secret", params: t.Object({ contactId: t.String() }), query: t.Object({ ...PageQuery, name: t.Optional(t.String()) }) },
    )
    .get("/events/:eventName/usage", ({ auth, params }) => svc.usage(ctx, auth.projectId, params.eventName), {
      auth: "secret",
      params: t.Object({ eventName: t.String() }),
    })
    .delete("/events/:eventName", ({ auth, params }) => svc.deleteByName(ctx, auth.projectId, params.eventName), {
      auth: "secret",
      params: t.Object({ eventName: t.String() }),
    });
}

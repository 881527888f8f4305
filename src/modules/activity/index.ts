import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { badRequest } from "../../http/errors";
import { parseCursorParams, parseLimit } from "../../http/pagination";
import type { ModuleDef } from "../../http/module";
import * as svc from "./service";

const Window = { from: t.Optional(t.String()), to: t.Optional(t.String()) };

export function activityRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get(
      "/activity",
      ({ auth, query }) =>
        svc.feed(
          ctx,
          auth.projectId,
          {
            types: query.type ? query.type.split(",").map((s) => s.trim()).filter(Boolean) : undefined,
            name: query.name || undefined,
            contactId: query.contactId || undefined,
            fromMs: svc.parseTime(query.from, "from"),
            toMs: svc.parseTime(query.to, "to"),
          },
          parseCursorParams(query),
        ),
      {
        auth: "secret",
        query: t.Object({
          limit: t.Optional(t.String()),
          cursor: t.Optional(t.String()),
          type: t.Optional(t.String()),
          name: t.Optional(t.String()),
          contactId: t.Optional(t.String()),
          ...Window,
        }),
      },
    )
    .get(
      "/activity/stats",
      ({ auth, query }) => svc.stats(ctx, auth.projectId, { fromMs: svc.parseTime(query.from, "from"), toMs: svc.parseTime(query.to, "to") }),
      { auth: "secret", query: t.Object(Window) },
    )
    .get(
      "/activity/recent-count",
      ({ auth, query }) => {
        const minutes = query.minutes === undefined ? 60 : Number(query.minutes);
        if (!Number.isFinite(minutes) || minutes <= 0 || minutes > 5_256_000) throw badRequest("minutes must be a positive number of at most 10 years");
        return svc.recentCount(ctx, auth.projectId, svc.parseTime(query.since, "since"), minutes);
      },
      { auth: "secret", query: t.Object({ minutes: t.Optional(t.String()), since: t.Optional(t.String()) }) },
    )
    .get("/activity/types", ({ auth }) => svc.types(ctx, auth.projectId), { auth: "secret" })
    .get("/activity/upcoming", ({ auth, query }) => svc.upcoming(ctx, auth.projectId, parseLimit(query.limit, 50, 200)), {
      auth: "secret",
      query: t.Object({ limit: t.Optional(t.String()) }),
    });
}

export const activityModule: ModuleDef = { name: "activity", routes: activityRoutes };

import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { parseLimit } from "../../http/pagination";
import * as svc from "./service";

const Window = { from: t.Optional(t.String()), to: t.Optional(t.String()) };

/** Analytics (secret key or session): every answer is read from the rollups or the campaigns' counters. */
export function analyticsRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/analytics/timeseries", ({ auth, query }) => svc.timeseries(ctx, auth.projectId, query), {
      auth: "secret",
      query: t.Object({ ...Window, interval: t.Optional(t.String()) }),
    })
    .get(
      "/analytics/top-campaigns",
      ({ auth, query }) => svc.topCampaigns(ctx, auth.projectId, query, parseLimit(query.limit, 10, 100)),
      { auth: "secret", query: t.Object({ ...Window, metric: t.Optional(t.String()), limit: t.Optional(t.String()) }) },
    )
    .get("/analytics/campaign-stats", ({ auth, query }) => svc.campaignStats(ctx, auth.projectId, query), {
      auth: "secret",
      query: t.Object(Window),
    })
    .get("/analytics/top-events", ({ auth, query }) => svc.topEvents(ctx, auth.projectId, query, parseLimit(query.limit, 10, 100)), {
      auth: "secret",
      query: t.Object({ ...Window, limit: t.Optional(t.String()) }),
    });
}

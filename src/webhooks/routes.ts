import { created, succeeded } from "../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../context";
import { authPlugin } from "../http/auth";
import { parseCursorParams } from "../http/pagination";
import * as schemas from "./schemas";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });

export function webhookRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/webhook-endpoints", ({ auth, query }) => svc.listEndpoints(ctx, auth.projectId, parseCursorParams(query)), {
      auth: "secret",
      query: schemas.ListQuery,
    })
    .post(
      "/webhook-endpoints",
      ({ auth, body, set }) => created(set, svc.createEndpoint(ctx, auth.projectId, body)),
      { auth: "secret", body: schemas.CreateEndpoint, response: { 201: schemas.Endpoint } },
    )
    .get("/webhook-endpoints/:id", async ({ auth, params }) => svc.viewEndpoint(await svc.getEndpointOr404(ctx, auth.projectId, params.id)), {
      auth: "secret",
      params: IdParams,
      response: { 200: schemas.Endpoint },
    })
    .patch("/webhook-endpoints/:id", ({ auth, params, body }) => svc.updateEndpoint(ctx, auth.projectId, params.id, body), {
      auth: "secret",
      params: IdParams,
      body: schemas.UpdateEndpoint,
      response: { 200: schemas.Endpoint },
    })
    .delete("/webhook-endpoints/:id", ({ auth, params }) => succeeded(svc.deleteEndpoint(ctx, auth.projectId, params.id)), { auth: "secret", params: IdParams })
    .get(
      "/webhook-endpoints/:id/deliveries",
      ({ auth, params, query }) => svc.listDeliveries(ctx, auth.projectId, params.id, query.status, parseCursorParams(query)),
      { auth: "secret", params: IdParams, query: schemas.DeliveriesQuery },
    )
    .post("/webhook-endpoints/:id/test", ({ auth, params }) => svc.testEndpoint(ctx, auth.projectId, params.id), {
      auth: "secret",
      params: IdParams,
      response: { 200: schemas.TestResult },
    });
}

import { bareCheck, created, succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { parseOffsetParams } from "../../http/pagination";
import * as schemas from "./schemas";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with secret auth (a new object each time: Elysia keeps and changes the options it is given). */
const secretById = () => ({ auth: "secret" as const, params: IdParams });
const isObject = (v: unknown) => typeof v === "object" && v !== null && !Array.isArray(v);

export function segmentRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .macro(
      // The spec's bare case: a DYNAMIC segment (the default type) without a condition object.
      bareCheck("requireCondition", (b) =>
        (b.type ?? "DYNAMIC") === "DYNAMIC" && !isObject(b.condition) ? "condition is required for a DYNAMIC segment: { logic, groups: [{ filters: [...] }] }" : null,
      ),
    )
    .get("/segments", ({ auth }) => svc.listSegments(ctx, auth.projectId), { auth: "secret" })
    .post("/segments", ({ auth, body, set }) => created(set, svc.createSegment(ctx, auth.projectId, body)), { auth: "secret", requireCondition: true, body: schemas.CreateSegment })
    .get("/segments/:id", ({ auth, params }) => svc.getSegment(ctx, auth.projectId, params.id), secretById())
    .patch("/segments/:id", ({ auth, params, body }) => svc.updateSegment(ctx, auth.projectId, params.id, body), {
      auth: "secret",
      params: IdParams,
      body: schemas.UpdateSegment,
    })
    .delete("/segments/:id", ({ auth, params }) => succeeded(svc.deleteSegment(ctx, auth.projectId, params.id)), secretById())
    .get("/segments/:id/contacts", ({ auth, params, query }) => svc.listMembers(ctx, auth.projectId, params.id, parseOffsetParams(query, 100)), {
      auth: "secret",
      params: IdParams,
      query: schemas.MembersQuery,
    })
    .post("/segments/:id/members", ({ auth, params, body }) => svc.addMembers(ctx, auth.projectId, params.id, body), {
      auth: "secret",
      params: IdParams,
      body: schemas.AddMembers,
    })
    .delete("/segments/:id/members", ({ auth, params, body }) => svc.removeMembers(ctx, auth.projectId, params.id, body), {
      auth: "secret",
      params: IdParams,
      body: schemas.RemoveMembers,
    })
    .post("/segments/:id/refresh", ({ auth, params }) => svc.refreshSegment(ctx, auth.projectId, params.id), secretById())
    .post("/segments/:id/compute", ({ auth, params }) => svc.computeSegmentById(ctx, auth.projectId, params.id), secretById());
}

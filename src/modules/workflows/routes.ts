import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { badRequest } from "../../http/errors";
import { parseOffsetParams } from "../../http/pagination";
import * as schemas from "./schemas";
import * as svc from "./service";

const Id = t.Object({ id: t.String() });
const StepParams = t.Object({ id: t.String(), stepId: t.String() });
const TransitionParams = t.Object({ id: t.String(), transitionId: t.String() });
const ExecutionParams = t.Object({ id: t.String(), executionId: t.String() });

function parseSplice(raw: string | undefined): boolean {
  if (raw === undefined || raw === "" || raw === "false" || raw === "0") return false;
  if (raw === "true" || raw === "1") return true;
  throw badRequest("splice must be true or false", { details: { splice: raw } });
}

export function workflowRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/workflows", ({ auth, query }) => svc.listWorkflows(ctx, auth.projectId, query, parseOffsetParams(query)), { auth: "secret", query: schemas.ListQuery })
    .get("/workflows/fields", ({ auth }) => svc.conditionFields(ctx, auth.projectId), { auth: "secret" })
    .post(
      "/workflows",
      async ({ auth, body, set }) => {
        const w = await svc.createWorkflow(ctx, auth.projectId, body);
        set.status = 201;
        return w;
      },
      { auth: "secret", body: schemas.CreateWorkflow },
    )
    .get("/workflows/:id", ({ auth, params }) => svc.workflowDetail(ctx, auth.projectId, params.id), { auth: "secret", params: Id })
    .patch("/workflows/:id", ({ auth, params, body }) => svc.updateWorkflow(ctx, auth.projectId, params.id, body), { auth: "secret", params: Id, body: schemas.UpdateWorkflow })
    .delete(
      "/workflows/:id",
      async ({ auth, params }) => {
        await svc.deleteWorkflow(ctx, auth.projectId, params.id);
        return { success: true };
      },
      { auth: "secret", params: Id },
    )
    .post(
      "/workflows/:id/steps",
      async ({ auth, params, body, set }) => {
        const s = await svc.addStep(ctx, auth.projectId, params.id, body);
        set.status = 201;
        return s;
      },
      { auth: "secret", params: Id, body: schemas.CreateStep },
    )
    .patch("/workflows/:id/steps/:stepId", ({ auth, params, body }) => svc.updateStep(ctx, auth.projectId, params.id, params.stepId, body), {
      auth: "secret",
      params: StepParams,
      body: schemas.UpdateStep,
    })
    .delete(
      "/workflows/:id/steps/:stepId",
      async ({ auth, params, query }) => {
        await svc.deleteStep(ctx, auth.projectId, params.id, params.stepId, parseSplice(query.splice));
        return { success: true };
      },
      { auth: "secret", params: StepParams, query: schemas.DeleteStepQuery },
    )
    .post(
      "/workflows/:id/transitions",
      async ({ auth, params, body, set }) => {
        const tr = await svc.addTransition(ctx, auth.projectId, params.id, body);
        set.status = 201;
        return tr;
      },
      { auth: "secret", params: Id, body: schemas.CreateTransition },
    )
    .delete(
      "/workflows/:id/transitions/:transitionId",
      async ({ auth, params }) => {
        await svc.deleteTransition(ctx, auth.projectId, params.id, params.transitionId);
        return { success: true };
      },
      { auth: "secret", params: TransitionParams },
    )
    .post(
      "/workflows/:id/executions/cancel-all",
      ({ auth, params }) => svc.cancelAll(ctx, auth.projectId, params.id),
      { auth: "secret", params: Id },
    )
    .post(
      "/workflows/:id/executions",
      async ({ auth, params, body, set }) => {
        const e = await svc.startExecution(ctx, auth.projectId, params.id, body ?? {});
        set.status = 201;
        return e;
      },
      { auth: "secret", params: Id, body: schemas.StartExecution },
    )
    .get(
      "/workflows/:id/executions",
      ({ auth, params, query }) => svc.listExecutions(ctx, auth.projectId, params.id, query.status, parseOffsetParams(query)),
      { auth: "secret", params: Id, query: schemas.ExecutionsQuery },
    )
    .get("/workflows/:id/executions/:executionId", ({ auth, params }) => svc.getExecution(ctx, auth.projectId, params.id, params.executionId), {
      auth: "secret",
      params: ExecutionParams,
    })
    .delete("/workflows/:id/executions/:executionId", ({ auth, params }) => svc.cancelExecution(ctx, auth.projectId, params.id, params.executionId), {
      auth: "secret",
      params: ExecutionParams,
    });
}

import { created, succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { badRequest } from "../../http/errors";
import { parseOffsetParams } from "../../http/pagination";
import * as schemas from "./schemas";
import * as svc from "./service";

const Id = t.Object({ id: t.String() });
/** The options of a route on one id with secret auth (a new object each time: Elysia keeps and changes the options it is given). */
const secretById = () => ({ auth: "secret" as const, params: Id });
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
    .post("/workflows", ({ auth, body, set }) => created(set, svc.createWorkflow(ctx, auth.projectId, body)), { auth: "secret", body: schemas.CreateWorkflow })
    .get("/workflows/:id", ({ auth, params }) => svc.workflowDetail(ctx, auth.projectId, params.id), secretById())
    .patch("/workflows/:id", ({ auth, params, body }) => svc.updateWorkflow(ctx, auth.projectId, params.id, body), { ...secretById(), body: schemas.UpdateWorkflow })
    .delete("/workflows/:id", ({ auth, params }) => succeeded(svc.deleteWorkflow(ctx, auth.projectId, params.id)), secretById())
    .post("/workflows/:id/steps", ({ auth, params, body, set }) => created(set, svc.addStep(ctx, auth.projectId, params.id, body)), { ...secretById(), body: schemas.CreateStep })
    .patch("/workflows/:id/steps/:stepId", ({ auth, params, body }) => svc.updateStep(ctx, auth.projectId, params.id, params.stepId, body), {
      auth: "secret",
      params: StepParams,
      body: schemas.UpdateStep,
    })
    .delete(
      "/workflows/:id/steps/:stepId",
      ({ auth, params, query }) => succeeded(svc.deleteStep(ctx, auth.projectId, params.id, params.stepId, parseSplice(query.splice))),
      { auth: "secret", params: StepParams, query: schemas.DeleteStepQuery },
    )
    .post(
      "/workflows/:id/transitions",
      ({ auth, params, body, set }) => created(set, svc.addTransition(ctx, auth.projectId, params.id, body)),
      { ...secretById(), body: schemas.CreateTransition },
    )
    .delete(
      "/workflows/:id/transitions/:transitionId",
      ({ auth, params }) => succeeded(svc.deleteTransition(ctx, auth.projectId, params.id, params.transitionId)),
      { auth: "secret", params: TransitionParams },
    )
    .post("/workflows/:id/executions/cancel-all", ({ auth, params }) => svc.cancelAll(ctx, auth.projectId, params.id), secretById())
    .post(
      "/workflows/:id/executions",
      ({ auth, params, body, set }) => created(set, svc.startExecution(ctx, auth.projectId, params.id, body ?? {})),
      { ...secretById(), body: schemas.StartExecution },
    )
    .get(
      "/workflows/:id/executions",
      ({ auth, params, query }) => svc.listExecutions(ctx, auth.projectId, params.id, query.status, parseOffsetParams(query)),
      { ...secretById(), query: schemas.ExecutionsQuery },
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

import { created, succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { parseOffsetParams } from "../../http/pagination";
import * as schemas from "./schemas";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with secret auth (a new object each time: Elysia keeps and changes the options it is given). */
const secretById = () => ({ auth: "secret" as const, params: IdParams });

export function campaignRoutes(ctx: AppContext) {
  /** A campaign as the API shows it (with its counters), once the service has it. */
  const viewed = async (row: ReturnType<typeof svc.getCampaign>) => svc.view(ctx, await row);
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/campaigns", ({ auth, query }) => svc.listCampaigns(ctx, auth.projectId, query, parseOffsetParams(query)), {
      auth: "secret",
      query: schemas.ListQuery,
    })
    .post(
      "/campaigns",
      async ({ auth, body, set }) => created(set, { success: true, data: svc.viewCampaign(await svc.createCampaign(ctx, auth.projectId, body)) }),
      { auth: "secret", body: schemas.CreateCampaign },
    )
    .get("/campaigns/:id", ({ auth, params }) => viewed(svc.getCampaign(ctx, auth.projectId, params.id)), secretById())
    .put("/campaigns/:id", ({ auth, params, body }) => viewed(svc.updateCampaign(ctx, auth.projectId, params.id, body)), { ...secretById(), body: schemas.UpdateCampaign })
    .delete("/campaigns/:id", ({ auth, params }) => succeeded(svc.deleteCampaign(ctx, auth.projectId, params.id)), secretById())
    .post("/campaigns/:id/duplicate", async ({ auth, params, set }) => created(set, svc.viewCampaign(await svc.duplicateCampaign(ctx, auth.projectId, params.id))), secretById())
    .post("/campaigns/:id/send", ({ auth, params, body }) => svc.sendCampaign(ctx, auth.projectId, params.id, body?.scheduledFor), {
      auth: "secret",
      params: IdParams,
      body: schemas.SendBody,
    })
    .post("/campaigns/:id/cancel", ({ auth, params }) => viewed(svc.cancelCampaign(ctx, auth.projectId, params.id)), secretById())
    .post("/campaigns/:id/test", ({ auth, params, body }) => svc.testCampaign(ctx, auth.projectId, params.id, body.email), {
      auth: "secret",
      params: IdParams,
      body: schemas.TestBody,
    })
    .get("/campaigns/:id/stats", ({ auth, params }) => svc.campaignStats(ctx, auth.projectId, params.id), secretById());
}

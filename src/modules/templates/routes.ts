import { bareCheck, created, succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { parseOffsetParams } from "../../http/pagination";
import { PreviewBody, previewTemplate } from "./preview";
import * as schemas from "./schemas";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with secret auth (a new object each time: Elysia keeps and changes the options it is given). */
const secretById = () => ({ auth: "secret" as const, params: IdParams });

/** A template as the API shows it, once the service has it. */
const viewed = async (row: Promise<svc.TemplateRow>) => svc.viewTemplate(await row);

export function templateRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .macro(
      // The spec's one bare case for templates: no `from` at all.
      bareCheck("requireFrom", (b) => (b.from === undefined || b.from === null || b.from === "" ? "from is required: the sender address of the template (its domain must be verified)" : null)),
    )
    .get("/templates", ({ auth, query }) => svc.listTemplates(ctx, auth.projectId, query, parseOffsetParams(query)), { auth: "secret", query: schemas.ListQuery })
    .post(
      "/templates",
      ({ auth, body, set }) => created(set, viewed(svc.createTemplate(ctx, auth.projectId, body))),
      {
        auth: "secret",
        requireFrom: true,
        body: schemas.CreateTemplate,
      },
    )
    .post("/templates/preview", ({ body }) => previewTemplate(ctx, body), { auth: "secret", body: PreviewBody })
    .get("/templates/:id", ({ auth, params }) => viewed(svc.getTemplate(ctx, auth.projectId, params.id)), secretById())
    .patch("/templates/:id", ({ auth, params, body }) => viewed(svc.updateTemplate(ctx, auth.projectId, params.id, body)), { ...secretById(), body: schemas.UpdateTemplate })
    .delete("/templates/:id", ({ auth, params }) => succeeded(svc.deleteTemplate(ctx, auth.projectId, params.id)), secretById())
    .post("/templates/:id/duplicate", ({ auth, params, set }) => created(set, viewed(svc.duplicateTemplate(ctx, auth.projectId, params.id))), secretById())
    .get("/templates/:id/usage", ({ auth, params }) => svc.templateUsage(ctx, auth.projectId, params.id), secretById());
}

import { accepted, created } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { parseCursorParams } from "../../http/pagination";
import { readCsvUpload } from "../contacts/routes";
import { jobStatus } from "../contacts/jobs";
import { importResult, SUPPRESSION_IMPORT_JOB, startSuppressionImport } from "./import";
import * as svc from "./service";

const Source = t.Object({
  type: t.Union([t.Literal("EMAIL"), t.Literal("API"), t.Literal("IMPORT")]),
  emailId: t.Union([t.String(), t.Null()], { description: "the email whose bounce or complaint added the address (GET /emails/:id)" }),
  jobId: t.Union([t.String(), t.Null()], { description: "the import job that added the address" }),
});
export const SuppressionSchema = t.Object({
  id: t.String(),
  email: t.String(),
  reason: t.Union([t.Literal("HARD_BOUNCE"), t.Literal("COMPLAINT"), t.Literal("MANUAL"), t.Literal("UNSUBSCRIBE")]),
  detail: t.Union([t.String(), t.Null()], { description: "why: the bounce reply, the complaint's feedback type, or the note given" }),
  source: Source,
  createdAt: t.String(),
});

export function suppressionRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get(
      "/suppressions",
      ({ auth, query }) => svc.list(ctx, auth.projectId, { reason: query.reason, email: query.email }, parseCursorParams(query)),
      {
        auth: "secret",
        query: t.Object({
          limit: t.Optional(t.String()),
          cursor: t.Optional(t.String()),
          reason: t.Optional(t.String({ description: "HARD_BOUNCE, COMPLAINT, MANUAL or UNSUBSCRIBE" })),
          email: t.Optional(t.String({ description: "case-insensitive substring of the address" })),
        }),
        response: { 200: t.Object({ data: t.Array(SuppressionSchema), cursor: t.Union([t.String(), t.Null()]), hasMore: t.Boolean(), total: t.Number() }) },
      },
    )
    .post(
      "/suppressions",
      ({ auth, body, set }) => created(set, svc.create(ctx, auth.projectId, body)),
      {
        auth: "secret",
        body: t.Object({
          email: t.String({ maxLength: 320 }),
          reason: t.Optional(t.Literal("MANUAL")),
          detail: t.Optional(t.Union([t.String({ maxLength: svc.MAX_DETAIL }), t.Null()])),
        }),
        response: { 201: SuppressionSchema },
      },
    )
    .post("/suppressions/import", async ({ auth, body, set }) => accepted(set, startSuppressionImport(ctx, auth.projectId, await readCsvUpload(body))), { auth: "secret" })
    .get(
      "/suppressions/import/:jobId",
      ({ auth, params }) =>
        jobStatus(ctx, auth.projectId, params.jobId, [SUPPRESSION_IMPORT_JOB], (row) => importResult(row.checkpoint ? JSON.parse(row.checkpoint) : null)),
      { auth: "secret", params: t.Object({ jobId: t.String() }) },
    )
    .get("/suppressions/:id", ({ auth, params }) => svc.get(ctx, auth.projectId, params.id), {
      auth: "secret",
      params: t.Object({ id: t.String() }),
      response: { 200: SuppressionSchema },
    })
    .delete("/suppressions/:id", ({ auth, params }) => svc.lift(ctx, auth.projectId, params.id), {
      auth: "secret",
      params: t.Object({ id: t.String() }),
      response: { 200: SuppressionSchema },
    });
}

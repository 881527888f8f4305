import { succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { invalidField } from "../../http/errors";
import { assertProjectAccess } from "./access";
import { dmarcSummary } from "./dmarc";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with optionalProject auth (a new object each time: Elysia keeps and changes the options it is given). */
const optionalProjectById = () => ({ auth: "optionalProject" as const, params: IdParams });

export function domainRoutes(ctx: AppContext) {
  /** Loads a domain the caller may see (404 otherwise, also for other projects' ids). */
  const load = async (auth: Parameters<typeof assertProjectAccess>[1], id: string, headers: Record<string, unknown>) => {
    const row = await svc.getDomain(ctx, id);
    await assertProjectAccess(ctx, auth, row.project_id, "Domain", headers);
    return row;
  };
  /** The domain a `/domains/:id…` route names, once the caller may see it. */
  const domainOf = (c: { auth: Parameters<typeof assertProjectAccess>[1]; params: { id: string }; set: { headers: Record<string, unknown> } }) => load(c.auth, c.params.id, c.set.headers);

  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/domains",
      async ({ auth, body, set }) => {
        const projectId = body.projectId ?? (auth.projectId || undefined);
        if (!projectId) throw invalidField("projectId", "Required", "invalid_type", "undefined");
        await assertProjectAccess(ctx, auth, projectId, "Project", set.headers);
        const row = await svc.addDomain(ctx, projectId, body.domain, { ed25519: body.ed25519 });
        set.status = 201;
        return svc.viewDomain(row, ctx);
      },
      {
        auth: "optionalProject",
        body: t.Object({
          // Optional with a secret key (the key names the project); required with a session.
          projectId: t.Optional(t.String({ minLength: 1 })),
          domain: t.String({ minLength: 1, maxLength: 255 }),
          /** Also sign with an Ed25519 key (RFC 8463) once its record is published. */
          ed25519: t.Optional(t.Boolean()),
        }),
      },
    )
    .get(
      "/domains/project/:projectId",
      async ({ auth, params, set }) => {
        await assertProjectAccess(ctx, auth, params.projectId, "Project", set.headers);
        return (await svc.listDomains(ctx, params.projectId)).map((d) => svc.viewDomain(d, ctx));
      },
      { auth: "optionalProject", params: t.Object({ projectId: t.String() }) },
    )
    .get("/domains/:id", async (c) => svc.viewDomain(await domainOf(c), ctx), optionalProjectById())
    .get("/domains/:id/verify", async (c) => svc.viewDomain(await svc.verifyDomain(ctx, await domainOf(c)), ctx), optionalProjectById())
    .patch(
      "/domains/:id",
      async (c) => {
        const { body } = c;
        let row = await domainOf(c);
        if (body.ed25519 !== undefined) row = await svc.setEd25519(ctx, row, body.ed25519);
        return svc.viewDomain(row, ctx);
      },
      { ...optionalProjectById(), body: t.Object({ ed25519: t.Optional(t.Boolean()) }) },
    )
    .get("/domains/:id/dmarc", async (c) => dmarcSummary(ctx, await domainOf(c)), optionalProjectById())
    .post("/domains/:id/rotate-dkim", async (c) => svc.viewDomain(await svc.rotateDkim(ctx, await domainOf(c)), ctx), optionalProjectById())
    .delete("/domains/:id", async (c) => succeeded(svc.deleteDomain(ctx, await domainOf(c))), optionalProjectById());
}

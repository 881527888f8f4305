import { created, succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { reputation } from "../../mail/deliverability/reputation";
import { authPlugin, countSessionRequest, type AuthInfo } from "../../http/auth";
import { forbidden, notFound } from "../../http/errors";
import * as svc from "./service";

const Name = t.String({ minLength: 1, maxLength: 100 });
const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with optionalProject auth (a new object each time: Elysia keeps and changes the options it is given). */
const optionalProjectById = () => ({ auth: "optionalProject" as const, params: IdParams });
/** The options of a route on one id with session auth (a new object each time: Elysia keeps and changes the options it is given). */
const sessionById = () => ({ auth: "session" as const, params: IdParams });

/** Role of the caller on `projectId`: a session member's role, or ADMIN for the project's own secret key. */
/** Runs `fn` with the caller's role once callerRole has let them in. */
async function asCaller<T>(ctx: AppContext, auth: AuthInfo, projectId: string, headers: Record<string, unknown>, fn: (role: string) => T | Promise<T>): Promise<T> {
  return fn(await callerRole(ctx, auth, projectId, headers));
}

async function callerRole(ctx: AppContext, auth: AuthInfo, projectId: string, headers: Record<string, unknown>): Promise<string> {
  if (auth.via !== "session") {
    if (auth.projectId !== projectId) throw notFound("Project");
    return "ADMIN";
  }
  const { role } = await svc.projectForMember(ctx, projectId, auth.userId!);
  countSessionRequest(ctx, auth, projectId, headers);
  return role;
}

/** docs/api.md "Billing, uploads, project reset", **Security**: rates in percent (0-100) over the last 30 days, the suspension state. */
async function security(ctx: AppContext, projectId: string) {
  const p = await svc.suspensionState(ctx, projectId);
  const r = (await reputation(ctx, projectId)) as unknown as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
  const percent = (fraction: unknown) => Math.round(num(fraction) * 10_000) / 100;
  return {
    bounceRate: percent(r.bounceRate),
    complaintRate: percent(r.complaintRate),
    sends: num(r.sent),
    bounces: num(r.bounced),
    complaints: num(r.complained),
    windowDays: num(r.windowDays) || 30,
    disabled: !!p.disabled,
    disabledReason: p.disabled_reason,
    suspensions: Array.isArray(r.suspensions) ? r.suspensions : [],
  };
}

export function projectRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/users/@me/projects", ({ auth }) => svc.listProjects(ctx, auth.userId!), { auth: "session" })
    .post(
      "/users/@me/projects",
      async ({ auth, body, set }) => created(set, svc.viewProject(await svc.createProject(ctx, auth.userId!, body.name, { sandbox: body.sandbox }), "OWNER", ctx.config.sandbox)),
      { auth: "session", body: t.Object({ name: Name, sandbox: t.Optional(t.Boolean()) }) },
    )
    .patch(
      "/users/@me/projects/:id",
      ({ auth, params, body }) => svc.asMember(ctx, auth.userId!, params.id, { roles: ["OWNER", "ADMIN"], action: "change project settings" }, async (m) => svc.viewProject(await svc.updateProject(ctx, params.id, body), m.role, ctx.config.sandbox)),
      {
        auth: "session",
        params: IdParams,
        body: t.Object({
          name: t.Optional(Name),
          tracking: t.Optional(t.Union(svc.TRACKING_MODES.map((m) => t.Literal(m)))),
          sandbox: t.Optional(t.Boolean()),
          doubleOptIn: t.Optional(
            t.Object(
              {
                enabled: t.Optional(t.Boolean()),
                templateId: t.Optional(t.Union([t.String({ maxLength: 100 }), t.Null()])),
                redirectUrl: t.Optional(t.Union([t.String({ maxLength: 2000 }), t.Null()])),
              },
              { additionalProperties: false, description: "Hold public-key subscribes until the contact opens a confirmation link" },
            ),
          ),
          postalAddress: t.Optional(t.Nullable(t.String({ maxLength: 500 }))),
        }),
      },
    )
    .delete(
      "/users/@me/projects/:id",
      ({ auth, params }) => svc.asMember(ctx, auth.userId!, params.id, { roles: ["OWNER"], action: "delete the project" }, () => succeeded(svc.deleteProject(ctx, params.id))),
      sessionById(),
    )
    .post(
      "/users/@me/projects/:id/regenerate-keys",
      ({ auth, params }) => svc.asMember(ctx, auth.userId!, params.id, { roles: ["OWNER", "ADMIN"], action: "rotate the keys" }, async (m) => svc.viewProject(await svc.rotateKeys(ctx, params.id), m.role, ctx.config.sandbox)),
      sessionById(),
    )
    .post(
      "/users/@me/projects/:id/reset",
      ({ auth, params }) => svc.asMember(ctx, auth.userId!, params.id, { roles: ["OWNER"], action: "reset the project" }, () => succeeded(svc.resetProject(ctx, params.id))),
      sessionById(),
    )
    .get("/users/@me/projects/:id/security", ({ auth, params }) => svc.asMember(ctx, auth.userId!, params.id, null, () => security(ctx, params.id)), sessionById())
    .get("/projects/:id/security", ({ auth, params, set }) => asCaller(ctx, auth, params.id, set.headers, () => security(ctx, params.id)), optionalProjectById())
    .get("/projects/:id/setup-state", ({ auth, params, set }) => asCaller(ctx, auth, params.id, set.headers, () => svc.setupState(ctx, params.id)), optionalProjectById())
    .get("/projects/:id/members", ({ auth, params, set }) => asCaller(ctx, auth, params.id, set.headers, () => svc.listMembers(ctx, params.id)), optionalProjectById())
    .post(
      "/projects/:id/members",
      async ({ auth, params, body, set }) => {
        const role = await callerRole(ctx, auth, params.id, set.headers);
        const m = await svc.inviteMember(ctx, params.id, role, { email: body.email, role: body.role ?? "MEMBER" });
        set.status = 201;
        return m;
      },
      {
        auth: "optionalProject",
        params: IdParams,
        body: t.Object({
          email: t.String({ format: "email" }),
          role: t.Optional(t.Union(svc.ROLES.map((r) => t.Literal(r)))),
        }),
      },
    )
    .patch(
      "/projects/:id/members/:userId",
      async ({ auth, params, body, set }) => {
        const role = await callerRole(ctx, auth, params.id, set.headers);
        return svc.changeRole(ctx, params.id, { userId: auth.userId ?? "", role }, params.userId, body.role);
      },
      {
        auth: "optionalProject",
        params: t.Object({ id: t.String(), userId: t.String() }),
        body: t.Object({ role: t.Union(svc.ROLES.map((r) => t.Literal(r))) }),
      },
    )
    .delete(
      "/projects/:id/members/:userId",
      async ({ auth, params, set }) => {
        const role = await callerRole(ctx, auth, params.id, set.headers);
        if (auth.via !== "session" && role !== "ADMIN") throw forbidden();
        await svc.removeMember(ctx, params.id, { userId: auth.userId ?? "", role }, params.userId);
        return { success: true };
      },
      { auth: "optionalProject", params: t.Object({ id: t.String(), userId: t.String() }) },
    );
}

import { Elysia } from "elysia";
import { authPlugin } from "../../http/auth";
import type { AppContext } from "../../context";
import { VERSION } from "../../version";
import { migrationsMatch } from "../../db/migrate";
import { billingEnabled } from "../billing/stripe";

/** GET /config: no authentication; which integrations this server has turned on. */
export function systemRoutes(ctx: AppContext) {
  const body = {
    version: VERSION,
    features: {
      signups: !ctx.config.disableSignups,
      billing: billingEnabled(ctx),
      relay: !!ctx.config.smtpRelay,
      inboundSmtp: ctx.config.inboundSmtpPort > 0,
      tracking: true,
    },
  };
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/config", () => body)
    .get("/health", () => ({ ok: true }))
    // For load balancers: 200 only while the database answers and its migrations are this binary's.
    .get("/ready", async ({ set }) => {
      try {
        if (await migrationsMatch(ctx.store)) return { ready: true, instance: ctx.config.instanceId, engine: ctx.store.engine };
        set.status = 503;
        return { ready: false, instance: ctx.config.instanceId, engine: ctx.store.engine, reason: "the database's migrations are not this binary's" };
      } catch {
        set.status = 503;
        return { ready: false, instance: ctx.config.instanceId, engine: ctx.store.engine, reason: "the database does not answer" };
      }
    })
    // Which project and key type a key belongs to (handy for SDKs and for checking a key after rotation).
    .get("/v1/key", ({ auth }) => ({ success: true, data: { projectId: auth.projectId, type: auth.via } }), { auth: "track" });
}

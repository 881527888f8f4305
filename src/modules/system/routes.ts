import { Elysia } from "elysia";
import { authPlugin } from "../../http/auth";
import type { AppContext } from "../../context";
import { VERSION } from "../../version";
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
    // Which project and key type a key belongs to (handy for SDKs and for checking a key after rotation).
    .get("/v1/key", ({ auth }) => ({ success: true, data: { projectId: auth.projectId, type: auth.via } }), { auth: "track" });
}

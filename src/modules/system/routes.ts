import { Elysia } from "elysia";
import type { AppContext } from "../../context";
import { VERSION } from "../../version";

/** GET /config: no authentication; which integrations this server has turned on. */
export function systemRoutes(ctx: AppContext) {
  const body = {
    version: VERSION,
    features: {
      signups: !ctx.config.disableSignups,
      billing: false,
      relay: !!ctx.config.smtpRelay,
      inboundSmtp: ctx.config.inboundSmtpPort > 0,
      tracking: true,
    },
  };
  return new Elysia().get("/config", () => body).get("/health", () => ({ ok: true }));
}

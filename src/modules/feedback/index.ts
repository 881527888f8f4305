import { tlsFilesFor } from "../../config";
import type { AppContext } from "../../context";
import { startInboundServer, type InboundServer } from "./inbound/server";
import { loadTokenSecret } from "../../mail/tracking/tokens";
import { deleteProjectLinks } from "../../mail/tracking/tracked-links";
import type { ModuleDef } from "../../http/module";
import { handleInbound, routeRecipient, type Route } from "./inbound";
import { feedbackRoutes } from "./routes";

declare module "../../context" {
  interface Services {
    /** The inbound SMTP listener while it runs (MAILSVC_INBOUND_SMTP_PORT). */
    inbound: { server: InboundServer | null };
  }
}

/** The inbound listener of a running instance (tests read its port). */
export const inboundServerOf = (ctx: AppContext) => ctx.services.inbound.server ?? undefined;

export const feedbackModule: ModuleDef = {
  name: "feedback",
  routes: feedbackRoutes,
  provides: { resetProject: [(c, projectId) => deleteProjectLinks(c, projectId)] },
  async install(ctx) {
    await loadTokenSecret(ctx);
  },
  async start(ctx) {
    const c = ctx.config;
    if (!(c.inboundSmtpPort > 0)) return;
    const tls = tlsFilesFor(c, "inbound");
    if (!tls && (c.inboundTlsCert || c.inboundTlsKey || c.tlsCert || c.tlsKey)) {
      ctx.log.warn("inbound: STARTTLS needs both MAILSVC_INBOUND_TLS_CERT and MAILSVC_INBOUND_TLS_KEY (or MAILSVC_TLS_CERT and MAILSVC_TLS_KEY); starting without it");
    }
    const server = await startInboundServer<Route>({
      port: c.inboundSmtpPort,
      host: c.host,
      name: c.hostname,
      maxBytes: c.inboundMaxBytes,
      tls: tls ?? undefined,
      log: ctx.log,
      route: (address) => routeRecipient(ctx, address),
      handle: (msg) => handleInbound(ctx, msg),
    });
    ctx.services.inbound.server = server;
    ctx.log.info("inbound SMTP listening", { port: server.port, starttls: !!tls });
  },
  async stop(ctx) {
    const s = ctx.services.inbound.server;
    ctx.services.inbound.server = null;
    await s?.close();
  },
};

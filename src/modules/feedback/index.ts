import { tlsFilesFor } from "../../config";
import type { AppContext } from "../../context";
import { startInboundServer, type InboundServer } from "../../mail/inbound/server";
import { loadTokenSecret } from "../../mail/tokens";
import { deleteProjectLinks } from "../../mail/tracked-links";
import type { ModuleDef } from "../../http/module";
import { handleInbound, routeRecipient, type Route } from "./inbound";
import { feedbackRoutes } from "./routes";

const listeners = new WeakMap<AppContext, InboundServer>();

/** The inbound listener of a running instance (tests read its port). */
export const inboundServerOf = (ctx: AppContext) => listeners.get(ctx);

export const feedbackModule: ModuleDef = {
  name: "feedback",
  routes: feedbackRoutes,
  async install(ctx) {
    await loadTokenSecret(ctx);
    ctx.hooks.resetProject.push((c, projectId) => deleteProjectLinks(c, projectId));
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
    listeners.set(ctx, server);
    ctx.log.info("inbound SMTP listening", { port: server.port, starttls: !!tls });
  },
  async stop(ctx) {
    const s = listeners.get(ctx);
    listeners.delete(ctx);
    await s?.close();
  },
};

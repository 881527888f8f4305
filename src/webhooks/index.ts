import type { ModuleDef } from "../http/module";
import { recordDeliveries } from "./consumer";
import { isDeliverable } from "./events";
import { webhookRoutes } from "./routes";
import { deleteProjectDeliveries } from "./service";

/** Outbound webhooks: endpoints (routes), delivery rows written from the event feed, the dispatcher that sends them. */
export const webhooksModule: ModuleDef = {
  name: "webhooks",
  routes: webhookRoutes,
  provides: { resetProject: [(c, projectId) => deleteProjectDeliveries(c, projectId)] },
  install(ctx) {
    const dispatcher = ctx.services.webhookDispatcher;
    ctx.feed.subscribe(
      "webhooks",
      async (trx, events) => {
        // Rows become visible when the feed commits; the short delay lets it, the poll is the safety net.
        if (await recordDeliveries(ctx, trx, events)) dispatcher.wake(5);
      },
      { names: isDeliverable },
    );
  },
  start(ctx) {
    ctx.services.webhookDispatcher.start();
  },
  stop(ctx) {
    return ctx.services.webhookDispatcher.stop();
  },
};

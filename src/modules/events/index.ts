import { trackBatcher } from "../../audience/track";
import type { ModuleDef } from "../../http/module";
import { hasEvents } from "./queries";
import { eventRoutes } from "./routes";

/** Events: /v1/track (and /events/track) and the events endpoints. */
export const eventsModule: ModuleDef = {
  name: "events",
  routes: eventRoutes,
  install(ctx) {
    ctx.hooks.setupState.push(async (c, projectId) => ({ hasEvents: await hasEvents(c, projectId) }));
  },
  async stop(ctx) {
    // The HTTP server has stopped: commit whatever tracks are still queued before the store closes.
    await trackBatcher(ctx).drain();
  },
};

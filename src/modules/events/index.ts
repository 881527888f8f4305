import type { ModuleDef } from "../../http/module";
import { hasEvents } from "./queries";
import { eventRoutes } from "./routes";

/** Events: /v1/track (and /events/track) and the events endpoints. */
export const eventsModule: ModuleDef = {
  name: "events",
  routes: eventRoutes,
  provides: { setupState: [async (c, projectId) => ({ hasEvents: await hasEvents(c, projectId) })] },
  async stop(ctx) {
    // The HTTP server has stopped: commit whatever tracks are still queued before the store closes.
    await ctx.services.trackBatcher.drain();
  },
};

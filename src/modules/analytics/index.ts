import type { ModuleDef } from "../../http/module";
import { analyticsRoutes } from "./routes";
import { foldEvents, ROLLUP_CONSUMER } from "./rollup-consumer";
import { resetProject } from "./service";

/** Analytics: the rollups of migration 011 (events: a feed consumer; contact fields: triggers) and the /analytics endpoints. */
export const analyticsModule: ModuleDef = {
  name: "analytics",
  routes: analyticsRoutes,
  provides: { resetProject: [(c, projectId) => resetProject(c, projectId)] },
  install(ctx) {
    if (ctx.config.analyticsRollups) ctx.feed.subscribe(ROLLUP_CONSUMER, (trx, events) => foldEvents(trx, events));
  },
};

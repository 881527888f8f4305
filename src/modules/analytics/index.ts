import type { ModuleDef } from "../module";
import { analyticsRoutes } from "./routes";
import { resetProject } from "./service";

/** Analytics: the rollups of migration 011 (kept by triggers) and the /analytics endpoints. */
export const analyticsModule: ModuleDef = {
  name: "analytics",
  routes: analyticsRoutes,
  install(ctx) {
    ctx.hooks.resetProject.push((c, projectId) => resetProject(c, projectId));
  },
};

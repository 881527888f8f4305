import { configWarnings } from "../../mail/deliverability/deliverability";
import type { ModuleDef } from "../../http/module";
import { domainRoutes } from "./routes";
import { domainCounts, invalidateDomainCaches, verifyAllDomains } from "./service";

export const domainsModule: ModuleDef = {
  name: "domains",
  routes: domainRoutes,
  provides: {
    setupState: [
      (c, projectId) => domainCounts(c, projectId),
      // Installation problems that cost every message spam points (also logged by `serve` at start).
      async (c) => ({ warnings: configWarnings(c.config) }),
    ],
    resetProject: [
      // A reset wipes project data but keeps its sender domains (their DNS records stay published);
      // deleting the project removes them with it (foreign key cascade). Either way, drop caches.
      async (c, projectId) => invalidateDomainCaches(c, projectId),
    ],
  },
  install(ctx) {
    ctx.schedules.every("domains.verify", Math.max(1000, ctx.config.domainCheckIntervalMs), async () => {
      const r = await verifyAllDomains(ctx);
      if (r.changed) ctx.log.info("domains re-checked", r);
    });
  },
};

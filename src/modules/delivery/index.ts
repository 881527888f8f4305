import { outboxFor } from "../../mail/outbox";
import { registerReputationJob, reputation } from "../../mail/reputation";
import type { ModuleDef } from "../../http/module";

/**
 * The delivery engine's lifecycle: the outbox loop runs while the service runs (started after every
 * module is installed, stopped before the database closes), and the sending-reputation check.
 */
export const deliveryModule: ModuleDef = {
  name: "delivery",
  install(ctx) {
    registerReputationJob(ctx);
    ctx.hooks.security = (c, projectId) => reputation(c, projectId) as unknown as Promise<Record<string, unknown>>;
  },
  async start(ctx) {
    await outboxFor(ctx).start();
  },
  async stop(ctx) {
    await outboxFor(ctx).stop();
  },
};

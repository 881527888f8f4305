import { REPUTATION_JOB, registerReputationJob } from "../../mail/deliverability/reputation";
import type { ModuleDef } from "../../http/module";

/**
 * The delivery engine's lifecycle: the outbox loop runs while the service runs (started after every
 * module is installed, stopped before the database closes), and the sending-reputation check.
 */
export const deliveryModule: ModuleDef = {
  name: "delivery",
  provides: { hiddenJobTypes: [REPUTATION_JOB] },
  install(ctx) {
    registerReputationJob(ctx);
  },
  async start(ctx) {
    await ctx.services.outbox.start();
  },
  async stop(ctx) {
    await ctx.services.outbox.stop();
  },
};

import type { ModuleDef } from "../module";
import { outboxFor } from "../../mail/outbox";
import { registerReputationJob, reputation } from "../../mail/reputation";
import { sendAccountEmail } from "./account-email";
import { sendRoutes } from "./routes";
import { firstSend } from "./service";

/** POST /v1/send and the delivery engine's lifecycle (the outbox loop runs while the service runs). */
export const sendModule: ModuleDef = {
  name: "send",
  routes: sendRoutes,
  install(ctx) {
    ctx.hooks.sendAccountEmail = sendAccountEmail;
    registerReputationJob(ctx);
    ctx.hooks.setupState.push((c, projectId) => firstSend(c, projectId));
    ctx.hooks.security = (c, projectId) => reputation(c, projectId) as unknown as Promise<Record<string, unknown>>;
  },
  async start(ctx) {
    await outboxFor(ctx).start();
  },
  async stop(ctx) {
    await outboxFor(ctx).stop();
  },
};

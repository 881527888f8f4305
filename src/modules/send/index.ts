import type { ModuleDef } from "../../http/module";
import { sendAccountEmail } from "./account-email";
import { sendRoutes } from "./routes";
import { firstSend } from "./service";

/** POST /v1/send and the server's own account emails (the delivery engine is the delivery module). */
export const sendModule: ModuleDef = {
  name: "send",
  routes: sendRoutes,
  install(ctx) {
    ctx.hooks.sendAccountEmail = sendAccountEmail;
    ctx.hooks.setupState.push((c, projectId) => firstSend(c, projectId));
  },
};

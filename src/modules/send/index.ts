import type { ModuleDef } from "../../http/module";
import { sendRoutes } from "./routes";
import { firstSend } from "./service";

/** POST /v1/send and the server's own account emails (the delivery engine is the delivery module). */
export const sendModule: ModuleDef = {
  name: "send",
  routes: sendRoutes,
  provides: { setupState: [(c, projectId) => firstSend(c, projectId)] },
};

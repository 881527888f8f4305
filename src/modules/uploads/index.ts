import type { ModuleDef } from "../../http/module";
import { uploadRoutes } from "./routes";
import { uploadCount } from "./service";

/** Image uploads stored in the database, served publicly. */
export const uploadsModule: ModuleDef = {
  name: "uploads",
  routes: uploadRoutes,
  provides: { setupState: [(c, projectId) => uploadCount(c, projectId)] },
};

import type { ModuleDef } from "../../http/module";
import { runSuppressionImport, SUPPRESSION_IMPORT_JOB } from "./import";
import { suppressionRoutes } from "./routes";

/** The suppression list users manage: GET/POST/DELETE /suppressions, CSV import. */
export const suppressionsModule: ModuleDef = {
  name: "suppressions",
  routes: suppressionRoutes,
  install(ctx) {
    ctx.jobs.register(SUPPRESSION_IMPORT_JOB, (job) => runSuppressionImport(ctx, job));
  },
};

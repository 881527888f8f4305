import type { ModuleDef } from "../../http/module";
import { bulkHandler } from "./bulk";
import { interruptImports, runImport } from "./import";
import { JOB_TYPES } from "./jobs";
import { contactCount } from "./queries";
import { contactRoutes } from "./routes";

/** Contacts: the audience store, CSV import and bulk jobs (the events module owns /v1/track). */
export const contactsModule: ModuleDef = {
  name: "contacts",
  routes: contactRoutes,
  provides: {
    setupState: [async (c, projectId) => ({ contacts: await contactCount(c, projectId) })],
    resetProject: [
      async (c, projectId) => {
        await c.db.transaction().execute(async (trx) => {
          await trx.deleteFrom("events").where("project_id", "=", projectId).execute();
          await trx.deleteFrom("contacts").where("project_id", "=", projectId).execute();
          await trx.deleteFrom("contact_counts").where("project_id", "=", projectId).execute();
          await trx.deleteFrom("contact_imports").where("project_id", "=", projectId).execute();
        });
      },
    ],
  },
  install(ctx) {
    ctx.jobs.register(JOB_TYPES.import, (job) => runImport(ctx, job));
    ctx.jobs.register(JOB_TYPES["bulk-subscribe"], bulkHandler(ctx, "bulk-subscribe"));
    ctx.jobs.register(JOB_TYPES["bulk-unsubscribe"], bulkHandler(ctx, "bulk-unsubscribe"));
    ctx.jobs.register(JOB_TYPES["bulk-delete"], bulkHandler(ctx, "bulk-delete"));
  },
  stop(ctx) {
    interruptImports(ctx);
  },
};

import { STARTS_JOB, STEP_JOB, ensureStartsJob, runStartsJob, runStepJob } from "./engine/executor";
import { FEED_CONSUMER, onFeedEvents } from "./engine/triggers";
import type { ModuleDef } from "../../http/module";
import { deleteProjectWorkflows, workflowCount } from "./queries";
import { workflowRoutes } from "./routes";
import { eventUsage, fieldUsage, templateUsage, upcoming } from "./service";

/** Workflows: the graph API, executions, and the engine's job handlers. */
export const workflowsModule: ModuleDef = {
  name: "workflows",
  routes: workflowRoutes,
  provides: {
    templateUsage: [templateUsage],
    eventUsage: [eventUsage],
    fieldUsage: [fieldUsage],
    upcoming: [upcoming],
    setupState: [async (c, projectId) => ({ workflows: await workflowCount(c.db, projectId) })],
    resetProject: [(c, projectId) => deleteProjectWorkflows(c.db, projectId)],
  },
  install(ctx) {
    ctx.jobs.register(STEP_JOB, (job) => runStepJob(ctx, job));
    ctx.jobs.register(STARTS_JOB, () => runStartsJob(ctx));
    ctx.feed.subscribe(FEED_CONSUMER, (trx, events) => onFeedEvents(ctx, trx, events));
  },
  start: (ctx) => ensureStartsJob(ctx),
};

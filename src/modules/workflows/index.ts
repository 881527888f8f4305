import { STARTS_JOB, STEP_JOB, ensureStartsJob, runStartsJob, runStepJob } from "../../automation/executor";
import { FEED_CONSUMER, onFeedEvents } from "../../automation/triggers";
import type { ModuleDef } from "../../http/module";
import { deleteProjectWorkflows, workflowCount } from "./queries";
import { workflowRoutes } from "./routes";
import { eventUsage, fieldUsage, templateUsage, upcoming } from "./service";

/** Workflows: the graph API, executions, and the engine's job handler and hooks. */
export const workflowsModule: ModuleDef = {
  name: "workflows",
  routes: workflowRoutes,
  install(ctx) {
    ctx.jobs.register(STEP_JOB, (job) => runStepJob(ctx, job));
    ctx.jobs.register(STARTS_JOB, () => runStartsJob(ctx));
    ctx.feed.subscribe(FEED_CONSUMER, (trx, events) => onFeedEvents(ctx, trx, events));
    ctx.hooks.templateUsage.push(templateUsage);
    ctx.hooks.eventUsage.push(eventUsage);
    ctx.hooks.fieldUsage.push(fieldUsage);
    ctx.hooks.upcoming.push(upcoming);
    ctx.hooks.setupState.push(async (c, projectId) => ({ workflows: await workflowCount(c.db, projectId) }));
    ctx.hooks.resetProject.push((c, projectId) => deleteProjectWorkflows(c.db, projectId));
  },
  start: (ctx) => ensureStartsJob(ctx),
};

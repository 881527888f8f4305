import { iso } from "../../clock";
import type { ModuleDef } from "../module";
import { checkAllSending, completionWatcher, runFanout, runStart } from "./fanout";
import { JOBS } from "./jobs";
import * as q from "./queries";
import { campaignRoutes } from "./routes";

/** Campaigns: CRUD, scheduling, the durable fan-out into the outbox, stats. */
export const campaignsModule: ModuleDef = {
  name: "campaigns",
  routes: campaignRoutes,
  install(ctx) {
    ctx.jobs.register(JOBS.start, (job) => runStart(ctx, job));
    ctx.jobs.register(JOBS.fanout, (job) => runFanout(ctx, job));
    ctx.hooks.campaignOutcomes = completionWatcher(ctx);
    ctx.hooks.templateUsage.push(async (c, projectId, templateId) => ({ campaigns: await q.campaignsUsingTemplate(c.db, projectId, templateId) }));
    ctx.hooks.fieldUsage.push(async (c, projectId, field) => {
      const path = field.startsWith("data.") ? field : `data.${field}`;
      return { campaigns: await q.campaignsMentioning(c.db, projectId, [`"${path}"`]) };
    });
    ctx.hooks.eventUsage.push(async (c, projectId, name) => ({ campaigns: await q.campaignsMentioning(c.db, projectId, [`"event.${name}"`]) }));
    ctx.hooks.upcoming.push(async (c, projectId, limit) =>
      (await q.scheduledCampaigns(c.db, projectId, limit)).map((r) => ({
        type: "campaign.scheduled",
        id: r.id,
        at: iso(r.scheduled_for),
        details: { campaignId: r.id, name: r.name, subject: r.subject },
      })),
    );
    ctx.hooks.setupState.push(async (c, projectId) => {
      const r = await c.db.selectFrom("campaigns").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow();
      return { campaigns: Number(r.n) };
    });
    ctx.hooks.resetProject.push((c, projectId) => q.deleteProjectCampaigns(c.db, projectId));
  },
  async start(ctx) {
    await checkAllSending(ctx);
  },
};

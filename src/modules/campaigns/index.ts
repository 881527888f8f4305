import { iso } from "../../clock";
import type { ModuleDef } from "../../http/module";
import { checkAllSending, completionWatcher, runFanout } from "./fanout";
import { runStart } from "./service";
import { JOBS } from "./jobs";
import * as q from "./queries";
import { campaignRoutes } from "./routes";
import { conditionReferences, parseStoredCondition } from "../../audience/conditions";
import type { AppContext } from "../../context";

/** Campaigns whose audienceCondition references a field or event (usage endpoints). */
async function campaignsReferencing(ctx: AppContext, projectId: string, test: (r: ReturnType<typeof conditionReferences>) => boolean) {
  const rows = await q.campaignsWithCondition(ctx.db, projectId);
  return rows.filter((r) => test(conditionReferences(parseStoredCondition(r.audience_condition)))).map((r) => ({ id: r.id, name: r.name, status: r.status }));
}

/** Campaigns: CRUD, scheduling, the durable fan-out into the outbox, stats. */
export const campaignsModule: ModuleDef = {
  name: "campaigns",
  routes: campaignRoutes,
  provides: {
    templateUsage: [
      async (c, projectId, templateId) => ({ campaigns: await q.campaignsUsingTemplate(c.db, projectId, templateId) }),
    ],
    fieldUsage: [
      async (c, projectId, field) => {
        const key = field.startsWith("data.") ? field.slice(5) : field;
        return { campaigns: await campaignsReferencing(c, projectId, (r) => r.fields.includes(key)) };
      },
    ],
    eventUsage: [
      async (c, projectId, name) => ({ campaigns: await campaignsReferencing(c, projectId, (r) => r.events.includes(name)) }),
    ],
    hiddenJobTypes: [
      // A scheduled campaign is listed once, as itself; its start job (also left behind, harmless, by a
      // cancel, delete or reschedule) is not.
      JOBS.start,
    ],
    upcoming: [
      async (c, projectId, limit) =>
        (await q.scheduledCampaigns(c.db, projectId, limit)).map((r) => ({
          type: "campaign.scheduled",
          id: r.id,
          at: iso(r.scheduled_for),
          details: { campaignId: r.id, name: r.name, subject: r.subject },
        })),
    ],
    setupState: [
      async (c, projectId) => {
        const r = await c.db.selectFrom("campaigns").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow();
        return { campaigns: Number(r.n) };
      },
    ],
    segmentInUse: [
      // DELETE /segments/:id is refused (409 INVALID_STATE) while a SCHEDULED or SENDING campaign uses it:
      // as its SEGMENT audience or through `segment.<id>` in a FILTERED audience's condition.
      async (c, projectId, segmentId) => {
        const used = (await q.activeCampaignAudiences(c.db, projectId)).filter(
          // Only the audience the campaign sends to holds the segment (a segmentId or condition kept from another type does not).
          (r) =>
            (r.audience_type === "SEGMENT" && r.segment_id === segmentId) ||
            (r.audience_type === "FILTERED" && conditionReferences(parseStoredCondition(r.audience_condition)).segments.includes(segmentId)),
        );
        return used.length ? `${used.length} active campaign(s): ${used.map((u) => `"${u.name}" (${u.status})`).join(", ")}` : null;
      },
    ],
    resetProject: [(c, projectId) => q.deleteProjectCampaigns(c.db, projectId)],
  },
  install(ctx) {
    ctx.jobs.register(JOBS.start, (job) => runStart(ctx, job));
    ctx.jobs.register(JOBS.fanout, (job) => runFanout(ctx, job));
    ctx.hooks.campaignOutcomes = completionWatcher(ctx);
  },
  async start(ctx) {
    await checkAllSending(ctx);
  },
};

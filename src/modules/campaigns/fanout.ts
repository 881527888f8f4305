// The fan-out: a durable job that walks the campaign's audience in contact-id order and writes one
// PENDING (or SUPPRESSED) email row per recipient. Each batch is ONE transaction that inserts the
// batch's rows and moves the keyset checkpoint (campaigns.fanout_last_id): kill -9 anywhere leaves
// either the whole batch with its checkpoint or neither, so a restart resumes after the last
// committed contact and every contact gets exactly one email (also guarded by the UNIQUE index on
// emails (campaign_id, contact_id)). The rendered content was stored once when sending began; the
// outbox fills each recipient's variables, links and headers at delivery time.
import type { AppContext } from "../../context";
import { atomic } from "../../db/raw";
import type { JobRunContext } from "../../jobs/queue";
import { wakeOutbox } from "../../mail/outbox/outbox";
import { audienceWhere } from "./recipients";
import * as q from "./queries";


const yieldToEventLoop = () => new Promise<void>((r) => setImmediate(r));

/** Render variables of a contact without parsing its data: the stored JSON object plus email and id (later keys win). */
function varsOf(row: q.AudienceRow): string {
  const tail = `"email":${JSON.stringify(row.email)},"id":${JSON.stringify(row.id)}}`;
  const data = row.data?.trim();
  if (!data || data === "{}" || data[0] !== "{") return "{" + tail;
  return data.slice(0, data.lastIndexOf("}")) + "," + tail;
}

export async function runFanout(ctx: AppContext, job: JobRunContext<{ campaignId: string }>): Promise<unknown> {
  const c = await q.campaignById(ctx.db, job.payload.campaignId);
  if (!c || c.status !== "SENDING" || c.fanout_done || !c.content_id) return { skipped: true };
  const where = await audienceWhere(ctx, c, c.sent_at ?? ctx.clock.now());
  const limit = Math.max(1, ctx.config.campaignBatchSize || 1000);
  let afterId = c.fanout_last_id;
  let written = 0;
  for (;;) {
    const select = q.audienceBatchQuery(ctx.db, c.project_id, where, afterId, limit).compile();
    const input = { campaignId: c.id, projectId: c.project_id, contentId: c.content_id, templateId: c.template_id, afterId, select, now: ctx.clock.now(), hostname: ctx.config.hostname };
    const step = await atomic(ctx.db, ctx.store.engine, (raw, trx) => q.writeFanoutBatchRaw(raw, trx, input, varsOf));
    if ("stop" in step) return { written, stopped: true };
    wakeOutbox(ctx);
    if ("done" in step) {
      await checkDone(ctx, c.id);
      return { written, total: step.total };
    }
    written += step.n;
    afterId = step.lastId;
    await job.save(0);
    await yieldToEventLoop();
  }
}


export async function checkDone(ctx: AppContext, campaignId: string): Promise<boolean> {
  return q.markSentIfDone(ctx.db, campaignId, ctx.clock.now());
}

/** Outcome batches tell us which campaigns moved; the SENT check runs once per campaign per short window. */
export function completionWatcher(ctx: AppContext) {
  const due = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  const run = async () => {
    timer = null;
    const ids = [...due];
    due.clear();
    for (const id of ids) await checkDone(ctx, id).catch((e) => ctx.log.warn("campaign completion check failed", { campaign: id, error: String(e) }));
  };
  return (_ctx: AppContext, ids: string[]) => {
    for (const id of ids) due.add(id);
    if (!timer) timer = setTimeout(() => void run(), 50);
  };
}

/** After a restart: campaigns whose last outcome was committed just before the process died. */
export async function checkAllSending(ctx: AppContext): Promise<void> {
  for (const c of await q.sendingCampaigns(ctx.db)) if (c.fanout_done) await checkDone(ctx, c.id);
}

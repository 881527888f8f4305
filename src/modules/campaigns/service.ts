import { cancelQueuedOfCampaign } from "../../mail/outbox/store";
/**
 * Campaigns: CRUD, the state machine (DRAFT -> SCHEDULED -> SENDING -> SENT, CANCELLED), test
 * sends and stats. Sending prepares the content ONCE (one email_contents row rendered per
 * recipient by the outbox) and hands the audience to the durable fan-out job (fanout.ts).
 */
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { consumeQuota } from "../billing/quota";
import type { AudienceType, CampaignStatus } from "../../db/tables/campaigns";
import type { TemplateType } from "../../db/tables/senders";
import { AppError, badRequest, invalidState, notFound, validationError, type FieldError } from "../../http/errors";
import type { JobRunContext } from "../../jobs/queue";
import { offsetPage, pick, type OffsetParams } from "../../http/pagination";
import { insertContent, insertEmails } from "../../mail/outbox/enqueue";
import { suppressedAmong } from "../../mail/outbox/suppressions";
import { campaignCancelled, wakeOutbox } from "../../mail/outbox/outbox";
import { assertSenderAllowed } from "../domains/service";
import { assertTemplateSyntax, DIRS, findTemplate, newMessageColumns, SORTS, trackOpensColumn, trackOpensOf, type TemplateInput } from "../templates/service";
import { audienceErrors, audienceWhere } from "./recipients";
import { JOBS } from "./jobs";
import * as q from "./queries";
import type { CampaignRow, Counters } from "./queries";

export const STATUSES: readonly CampaignStatus[] = ["DRAFT", "SCHEDULED", "SENDING", "SENT", "CANCELLED"];
export interface CampaignInput extends TemplateInput {
  audienceType: AudienceType;
  segmentId?: string | null;
  audienceCondition?: unknown;
  templateId?: string | null;
  scheduledFor?: unknown;
}
export type CampaignPatch = Partial<CampaignInput>;

const pct = (n: number, of: number) => (of > 0 ? Math.round((n / of) * 10000) / 100 : 0);


/** A campaign's recipients and counters as the API names them (the campaign object and its stats). */
function countFields(c: { total_recipients: number }, k: q.Counters) {
  return {
    totalRecipients: c.total_recipients,
    sentCount: k.sent,
    deliveredCount: k.delivered,
    openedCount: k.opened,
    clickedCount: k.clicked,
    bouncedCount: k.bounced,
    complainedCount: k.complained,
    unsubscribedCount: k.unsubscribed,
  };
}
export function viewCampaign(c: CampaignRow, k: Counters = q.ZERO) {
  return {
    id: c.id,
    name: c.name,
    description: c.description,
    subject: c.subject,
    body: c.body,
    from: c.from_email,
    fromName: c.from_name,
    replyTo: c.reply_to,
    type: c.type,
    status: c.status,
    audienceType: c.audience_type,
    segmentId: c.segment_id,
    audienceCondition: c.audience_condition ? JSON.parse(c.audience_condition) : null,
    templateId: c.template_id,
    trackOpens: trackOpensOf(c.track_opens),
    scheduledFor: iso(c.scheduled_for),
    ...countFields(c, k),
    projectId: c.project_id,
    sentAt: iso(c.sent_at),
    createdAt: iso(c.created_at),
    updatedAt: iso(c.updated_at),
  };
}
export type CampaignView = ReturnType<typeof viewCampaign>;

export async function view(ctx: AppContext, c: CampaignRow): Promise<CampaignView> {
  const k = await q.countersOf(ctx.db, [c]);
  return viewCampaign(c, k.get(c.id));
}

export async function getCampaign(ctx: AppContext, projectId: string, id: string): Promise<CampaignRow> {
  const row = await q.findCampaign(ctx.db, projectId, id);
  if (!row) throw notFound("Campaign");
  return row;
}

/** Parses `scheduledFor` (any value a JavaScript Date parses): null when absent, 400 when unparseable. */
export function parseScheduledFor(raw: unknown): number | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== "string" && typeof raw !== "number") throw badRequest("scheduledFor must be a date-time string", { details: { scheduledFor: raw } });
  const ms = new Date(raw).getTime();
  if (!Number.isFinite(ms)) throw badRequest(`scheduledFor is not a date: "${raw}"`, { details: { scheduledFor: raw } });
  return ms;
}

function futureOrThrow(ctx: AppContext, ms: number): number {
  if (ms <= ctx.clock.now()) throw badRequest("scheduledFor must be in the future", { details: { scheduledFor: iso(ms), now: iso(ctx.clock.now()) } });
  return ms;
}

/** Everything about a (merged) campaign that needs checking before it is saved: 422s, then the sender (403). */
async function validateRow(ctx: AppContext, row: CampaignRow, checkSender: boolean): Promise<void> {
  assertTemplateSyntax({ subject: row.subject, body: row.body });
  const errors: FieldError[] = await audienceErrors(ctx, row);
  if (row.template_id && !(await findTemplate(ctx, row.project_id, row.template_id)))
    errors.push({ field: "templateId", message: "No such template in this project", code: "not_found", received: row.template_id });
  if (errors.length) throw validationError(errors);
  if (checkSender) await assertSenderAllowed(ctx, row.project_id, row.from_email);
}

function conditionJson(v: unknown): string | null {
  return v === undefined || v === null ? null : JSON.stringify(v);
}

export async function createCampaign(ctx: AppContext, projectId: string, input: CampaignInput): Promise<CampaignRow> {
  const now = ctx.clock.now();
  const row: CampaignRow = {
    ...newMessageColumns(projectId, input, input.from.trim().toLowerCase()),
    status: "DRAFT",
    audience_type: input.audienceType,
    segment_id: input.segmentId ?? null,
    audience_condition: conditionJson(input.audienceCondition),
    template_id: input.templateId ?? null,
    scheduled_for: parseScheduledFor(input.scheduledFor),
    ...freshSendState(now),
  };
  await validateRow(ctx, row, true);
  await q.insertCampaign(ctx.db, row);
  return row;
}

/** PUT: any subset of the create fields, only in DRAFT or SCHEDULED (a SCHEDULED campaign keeps its schedule unless scheduledFor changes). */
export async function updateCampaign(ctx: AppContext, projectId: string, id: string, patch: CampaignPatch): Promise<CampaignRow> {
  const cur = await getCampaign(ctx, projectId, id);
  if (cur.status !== "DRAFT" && cur.status !== "SCHEDULED") throw invalidState(`A ${cur.status} campaign cannot be changed (only DRAFT or SCHEDULED)`, { status: cur.status });
  const set: Partial<CampaignRow> = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.subject !== undefined) set.subject = patch.subject;
  if (patch.body !== undefined) set.body = patch.body;
  if (patch.from !== undefined) set.from_email = patch.from.trim().toLowerCase();
  if (patch.fromName !== undefined) set.from_name = patch.fromName;
  if (patch.replyTo !== undefined) set.reply_to = patch.replyTo;
  if (patch.type !== undefined) set.type = patch.type;
  if (patch.audienceType !== undefined) set.audience_type = patch.audienceType;
  if (patch.segmentId !== undefined) set.segment_id = patch.segmentId;
  if (patch.audienceCondition !== undefined) set.audience_condition = conditionJson(patch.audienceCondition);
  if (patch.templateId !== undefined) set.template_id = patch.templateId;
  if (patch.trackOpens !== undefined) set.track_opens = trackOpensColumn(patch.trackOpens);
  let reschedule: number | null = null;
  if (patch.scheduledFor !== undefined) {
    const ms = parseScheduledFor(patch.scheduledFor);
    if (cur.status === "SCHEDULED") {
      if (ms === null) throw badRequest("A SCHEDULED campaign needs a scheduledFor; cancel it to stop it");
      if (ms !== cur.scheduled_for) reschedule = futureOrThrow(ctx, ms);
    }
    set.scheduled_for = ms;
  }
  const merged = { ...cur, ...set };
  await validateRow(ctx, merged, set.from_email !== undefined && set.from_email !== cur.from_email);
  set.updated_at = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const r = await q.updateCampaignRow(trx, projectId, id, set, ["DRAFT", "SCHEDULED"]);
    if (r && reschedule !== null && r.status === "SCHEDULED") await enqueueStart(ctx, trx, r.id, projectId, reschedule);
    return r;
  });
  if (!row) throw invalidState("The campaign changed state meanwhile; only DRAFT or SCHEDULED campaigns can be changed");
  return row;
}

export async function deleteCampaign(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const cur = await getCampaign(ctx, projectId, id);
  if (cur.status === "SENDING") throw invalidState("A SENDING campaign cannot be deleted; cancel it first", { status: cur.status });
  if (!(await q.deleteCampaignRow(ctx.db, projectId, id, ["SENDING"]))) throw invalidState("A SENDING campaign cannot be deleted; cancel it first");
}

export async function duplicateCampaign(ctx: AppContext, projectId: string, id: string): Promise<CampaignRow> {
  const src = await getCampaign(ctx, projectId, id);
  const now = ctx.clock.now();
  const row: CampaignRow = {
    ...src,
    id: Bun.randomUUIDv7(),
    name: `${src.name} (copy)`.slice(0, 200),
    status: "DRAFT",
    scheduled_for: null,
    ...freshSendState(now),
  };
  await q.insertCampaign(ctx.db, row);
  return row;
}

export function parseStatus(raw: string | undefined): CampaignStatus | undefined {
  if (raw === undefined || raw === "") return undefined;
  if (!STATUSES.includes(raw as CampaignStatus)) throw badRequest(`status must be one of ${STATUSES.join(", ")}`, { details: { status: raw } });
  return raw as CampaignStatus;
}

export async function listCampaigns(ctx: AppContext, projectId: string, query: { status?: string; search?: string; sort?: string; dir?: string }, page: OffsetParams) {
  const status = parseStatus(query.status);
  const { rows, total } = await q.listCampaignRows(ctx.db, projectId, {
    status,
    search: query.search,
    sort: pick(query.sort, SORTS, "createdAt"),
    dir: pick(query.dir, DIRS, "desc"),
    limit: page.pageSize,
    offset: page.offset,
  });
  const counters = await q.countersOf(ctx.db, rows);
  return offsetPage(rows.map((r) => viewCampaign(r, counters.get(r.id))), total, page);
}

// ---- sending -----------------------------------------------------------------------------------

async function enqueueStart(ctx: AppContext, trx: q.Db, campaignId: string, projectId: string, at: number) {
  await ctx.jobs.enqueue(JOBS.start, { campaignId, scheduledFor: at }, { projectId, runAt: at, trx: trx as never, maxAttempts: 20 });
}

/**
 * DRAFT/SCHEDULED -> SENDING in one transaction: the content is stored once, sentAt set and the
 * fan-out job enqueued. Returns false when the campaign is not in `from` any more.
 */
export async function beginSending(
  ctx: AppContext,
  trx: q.Db,
  c: CampaignRow,
  from: readonly CampaignStatus[],
  recipients: number,
  opts: { clearSchedule?: boolean } = {},
): Promise<CampaignRow | undefined> {
  const now = ctx.clock.now();
  // Checked first, inside the transaction: a concurrent send, cancel, PUT or DELETE that committed since
  // `c` was read (and validated and counted) makes this one the loser, before anything is charged or stored.
  const fresh = await q.campaignById(trx, c.id);
  if (!fresh || !from.includes(fresh.status as CampaignStatus) || fresh.version !== c.version) return undefined;
  // The audience's segment may have been deleted meanwhile (DELETE /segments checks for users in its own transaction).
  const audience = await audienceErrors({ ...ctx, db: trx as AppContext["db"] }, fresh);
  if (audience.length) throw validationError(audience);
  // The whole audience is charged before any fan-out: over the monthly cap nothing is sent (402).
  await consumeQuota(trx as never, ctx, c.project_id, "campaigns", recipients);
  const contentId = await insertContent(trx, now, {
    projectId: c.project_id,
    subject: c.subject,
    html: c.body,
    fromEmail: c.from_email,
    fromName: c.from_name,
    replyTo: c.reply_to,
    type: c.type as TemplateType,
    trackOpens: trackOpensOf(c.track_opens),
  });
  const row = await q.updateCampaignRow(
    trx,
    c.project_id,
    c.id,
    { status: "SENDING", sent_at: now, content_id: contentId, updated_at: now, ...(opts.clearSchedule ? { scheduled_for: null } : {}) },
    from,
  );
  if (!row) return undefined;
  await ctx.jobs.enqueue(JOBS.fanout, { campaignId: c.id }, { projectId: c.project_id, trx: trx as never, maxAttempts: 50 });
  return row;
}

export async function sendCampaign(ctx: AppContext, projectId: string, id: string, rawScheduledFor: unknown) {
  const at = parseScheduledFor(rawScheduledFor);
  const c = await getCampaign(ctx, projectId, id);
  if (c.status !== "DRAFT" && c.status !== "SCHEDULED") throw invalidState(`A ${c.status} campaign cannot be sent (only DRAFT or SCHEDULED)`, { status: c.status });
  if (at !== null) futureOrThrow(ctx, at);
  await validateRow(ctx, c, true);
  // The audience is resolved once (before the transaction: its expression may read segments through
  // ctx.db) and serves both the emptiness check and the count charged against the cap.
  const where = await audienceWhere(ctx, c, ctx.clock.now());
  if (!(await q.audienceHasAny(ctx.db, c.project_id, where))) throw badRequest("The campaign's audience is empty: no contact would receive it", { details: { audienceType: c.audience_type } });
  const from = [c.status] as const;
  const recipients = at === null ? await q.countAudience(ctx.db, c.project_id, where) : 0;
  const row = await ctx.db.transaction().execute(async (trx) => {
    // Sent now (also a SCHEDULED one sent early): it is no longer scheduled, scheduledFor answers null.
    if (at === null) return beginSending(ctx, trx, c, from, recipients, { clearSchedule: true });
    const r = await q.updateCampaignRow(trx, projectId, id, { status: "SCHEDULED", scheduled_for: at, updated_at: ctx.clock.now() }, from);
    if (r) await enqueueStart(ctx, trx, id, projectId, at);
    return r;
  });
  if (!row) throw invalidState("The campaign changed state meanwhile");
  ctx.jobs.wake();
  return {
    success: true as const,
    data: { id: row.id, name: row.name, status: row.status, scheduledFor: iso(row.scheduled_for) },
    message: at === null ? "Campaign is being sent" : `Campaign scheduled for ${iso(at)}`,
  };
}

/** How many contacts the campaign's audience holds now (what a send charges against the cap). */
/** The send bookkeeping of a campaign that has never been sent (a new one, or a duplicate). */
function freshSendState(now: number) {
  return {
    content_id: null,
    fanout_last_id: null,
    fanout_done: 0,
    total_recipients: 0,
    sent_at: null,
    completed_at: null,
    cancelled_at: null,
    created_at: now,
    updated_at: now,
    version: 0,
  };
}

export async function countRecipients(ctx: AppContext, c: CampaignRow): Promise<number> {
  return q.countAudience(ctx.db, c.project_id, await audienceWhere(ctx, c, ctx.clock.now()));
}

/** At scheduledFor: the campaign starts once (a rescheduled or cancelled campaign's old job does nothing). */
export async function runStart(ctx: AppContext, job: JobRunContext<{ campaignId: string; scheduledFor: number }>): Promise<unknown> {
  let c = await q.campaignById(ctx.db, job.payload.campaignId);
  if (!c || c.status !== "SCHEDULED" || c.scheduled_for !== job.payload.scheduledFor) return { skipped: true };
  let recipients = 0;
  try {
    // beginSending refuses a row changed since it was read (an edit between the count and the start):
    // read and count again then, while it is still this job's schedule.
    for (let attempt = 0; ; attempt++) {
      recipients = await countRecipients(ctx, c);
      const row = await ctx.db.transaction().execute((trx) => beginSending(ctx, trx, c!, ["SCHEDULED"], recipients));
      if (row) {
        ctx.jobs.wake();
        return { started: true };
      }
      c = await q.campaignById(ctx.db, job.payload.campaignId);
      if (!c || c.status !== "SCHEDULED" || c.scheduled_for !== job.payload.scheduledFor || attempt >= 4) return { started: false };
    }
  } catch (e) {
    if (!(e instanceof AppError) || e.status !== 402) throw e;
    // Over the monthly cap at its scheduled time: the campaign is cancelled, nothing is sent.
    const now = ctx.clock.now();
    await q.updateCampaignRow(ctx.db, c!.project_id, c!.id, { status: "CANCELLED", cancelled_at: now, completed_at: now, updated_at: now }, ["SCHEDULED"]);
    ctx.log.warn("scheduled campaign cancelled: over the monthly campaigns cap", { campaign: c!.id, recipients, details: JSON.stringify(e.extra.details ?? {}) });
    return { started: false, cancelled: "BILLING_LIMIT_EXCEEDED" };
  }
}

export async function cancelCampaign(ctx: AppContext, projectId: string, id: string): Promise<CampaignRow> {
  const c = await getCampaign(ctx, projectId, id);
  if (c.status !== "SCHEDULED" && c.status !== "SENDING") throw invalidState(`A ${c.status} campaign cannot be cancelled (only SCHEDULED or SENDING)`, { status: c.status });
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const r = await q.updateCampaignRow(trx, projectId, id, { status: "CANCELLED", cancelled_at: now, completed_at: now, updated_at: now }, ["SCHEDULED", "SENDING"]);
    if (r) await cancelQueuedOfCampaign(trx, id, now);
    return r;
  });
  if (!row) throw invalidState("The campaign changed state meanwhile");
  campaignCancelled(ctx, id);
  return row;
}

/** One message to `email`: subject prefixed "[TEST] ", the address as `email`, no contact, no tracking, no counters. */
export async function testCampaign(ctx: AppContext, projectId: string, id: string, email: string) {
  const c = await getCampaign(ctx, projectId, id);
  await assertSenderAllowed(ctx, projectId, c.from_email);
  const to = email.trim().toLowerCase();
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const contentId = await insertContent(trx, now, {
      projectId,
      subject: `[TEST] ${c.subject}`,
      noTracking: true,
      html: c.body,
      fromEmail: c.from_email,
      fromName: c.from_name,
      replyTo: c.reply_to,
      type: c.type as TemplateType,
    });
    const suppressed = await suppressedAmong(trx, projectId, [to]);
    await insertEmails(trx, now, ctx.config.hostname, [
      { projectId, contentId, contactId: null, toEmail: to, vars: { email: to }, sourceType: "CAMPAIGN", campaignId: null, status: suppressed.has(to) ? "SUPPRESSED" : "PENDING" },
    ]);
  });
  wakeOutbox(ctx);
  return { success: true as const, message: `Test email queued to ${to}` };
}

export async function campaignStats(ctx: AppContext, projectId: string, id: string) {
  const c = await getCampaign(ctx, projectId, id);
  const k = (await q.countersOf(ctx.db, [c])).get(c.id) ?? q.ZERO;
  return {
    ...countFields(c, k),
    deliveryRate: pct(k.delivered, k.sent),
    openRate: pct(k.opened, k.sent),
    clickRate: pct(k.clicked, k.sent),
    bounceRate: pct(k.bounced, k.sent),
  };
}

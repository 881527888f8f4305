import type { EngagementCounts } from "../../db/tables/analytics";
import { markEngaged } from "../../mail/outbox/store";
import { REACHED } from "../../mail/outbox/next-state";
import { dialect } from "../../db/dialect";
// Opens and clicks: the first one moves the email forward and records the contact event.
// Status only moves forward (SENT < DELIVERED < OPENED < CLICKED); BOUNCED and COMPLAINED win.
import type { NotNull } from "kysely";
import type { AppContext } from "../../context";
import { notifyEvents, recordEvent, type PendingEvent } from "./audience-adapter";


function eventData(e: { id: string; campaign_id: string | null }, extra: Record<string, unknown> = {}) {
  return { emailId: e.id, ...(e.campaign_id ? { campaignId: e.campaign_id } : {}), ...extra };
}

/** Records an open of `emailId` (pixel fetched). Returns whether it was the first. */
export async function recordOpen(ctx: AppContext, emailId: string): Promise<boolean> {
  const now = ctx.clock.now();
  const pending: PendingEvent[] = [];
  const first = await ctx.db.transaction().execute(async (trx) => {
    const e = await trx
      .selectFrom("emails")
      .select(["id", "project_id", "contact_id", "campaign_id", "status", "opened_at"])
      .where("id", "=", emailId)
      .where("project_id", "is not", null) // system mail (no project) is never tracked
      .$narrowType<{ project_id: NotNull }>()
      .executeTakeFirst();
    if (!e || !REACHED.has(e.status) || e.opened_at !== null) return false;
    await markEngaged(trx, e, "open", now);
    if (e.contact_id) {
      pending.push(await recordEvent(trx, ctx, { projectId: e.project_id, contactId: e.contact_id, name: "email.open", data: eventData(e), emailId: e.id }));
    }
    return true;
  });
  await notifyEvents(ctx, pending);
  return first;
}

/**
 * Records a click on `url` in `emailId`. The first click sets clicked_at (and opened_at, with its
 * `email.open` event, when the pixel was blocked, so opened >= clicked); every distinct link records one `email.click`.
 */
export async function recordClick(ctx: AppContext, emailId: string, url: string): Promise<void> {
  const now = ctx.clock.now();
  const pending: PendingEvent[] = [];
  await ctx.db.transaction().execute(async (trx) => {
    const e = await trx
      .selectFrom("emails")
      .select(["id", "project_id", "contact_id", "campaign_id", "status", "opened_at", "clicked_at"])
      .where("id", "=", emailId)
      .where("project_id", "is not", null)
      .$narrowType<{ project_id: NotNull }>()
      .executeTakeFirst();
    if (!e || !REACHED.has(e.status)) return;
    if (e.clicked_at === null || e.opened_at === null) {
      await markEngaged(trx, e, "click", now);
    }
    if (!e.contact_id) return;
    // A click on a message whose pixel never loaded (images blocked) is its open too: the email.open event is
    // recorded with it, so event-based counts (/activity/stats, analytics, workflows, webhooks) agree with
    // openedAt and the campaigns' unique opens (opened >= clicked everywhere).
    if (e.opened_at === null) {
      pending.push(await recordEvent(trx, ctx, { projectId: e.project_id, contactId: e.contact_id, name: "email.open", data: eventData(e, { via: "click" }), emailId: e.id }));
    }
    const seen =
      e.clicked_at !== null &&
      (await trx
        .selectFrom("events")
        .select("id")
        .where("project_id", "=", e.project_id)
        .where("email_id", "=", e.id)
        .where("name", "=", "email.click")
        .where((eb) => eb(dialect().jsonText("data", "link"), "=", url))
        .limit(1)
        .executeTakeFirst());
    if (seen) return;
    pending.push(
      await recordEvent(trx, ctx, { projectId: e.project_id, contactId: e.contact_id, name: "email.click", data: eventData(e, { link: url }), emailId: e.id }),
    );
  });
  await notifyEvents(ctx, pending);
}

export interface CampaignEngagement extends EngagementCounts {
  total: number;
}

/**
 * Engagement counters of a campaign, counted from its email rows (the campaigns issue reads these
 * for totals/stats): opened and clicked are unique per email.
 */
export async function campaignEngagement(ctx: AppContext, projectId: string, campaignId: string): Promise<CampaignEngagement> {
  const r = await ctx.db
    .selectFrom("emails")
    .select((eb) => [
      eb.fn.countAll<number>().as("total"),
      eb.fn.sum<number>(eb.case().when("sent_at", "is not", null).then(1).when("status", "in", ["SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED"]).then(1).else(0).end()).as("sent"),
      eb.fn.sum<number>(eb.case().when("delivered_at", "is not", null).then(1).when("status", "in", ["DELIVERED", "OPENED", "CLICKED"]).then(1).else(0).end()).as("delivered"),
      eb.fn.sum<number>(eb.case().when("opened_at", "is not", null).then(1).else(0).end()).as("opened"),
      eb.fn.sum<number>(eb.case().when("clicked_at", "is not", null).then(1).else(0).end()).as("clicked"),
      eb.fn.sum<number>(eb.case().when("status", "=", "BOUNCED").then(1).else(0).end()).as("bounced"),
      eb.fn.sum<number>(eb.case().when("status", "=", "COMPLAINED").then(1).else(0).end()).as("complained"),
    ])
    .where("project_id", "=", projectId)
    .where("campaign_id", "=", campaignId)
    .executeTakeFirstOrThrow();
  const n = (v: unknown) => Number(v ?? 0);
  return { total: n(r.total), sent: n(r.sent), delivered: n(r.delivered), opened: n(r.opened), clicked: n(r.clicked), bounced: n(r.bounced), complained: n(r.complained) };
}

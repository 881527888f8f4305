/**
 * The event-feed consumer that keeps the event rollups of migration 011: each batch of new events is
 * folded into one upsert per (project, bucket, name) and per (project, name), in the transaction
 * that moves the consumer's cursor (exactly once, nothing lost across kill -9). Nothing runs on the
 * write path of /v1/track; readers add the events after the cursor (see queries.ts).
 */
import { sql, type Transaction } from "kysely";
import type { DB } from "../../db";
import type { FeedEvent } from "../../jobs/event-feed";
import { DAY, HOUR } from "./window";

export const ROLLUP_CONSUMER = "analytics.rollups";

type Key = string;
const SEP = "\u0000";

/** Adds a batch of events to the rollups (inside the feed's transaction). */
export async function foldEvents(trx: Transaction<DB>, events: FeedEvent[]): Promise<void> {
  const hourly = new Map<Key, number>();
  const daily = new Map<Key, number>();
  const totals = new Map<Key, { n: number; last: number }>();
  for (const e of events) {
    const h = `${e.projectId}${SEP}${Math.floor(e.createdAt / HOUR) * HOUR}${SEP}${e.name}`;
    hourly.set(h, (hourly.get(h) ?? 0) + 1);
    const d = `${e.projectId}${SEP}${Math.floor(e.createdAt / DAY) * DAY}${SEP}${e.name}`;
    daily.set(d, (daily.get(d) ?? 0) + 1);
    const t = `${e.projectId}${SEP}${e.name}`;
    const cur = totals.get(t);
    if (cur) {
      cur.n++;
      if (e.createdAt > cur.last) cur.last = e.createdAt;
    } else totals.set(t, { n: 1, last: e.createdAt });
  }
  for (const [table, counts] of [["event_rollup_hourly", hourly], ["event_rollup_daily", daily]] as const) {
    const rows = [...counts].map(([k, count]) => {
      const [project_id, bucket, name] = k.split(SEP) as [string, string, string];
      return { project_id, bucket: Number(bucket), name, count };
    });
    for (let i = 0; i < rows.length; i += 200) {
      await trx
        .insertInto(table)
        .values(rows.slice(i, i + 200))
        .onConflict((oc) => oc.columns(["project_id", "bucket", "name"]).doUpdateSet({ count: sql`${sql.ref(`${table}.count`)} + excluded.count` }))
        .execute();
    }
  }
  const rows = [...totals].map(([k, v]) => {
    const [project_id, name] = k.split(SEP) as [string, string];
    return { project_id, name, count: v.n, last_at: v.last };
  });
  for (let i = 0; i < rows.length; i += 200) {
    await trx
      .insertInto("event_name_totals")
      .values(rows.slice(i, i + 200))
      .onConflict((oc) =>
        oc.columns(["project_id", "name"]).doUpdateSet({
          count: sql`event_name_totals.count + excluded.count`,
          last_at: sql`CASE WHEN excluded.last_at > event_name_totals.last_at THEN excluded.last_at ELSE event_name_totals.last_at END`,
        }),
      )
      .execute();
  }
  await foldCampaignEvents(trx, events);
}

type CampaignCounter = "sent" | "delivered" | "opened" | "clicked" | "bounced" | "complained";
const CAMPAIGN_EVENTS: Record<string, CampaignCounter> = {
  "email.sent": "sent",
  "email.delivery": "delivered",
  "email.open": "opened",
  "email.click": "clicked",
  "email.bounce": "bounced",
  "email.complaint": "complained",
};

/** Since when (this process's start) every email.* event of a campaign email carries its campaignId. */
const NAMED_SINCE = Date.now();

/** Campaign counters from the email.* events of campaign emails (unique per email, see migration 011). */
async function foldCampaignEvents(trx: Transaction<DB>, events: FeedEvent[]): Promise<void> {
  const mine = events.filter((e) => e.emailId && CAMPAIGN_EVENTS[e.name]);
  if (!mine.length) return;
  // Every email.* event written by this version names its campaign (data.campaignId) when it has one;
  // events a previous version wrote before this process started are looked up.
  const campaignOf = new Map<string, string>();
  for (const e of mine) if (typeof e.data?.campaignId === "string") campaignOf.set(e.emailId!, e.data.campaignId);
  const unknown = mine.filter((e) => !campaignOf.has(e.emailId!) && e.createdAt < NAMED_SINCE);
  const emailIds = [...new Set(unknown.map((e) => e.emailId!))];
  for (let i = 0; i < emailIds.length; i += 500) {
    const rows = await trx
      .selectFrom("emails")
      .select(["id", "campaign_id"])
      .where("id", "in", emailIds.slice(i, i + 500))
      .where("campaign_id", "is not", null)
      .execute();
    for (const r of rows) campaignOf.set(r.id, r.campaign_id!);
  }
  const acc = new Map<string, Record<CampaignCounter, number> & { projectId: string; campaignId: string }>();
  for (const e of mine) {
    const campaignId = campaignOf.get(e.emailId!);
    if (!campaignId) continue;
    const counter = CAMPAIGN_EVENTS[e.name]!;
    const bump: CampaignCounter[] = [];
    if (counter === "clicked") {
      // Only the first click of an email counts; it also counts as the open when the pixel never loaded.
      const earlier = await trx
        .selectFrom("events")
        .select(["name"])
        .where("project_id", "=", e.projectId)
        .where("email_id", "=", e.emailId!)
        .where("name", "in", ["email.click", "email.open"])
        .where("seq", "<", e.seq)
        .execute();
      if (earlier.some((r) => r.name === "email.click")) continue;
      bump.push("clicked");
      if (!earlier.some((r) => r.name === "email.open")) bump.push("opened");
    } else bump.push(counter);
    const k = `${e.projectId}${SEP}${campaignId}`;
    let a = acc.get(k);
    if (!a) acc.set(k, (a = { projectId: e.projectId, campaignId, sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 }));
    for (const b of bump) a[b]++;
  }
  for (const a of acc.values()) {
    const inc = (c: CampaignCounter) => sql<number>`${sql.ref(`campaign_rollup.${c}`)} + ${a[c]}`;
    await trx
      .insertInto("campaign_rollup")
      .values({ project_id: a.projectId, campaign_id: a.campaignId, sent: a.sent, delivered: a.delivered, opened: a.opened, clicked: a.clicked, bounced: a.bounced, complained: a.complained })
      .onConflict((oc) =>
        oc.columns(["project_id", "campaign_id"]).doUpdateSet({
          sent: inc("sent"),
          delivered: inc("delivered"),
          opened: inc("opened"),
          clicked: inc("clicked"),
          bounced: inc("bounced"),
          complained: inc("complained"),
        }),
      )
      .execute();
  }
}

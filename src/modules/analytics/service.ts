/** The analytics endpoints and the window counts other modules' aggregates read (typed inputs, no HTTP). */
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { badRequest } from "../../http/errors";
import * as q from "./queries";
import { DAY, HOUR, pct, resolveWindow } from "./window";

export { parseTime, resolveWindow, pct, DAY, HOUR } from "./window";

/** Exact event counts per name in [fromMs, toExclusiveMs), from the rollups. */
export function windowCounts(ctx: AppContext, projectId: string, fromMs: number, toExclusiveMs: number, names?: readonly string[]) {
  return q.countsByName(ctx.db, projectId, fromMs, toExclusiveMs, names);
}

/** Events per whole UTC day in [fromDay, toDay). */
export function dailyTotals(ctx: AppContext, projectId: string, fromDay: number, toDay: number) {
  return q.dailyTotals(ctx.db, projectId, fromDay, toDay);
}

/** Every event name of the project with its all-time count and latest time. */
export function eventNames(ctx: AppContext, projectId: string) {
  return q.nameTotals(ctx.db, projectId);
}

/** All events of the project (the unfiltered /activity total). */
export function eventTotal(ctx: AppContext, projectId: string) {
  return q.eventTotal(ctx.db, projectId);
}

/** Contacts per custom data key and kind, for /contacts/fields. */
export function fieldStats(ctx: AppContext, projectId: string) {
  return q.fieldStats(ctx.db, projectId);
}

// ---- /analytics/timeseries -----------------------------------------------------------------------

/** The series of the timeseries and the event each counts. */
export const SERIES = {
  sent: "email.sent",
  delivered: "email.delivery",
  opened: "email.open",
  clicked: "email.click",
  bounced: "email.bounce",
  complained: "email.complaint",
} as const;
type Series = keyof typeof SERIES;

/** At most this many buckets per answer; a longer window keeps its end. */
const MAX_BUCKETS = { hour: 24 * 93, day: 3_660 } as const;

export async function timeseries(ctx: AppContext, projectId: string, query: { from?: string; to?: string; interval?: string }) {
  const interval = query.interval === undefined || query.interval === "" ? "day" : query.interval;
  if (interval !== "day" && interval !== "hour") throw badRequest("interval must be day or hour", { details: { interval: query.interval } });
  const unit = interval === "day" ? DAY : HOUR;
  const w = resolveWindow(ctx.clock.now(), query, { maxMs: (MAX_BUCKETS[interval] - 1) * unit });
  const first = Math.floor(w.fromMs / unit) * unit;
  const last = Math.floor(w.toMs / unit) * unit;
  const names = Object.values(SERIES);
  const rows = await q.bucketCounts(ctx.db, projectId, interval, first, last + unit, names);
  const seriesOf = new Map<string, Series>(Object.entries(SERIES).map(([k, v]) => [v, k as Series]));
  const byBucket = new Map<number, Record<Series, number>>();
  for (const r of rows) {
    const s = seriesOf.get(r.name);
    if (!s) continue;
    let b = byBucket.get(r.bucket);
    if (!b) byBucket.set(r.bucket, (b = zeroes()));
    b[s] += Number(r.count);
  }
  const data: Array<{ date: string } & Record<Series, number>> = [];
  for (let t = first; t <= last; t += unit) {
    const date = interval === "day" ? iso(t)!.slice(0, 10) : iso(t)!;
    data.push({ date, ...(byBucket.get(t) ?? zeroes()) });
  }
  return { from: iso(w.fromMs)!, to: iso(w.toMs)!, interval, data };
}

const zeroes = (): Record<Series, number> => ({ sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 });

// ---- /analytics/top-events ---------------------------------------------------------------------

/** Trend: percent change against the previous window of the same length (100 when it had none). */
export function trend(current: number, previous: number): number {
  if (previous === 0) return current > 0 ? 100 : 0;
  return Math.round(((current - previous) / previous) * 10_000) / 100;
}

export async function topEvents(ctx: AppContext, projectId: string, query: { from?: string; to?: string }, limit: number) {
  const w = resolveWindow(ctx.clock.now(), query);
  const end = w.toMs + 1;
  const len = end - w.fromMs;
  const [cur, prev] = await Promise.all([
    windowCounts(ctx, projectId, w.fromMs, end),
    windowCounts(ctx, projectId, Math.max(0, w.fromMs - len), w.fromMs),
  ]);
  const data = [...cur]
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .slice(0, limit)
    .map(([name, count]) => ({ name, count, trend: trend(count, prev.get(name) ?? 0) }));
  return { data };
}

// ---- campaigns -----------------------------------------------------------------------------------

const METRICS = ["sent", "opens", "clicks"] as const;

export async function topCampaigns(ctx: AppContext, projectId: string, query: { from?: string; to?: string; metric?: string }, limit: number) {
  const metric = query.metric === undefined || query.metric === "" ? "sent" : query.metric;
  if (!(METRICS as readonly string[]).includes(metric)) throw badRequest("metric must be sent, opens or clicks", { details: { metric: query.metric } });
  const w = resolveWindow(ctx.clock.now(), query);
  if (!(await q.hasCampaigns(ctx.db))) return { data: [] };
  const rows = await q.topCampaigns(ctx.db, projectId, w.fromMs, w.toMs, metric as (typeof METRICS)[number], limit);
  return {
    data: rows.map((r) => {
      const sent = Number(r.sent_count);
      return {
        id: r.id,
        name: r.name,
        subject: r.subject,
        sentCount: sent,
        openedCount: Number(r.opened_count),
        clickedCount: Number(r.clicked_count),
        openRate: pct(Number(r.opened_count), sent),
        clickRate: pct(Number(r.clicked_count), sent),
      };
    }),
  };
}

export async function campaignStats(ctx: AppContext, projectId: string, query: { from?: string; to?: string }) {
  const w = resolveWindow(ctx.clock.now(), query);
  const out = { total: 0, draft: 0, scheduled: 0, sending: 0, sent: 0, cancelled: 0, averageOpenRate: 0, averageClickRate: 0 };
  if (!(await q.hasCampaigns(ctx.db))) return out;
  let openSum = 0;
  let clickSum = 0;
  let withSends = 0;
  for (const r of await q.campaignStatusCounts(ctx.db, projectId, w.fromMs, w.toMs)) {
    const n = Number(r.n);
    out.total += n;
    const key = r.status.toLowerCase() as "draft" | "scheduled" | "sending" | "sent" | "cancelled";
    if (key in out) out[key] += n;
    openSum += Number(r.open_rate_sum ?? 0);
    clickSum += Number(r.click_rate_sum ?? 0);
    withSends += Number(r.with_sends ?? 0);
  }
  out.averageOpenRate = withSends ? Math.round((openSum / withSends) * 100) / 100 : 0;
  out.averageClickRate = withSends ? Math.round((clickSum / withSends) * 100) / 100 : 0;
  return out;
}

/** Counters per campaign from the rollup: { sent, delivered, opened, clicked, bounced, complained } (unique per email). */
export async function campaignCounters(ctx: AppContext, projectId: string, campaignIds: string[]) {
  const rows = await q.campaignCounters(ctx.db, projectId, campaignIds);
  return new Map(rows.map((r) => [r.campaign_id, { sent: r.sent, delivered: r.delivered, opened: r.opened, clicked: r.clicked, bounced: r.bounced, complained: r.complained }]));
}

export function resetProject(ctx: AppContext, projectId: string) {
  return q.deleteProjectRollups(ctx.db, projectId);
}

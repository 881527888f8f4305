import { isReservedEventName } from "../../audience/events";
import { iso } from "../../clock";
import type { AppContext, UpcomingItem } from "../../context";
import { badRequest } from "../../http/errors";
import { cursorPage, type CursorParams } from "../../http/pagination";
import { eventNames, eventTotal, windowCounts } from "../analytics/service";
import {
  countActivity,
  listActivity,
  upcomingEmails,
  upcomingJobs,
  type ActivityFilters,
  type ActivityRow,
} from "./queries";

const DAY = 86_400_000;

/** The activity type of an event: its name for system events (exactly the names clients may not track), "event" otherwise. */
export const activityType = (name: string) => (isReservedEventName(name) ? name : "event");

function parseData(text: string | null): Record<string, unknown> {
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

export function viewActivity(r: ActivityRow) {
  const type = activityType(r.name);
  const data = parseData(r.data);
  const metadata: Record<string, unknown> = type === "event" ? { name: r.name, data } : { ...data };
  if (r.email_id) metadata.emailId = r.email_id;
  return {
    id: r.id,
    type,
    timestamp: iso(r.created_at),
    contactId: r.contact_id,
    contactEmail: r.contact_email ?? undefined,
    metadata,
  };
}

/** Accepts an ISO date or epoch milliseconds (the analytics window rules). */
export { parseTime } from "../analytics/service";

export async function feed(ctx: AppContext, projectId: string, f: ActivityFilters, page: CursorParams) {
  const rows = await listActivity(ctx.db, projectId, f, page.after?.id ?? null, page.limit);
  const total = page.isFirstPage ? await countFeed(ctx, projectId, f) : 0;
  return cursorPage(rows, page, { total: () => total, sortValue: () => null, id: (r) => r.id, map: viewActivity });
}

/** The names a type/name filter selects (undefined: every name). */
async function namesOf(ctx: AppContext, projectId: string, f: ActivityFilters): Promise<string[] | undefined> {
  let names: Set<string> | undefined;
  if (f.types?.length) {
    names = new Set(f.types.filter((t) => t !== "event"));
    if (f.types.includes("event")) for (const r of await eventNames(ctx, projectId)) if (!isReservedEventName(r.name)) names.add(r.name);
  }
  if (f.name) names = !names || names.has(f.name) ? new Set([f.name]) : new Set();
  return names && [...names];
}

/** The feed's total from the rollups; a contact's feed is counted on its own index. */
async function countFeed(ctx: AppContext, projectId: string, f: ActivityFilters): Promise<number> {
  if (f.contactId) return countActivity(ctx.db, projectId, f);
  const names = await namesOf(ctx, projectId, f);
  if (f.fromMs === undefined && f.toMs === undefined) {
    if (!names) return eventTotal(ctx, projectId);
    const want = new Set(names);
    return (await eventNames(ctx, projectId)).reduce((n, r) => n + (want.has(r.name) ? Number(r.count) : 0), 0);
  }
  const from = f.fromMs ?? 0;
  const to = f.toMs !== undefined ? f.toMs + 1 : Math.max(ctx.clock.now(), from) + 1;
  if (from >= to) return 0;
  let n = 0;
  for (const c of (await windowCounts(ctx, projectId, from, to, names)).values()) n += c;
  return n;
}

const STAT_NAMES: Record<string, string> = {
  sent: "email.sent",
  delivered: "email.delivery",
  deferred: "email.deferred",
  opened: "email.open",
  clicked: "email.click",
  bounced: "email.bounce",
  complained: "email.complaint",
  failed: "email.failed",
  suppressed: "email.suppressed",
  received: "email.received",
  subscribed: "contact.subscribed",
  unsubscribed: "contact.unsubscribed",
};

const rate = (n: number, base: number) => (base > 0 ? Math.round((n / base) * 10_000) / 100 : 0);

/** Counts and rates (percent of emails sent) over a window, default the last 30 days. */
export async function stats(ctx: AppContext, projectId: string, window: { fromMs?: number; toMs?: number }) {
  const toMs = window.toMs ?? ctx.clock.now();
  const fromMs = window.fromMs ?? toMs - 30 * DAY;
  if (fromMs > toMs) throw badRequest("from must be before to");
  const byName = Object.fromEntries(await windowCounts(ctx, projectId, fromMs, toMs + 1));
  const counts: Record<string, number> = {};
  for (const [k, name] of Object.entries(STAT_NAMES)) counts[k] = byName[name] ?? 0;
  let all = 0;
  let events = 0;
  for (const [name, n] of Object.entries(byName)) {
    all += n;
    if (!isReservedEventName(name)) events += n;
  }
  const base = Math.max(counts.sent!, counts.delivered!);
  return {
    from: iso(fromMs),
    to: iso(toMs),
    total: all,
    events,
    ...counts,
    openRate: rate(counts.opened!, base),
    clickRate: rate(counts.clicked!, base),
    bounceRate: rate(counts.bounced!, base),
    complaintRate: rate(counts.complained!, base),
  };
}

export async function recentCount(ctx: AppContext, projectId: string, sinceMs: number | undefined, minutes: number) {
  const since = sinceMs ?? Math.max(0, ctx.clock.now() - minutes * 60_000);
  return { count: await countFeed(ctx, projectId, { fromMs: since }), since: iso(since) };
}

export async function types(ctx: AppContext, projectId: string): Promise<string[]> {
  const names = await eventNames(ctx, projectId);
  return [...new Set(names.map((r) => activityType(r.name)))].sort();
}

export async function upcoming(ctx: AppContext, projectId: string, limit: number): Promise<UpcomingItem[]> {
  const items: UpcomingItem[] = [];
  for (const e of await upcomingEmails(ctx.db, projectId, limit)) {
    items.push({
      type: e.status === "DEFERRED" ? "email.retry" : "email.pending",
      id: e.id,
      at: iso(e.next_attempt_at),
      details: { to: e.to_email, contactId: e.contact_id, attempts: e.attempts, campaignId: e.campaign_id, lastReply: e.last_reply },
    });
  }
  for (const j of await upcomingJobs(ctx.db, projectId, limit, ctx.contributions.hiddenJobTypes)) {
    items.push({ type: `job.${j.type}`, id: j.id, at: iso(j.run_at), details: { state: j.state, progress: j.progress } });
  }
  for (const more of ctx.contributions.upcoming) items.push(...(await more(ctx, projectId, limit)));
  return items.sort((a, b) => (a.at ?? "").localeCompare(b.at ?? "")).slice(0, limit);
}

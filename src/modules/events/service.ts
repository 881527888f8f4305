/** The rules of /v1/track and the events endpoints; typed inputs, no HTTP. */
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { dataErrors, type Data } from "../../audience/data-rules";
import { isReservedEventName, MAX_EVENT_NAME_LENGTH, viewEvent } from "../../audience/events";
import { aggregateUsage } from "../../audience/usage";
import { badRequest, notFound, validationError, type FieldError } from "../../http/errors";
import { withIdempotency } from "../../http/idempotency";
import { cursorPage, type CursorParams } from "../../http/pagination";
import { isValidEmail } from "../../net/email-address";
import { DAY, dailyTotals, eventNames, parseTime, windowCounts } from "../analytics/service";
import { doubleOptInOf, requestConfirmation, wouldSubscribe } from "../double-opt-in/service";
import * as q from "./queries";

const MAX_STATS_DAYS = 3_660;

export interface TrackRequest {
  email: string;
  event: string;
  subscribed?: boolean;
  data?: unknown;
}

/** Field errors of a track body beyond its TypeBox shape: bad email, reserved or empty name, unusable data. */
export function trackErrors(body: TrackRequest): FieldError[] {
  const errors: FieldError[] = [];
  if (!isValidEmail(body.email.trim())) errors.push({ field: "email", message: "Invalid email", code: "invalid_string", received: body.email.slice(0, 254) });
  const name = body.event.trim();
  if (!name) errors.push({ field: "event", message: "Event name must not be empty", code: "too_small", received: body.event });
  else if (isReservedEventName(name)) {
    errors.push({
      field: "event",
      message: `"${name.slice(0, 100)}" is a reserved event name (email.*, contact.subscribed, contact.unsubscribed, contact.confirmed, segment.<slug>.entry/exit)`,
      code: "reserved_event",
      received: name.slice(0, 255),
    });
  }
  errors.push(...dataErrors(body.data));
  return errors;
}

/**
 * Validates, then records through the micro-batcher (once per Idempotency-Key). A 422 writes nothing.
 * With double opt-in on, a public-key track that would subscribe the contact is held: the contact is
 * written unsubscribed and gets a confirmation email instead (modules/double-opt-in).
 */
export async function track(
  ctx: AppContext,
  projectId: string,
  body: TrackRequest,
  idempotency: { key: string | null; method: string; path: string },
  via: "public" | "secret" | "session" | string = "secret",
) {
  const errors = trackErrors(body);
  if (errors.length) throw validationError(errors);
  const input = {
    projectId,
    email: body.email.trim(),
    event: body.event.trim(),
    subscribed: body.subscribed,
    data: (body.data ?? undefined) as Data | undefined,
  };
  const hold = via === "public" && (await doubleOptInOf(ctx, projectId)).enabled && (await wouldSubscribe(ctx, projectId, input.email, input.subscribed));
  if (hold) input.subscribed = false;
  const batcher = ctx.services.trackBatcher;
  const run = async () => {
    const r = await batcher.track(input);
    if (hold) {
      // The track is committed: a failure to queue the email is logged, the contact stays pending (a later subscribe retries).
      await requestConfirmation(ctx, projectId, r.contactId).catch((e) =>
        ctx.log.error("double opt-in: confirmation email not queued", { projectId, contactId: r.contactId, error: String((e as Error)?.stack ?? e) }),
      );
    }
    return r;
  };
  const r = idempotency.key === null ? await run() : await withIdempotency(ctx, projectId, idempotency.key, idempotency, run);
  return { success: true as const, data: { contact: r.contactId, event: r.eventId, timestamp: iso(r.createdAt)! } };
}

// ---- reads -------------------------------------------------------------------------------------------

function checkName(name: string | undefined): string | undefined {
  if (name === undefined || name === "") return undefined;
  if (name.length > MAX_EVENT_NAME_LENGTH) throw badRequest(`name must be at most ${MAX_EVENT_NAME_LENGTH} characters`);
  return name;
}

export async function listEvents(ctx: AppContext, projectId: string, input: { name?: string; contactId?: string; page: CursorParams }) {
  if (input.contactId && !(await q.contactExists(ctx, projectId, input.contactId))) throw notFound("Contact");
  const f: q.EventFilter = { projectId, name: checkName(input.name), contactId: input.contactId || undefined };
  const rows = await q.selectEventPage(ctx, f, input.page.limit, input.page.after?.id ?? null);
  const total = input.page.isFirstPage ? await q.countEvents(ctx, f) : 0;
  return cursorPage(rows, input.page, { total: () => total, sortValue: () => null, id: (r) => r.id, map: viewEvent });
}

/** Totals, per-name counts and a daily series over [from, to) (default: the last `days`, 30), read from the rollups. */
export async function stats(ctx: AppContext, projectId: string, query: { days?: string; from?: string; to?: string }) {
  let days = 30;
  if (query.days !== undefined && query.days !== "") {
    days = Number(query.days);
    if (!Number.isInteger(days) || days < 1 || days > MAX_STATS_DAYS) throw badRequest(`days must be an integer from 1 to ${MAX_STATS_DAYS}`, { details: { days: query.days } });
  }
  const to = parseTime(query.to, "to") ?? ctx.clock.now() + 1;
  const from = parseTime(query.from, "from") ?? to - days * DAY;
  if (from >= to) throw badRequest("from must be before to");
  if (to - from > MAX_STATS_DAYS * DAY) throw badRequest(`the window must be at most ${MAX_STATS_DAYS} days`);
  const byName = await windowCounts(ctx, projectId, from, to);
  // Whole days from the daily rollup; the partial first and last day counted exactly.
  const firstDay = Math.floor(from / DAY) * DAY;
  const lastDay = Math.floor((to - 1) / DAY) * DAY;
  const daily = new Map<number, number>();
  const edge = async (d: number) => {
    let n = 0;
    for (const c of (await windowCounts(ctx, projectId, Math.max(from, d), Math.min(to, d + DAY))).values()) n += c;
    daily.set(d, n);
  };
  await edge(firstDay);
  if (lastDay !== firstDay) await edge(lastDay);
  if (lastDay - firstDay > DAY) {
    for (const [d, n] of await dailyTotals(ctx, projectId, firstDay + DAY, lastDay)) daily.set(d, n);
  }
  const events = [...byName]
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([name, count]) => ({ name, count }));
  return {
    from: iso(from),
    to: iso(to),
    total: events.reduce((n, e) => n + e.count, 0),
    events,
    daily: [...daily]
      .filter(([, n]) => n > 0)
      .sort((a, b) => a[0] - b[0])
      .map(([d, count]) => ({ date: iso(d)!.slice(0, 10), count })),
  };
}

export async function names(ctx: AppContext, projectId: string) {
  const rows = await eventNames(ctx, projectId);
  return {
    names: rows.map((r) => r.name),
    data: rows.map((r) => ({ name: r.name, count: Number(r.count), lastSeenAt: iso(r.last_at) })),
  };
}

export function usage(ctx: AppContext, projectId: string, name: string) {
  return aggregateUsage(ctx, ctx.contributions.eventUsage, projectId, name);
}

/** Deletes every event of a client event name; system events (reserved names) are history and stay. */
export async function deleteByName(ctx: AppContext, projectId: string, name: string) {
  if (isReservedEventName(name)) throw badRequest(`"${name.slice(0, 100)}" is a system event name; its events cannot be deleted`);
  const deleted = await q.deleteByName(ctx, projectId, name);
  return { name, deleted };
}

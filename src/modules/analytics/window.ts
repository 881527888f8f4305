/** `from` / `to` of the aggregate endpoints: ISO-8601 or epoch ms, checked before anything uses them. */
import { badRequest } from "../../http/errors";

export const HOUR = 3_600_000;
export const DAY = 86_400_000;
/** 1970 to the end of year 9999: anything outside is a typo, not a window. */
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** Accepts an ISO-8601 date or date-time, or epoch milliseconds (digits only). Anything else is 400. */
export function parseTime(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === "") return undefined;
  const s = raw.trim();
  let ms: number;
  if (/^\d{1,16}$/.test(s)) ms = Number(s);
  else if (s.length <= 40 && ISO.test(s)) ms = Date.parse(s);
  else ms = NaN;
  if (!Number.isFinite(ms) || ms < 0 || ms > MAX_MS) {
    throw badRequest(`${name} must be an ISO-8601 date-time or epoch milliseconds`, { details: { [name]: raw.slice(0, 100) } });
  }
  return ms;
}

export interface Window {
  /** Inclusive. */
  fromMs: number;
  /** Inclusive (the API's `to`). */
  toMs: number;
}

/**
 * The window of a query: default the last `defaultDays` (30) ending now; `from` after `to` is 400;
 * a window longer than `maxMs` keeps its end and is clamped to that length.
 */
export function resolveWindow(now: number, q: { from?: string; to?: string }, opts: { defaultDays?: number; maxMs?: number } = {}): Window {
  const toMs = parseTime(q.to, "to") ?? now;
  let fromMs = parseTime(q.from, "from") ?? toMs - (opts.defaultDays ?? 30) * DAY;
  if (fromMs > toMs) throw badRequest("from must be before to", { details: { from: q.from, to: q.to } });
  if (opts.maxMs !== undefined && toMs - fromMs > opts.maxMs) fromMs = toMs - opts.maxMs;
  return { fromMs: Math.max(0, fromMs), toMs };
}

/** Percent with two decimals; 0 when the base is 0. */
export const pct = (n: number, base: number) => (base > 0 ? Math.round((n / base) * 10_000) / 100 : 0);

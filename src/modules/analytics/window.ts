/** `from` / `to` of the aggregate endpoints: ISO-8601 or epoch ms, checked before anything uses them. */
import { badRequest } from "../../http/errors";
import { parseTimeParam } from "../../http/params";

export const HOUR = 3_600_000;
export const DAY = 86_400_000;
/** ISO-8601 or epoch milliseconds, range-checked by the one query-time parser (src/http/params.ts). */
export function parseTime(raw: string | undefined, name: string): number | undefined {
  return parseTimeParam(raw, name);
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

// Query parameter parsing shared by every route: nothing reaches Date or SQLite unchecked.
import { badRequest } from "./errors";

/** ISO-8601 date or date-time (Date.parse alone accepts much more, e.g. "not-a-date 1"). */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Latest instant accepted in a query (9999-12-31T23:59:59.999Z); anything later is a 400. */
export const MAX_TIME_MS = 253_402_300_799_999;

/**
 * An ISO-8601 date(-time) or epoch milliseconds (digits only), between 1970-01-01 and 9999-12-31;
 * undefined when absent or empty. Anything else, or outside that range, is a 400 BAD_REQUEST.
 */
export function parseTimeParam(raw: unknown, name: string): number | undefined {
  if (raw === undefined || raw === null || raw === "") return undefined;
  const s = String(raw);
  const ms = /^\d{1,16}$/.test(s) ? Number(s) : ISO_DATE.test(s) ? Date.parse(s) : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_TIME_MS) {
    throw badRequest(`${name} must be an ISO-8601 date-time or epoch milliseconds between 1970 and 9999`, { details: { [name]: s.slice(0, 100) } });
  }
  return ms;
}

/** Largest page number honoured; later pages are past any real list and answer empty. */
export const MAX_PAGE = 1_000_000;

/** A positive integer query parameter (1-based page numbers, sizes), clamped to `max`. */
export function positiveIntParam(raw: unknown, name: string, def: number, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined || raw === null || raw === "") return def;
  const s = String(raw).trim();
  const n = /^[+]?\d+$/.test(s) ? Number(s) : Number.NaN;
  if (!Number.isFinite(n)) throw badRequest(`${name} must be a positive integer`, { details: { [name]: String(raw).slice(0, 100) } });
  if (n < 1) throw badRequest(`${name} must be at least 1`, { details: { [name]: String(raw).slice(0, 100) } });
  return Math.min(n, max);
}

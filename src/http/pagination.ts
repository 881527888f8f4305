import { badRequest } from "./errors";
import { MAX_PAGE, positiveIntParam } from "./params";

/** Cursor lists: `{ data, cursor, hasMore, total }`; total only on the first page (0 later). */
export interface CursorPage<T> {
  data: T[];
  cursor: string | null;
  hasMore: boolean;
  total: number;
}

export interface CursorParams {
  limit: number;
  /** Decoded cursor: the sort value and id of the last row of the previous page. */
  after: { v: string | number | null; id: string } | null;
  isFirstPage: boolean;
}

const MAX_LIMIT = 100;

export function parseLimit(raw: unknown, def = 20, max = MAX_LIMIT): number {
  if (raw === undefined || raw === null || raw === "") return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || !Number.isInteger(n)) throw badRequest("limit must be an integer", { details: { limit: raw } });
  if (n < 1) throw badRequest("limit must be at least 1", { details: { limit: raw } });
  return Math.min(n, max);
}

export function encodeCursor(v: string | number | null, id: string): string {
  return Buffer.from(JSON.stringify([v, id])).toString("base64url");
}

export function decodeCursor(raw: string): { v: string | number | null; id: string } {
  try {
    const arr = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
    if (Array.isArray(arr) && arr.length === 2 && typeof arr[1] === "string") return { v: arr[0], id: arr[1] };
  } catch {}
  throw badRequest("cursor is invalid", { details: { cursor: raw } });
}

export function parseCursorParams(query: { limit?: unknown; cursor?: unknown }, max = MAX_LIMIT): CursorParams {
  const limit = parseLimit(query.limit, 20, max);
  const raw = typeof query.cursor === "string" && query.cursor !== "" ? query.cursor : null;
  return { limit, after: raw ? decodeCursor(raw) : null, isFirstPage: raw === null };
}

/**
 * Builds the page from rows fetched with `limit + 1` (the extra row only says whether more exist).
 * `sortValue` gives the value the list is ordered by (with id as the tie-breaker).
 */
export function cursorPage<R, T>(
  rows: R[],
  params: CursorParams,
  opts: { total: () => number; sortValue: (r: R) => string | number | null; id: (r: R) => string; map: (r: R) => T },
): CursorPage<T> {
  const hasMore = rows.length > params.limit;
  const pageRows = hasMore ? rows.slice(0, params.limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(opts.map),
    cursor: hasMore && last ? encodeCursor(opts.sortValue(last), opts.id(last)) : null,
    hasMore,
    total: params.isFirstPage ? opts.total() : 0,
  };
}

/** Offset lists: `{ data, page, pageSize, total, totalPages }`. */
export interface OffsetPage<T> {
  data: T[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

export interface OffsetParams {
  page: number;
  pageSize: number;
  offset: number;
}

/** Offset lists clamp pageSize to 1000 (segment members pass their own max of 100). */
export function parseOffsetParams(query: { page?: unknown; pageSize?: unknown }, maxPageSize = 1000): OffsetParams {
  // Clamped: a page past MAX_PAGE is empty anyway, and the offset stays a safe integer for SQLite.
  const page = positiveIntParam(query.page, "page", 1, MAX_PAGE);
  const pageSize = positiveIntParam(query.pageSize, "pageSize", 20, maxPageSize);
  return { page, pageSize, offset: (page - 1) * pageSize };
}

export function offsetPage<T>(data: T[], total: number, p: OffsetParams): OffsetPage<T> {
  return { data, page: p.page, pageSize: p.pageSize, total, totalPages: Math.ceil(total / p.pageSize) };
}

/** Picks a value from an allow-list, falling back to the default for anything unknown (spec: unknown sort/dir fall back). */
export function pick<T extends string>(raw: unknown, allowed: readonly T[], def: T): T {
  return typeof raw === "string" && (allowed as readonly string[]).includes(raw) ? (raw as T) : def;
}

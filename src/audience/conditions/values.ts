/**
 * The value semantics of filters, in JavaScript. This file is the definition the SQL of dialect.ts
 * mirrors exactly (the property test holds them to it):
 *   - a filter value that is a number, or a numeric string (`-?digits[.digits]`), compares numerically
 *     against stored numbers and numeric strings (CSV imports store strings);
 *   - a `YYYY-MM-DD` / ISO date-time string compares as an instant against stored date strings;
 *   - a boolean matches stored booleans; any other string compares case-sensitively against stored strings;
 *   - string operators (contains, startsWith, endsWith) only match stored strings;
 *   - a stored value of another type never matches a positive operator, so a missing or mismatched key
 *     matches only notExists, notEquals and notContains.
 */
import { UNITS, type Unit } from "./types";

const NUMERIC = /^-?[0-9]*\.?[0-9]*$/;
const HAS_DIGIT = /[0-9]/;

/** The number a stored numeric string stands for (mirrors dialect `isNumericText` + CAST AS REAL). */
export function numericText(s: string): number | null {
  if (!NUMERIC.test(s) || !HAS_DIGIT.test(s)) return null;
  return Number(s);
}

const DATE = /^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?)?(?:\s*(Z|[+-][0-9]{2}:[0-9]{2}))?$/i;

/**
 * Epoch ms of a stored date string, or null: `YYYY-MM-DD`, optionally `THH:MM[:SS[.fff]]` and `Z` or
 * `±HH:MM` (UTC when no zone), as SQLite's julianday() reads them (mirrors dialect `dateMs`).
 */
export function dateText(s: string): number | null {
  const m = DATE.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, sec, frac, tz] = m;
  const month = Number(mo), day = Number(d), hour = Number(h ?? 0), min = Number(mi ?? 0), second = Number(sec ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 24 || min > 59 || second > 59) return null;
  // setUTCFullYear, not Date.UTC: Date.UTC reads years 0-99 as 1900-1999, julianday() as the years they are.
  const at = new Date(0);
  at.setUTCFullYear(Number(y), month - 1, day);
  at.setUTCHours(hour, min, second);
  let ms = at.getTime() + (frac ? Math.round(Number(`0.${frac}`) * 1000) : 0);
  if (tz && tz.toUpperCase() !== "Z") {
    const sign = tz[0] === "-" ? -1 : 1;
    const th = Number(tz.slice(1, 3)), tm = Number(tz.slice(4, 6));
    if (th > 14 || tm > 59) return null;
    ms -= sign * (th * 60 + tm) * 60_000;
  }
  return ms;
}

/** A filter value given for a date-time field (createdAt, updatedAt): a date string (any ISO form) or epoch ms. */
export function instantOf(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v !== "string" || !v) return null;
  const d = dateText(v);
  if (d !== null) return d;
  const p = Date.parse(v);
  return Number.isNaN(p) ? null : p;
}

export type ValueMode = "number" | "date" | "boolean" | "string";

/** How a filter value compares (decided by the value the filter gives, never by the stored one). */
export function modeOf(v: unknown): ValueMode {
  if (typeof v === "number") return "number";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "string") {
    if (numericText(v) !== null) return "number";
    if (dateText(v) !== null) return "date";
  }
  return "string";
}

export function numberOf(v: unknown): number | null {
  if (typeof v === "number") return Number.isFinite(v) ? v : null;
  if (typeof v === "string") return numericText(v);
  return null;
}

export const storedNumber = (s: unknown): number | null =>
  typeof s === "number" ? s : typeof s === "string" ? numericText(s) : null;
export const storedDate = (s: unknown): number | null => (typeof s === "string" ? dateText(s) : null);

/** The span of `value` `unit` in ms (validated before). */
export const spanOf = (value: unknown, unit: unknown): number => (numberOf(value) ?? 0) * (UNITS[unit as Unit] ?? 0);

function compare(op: string, a: number | string, b: number | string): boolean {
  switch (op) {
    case "equals":
      return a === b;
    case "greaterThan":
      return a > b;
    case "lessThan":
      return a < b;
    case "greaterThanOrEqual":
      return a >= b;
    case "lessThanOrEqual":
      return a <= b;
  }
  return false;
}

/** The positive operator of a negated one (notEquals -> equals …), or null. */
export function positiveOf(op: string): string | null {
  switch (op) {
    case "notEquals":
      return "equals";
    case "notContains":
      return "contains";
    case "notExists":
      return "exists";
  }
  return null;
}

/** What a filter's value compares as, worked out once per filter (evaluate.ts caches it). */
export interface PreparedValue {
  op: string;
  /** The positive operator when `op` is a negated one. */
  pos: string | null;
  mode: ValueMode;
  num: number | null;
  date: number | null;
  str: string;
  span: number;
  value: unknown;
}

export function prepareValue(op: string, value: unknown, unit: unknown): PreparedValue {
  const mode = modeOf(value);
  return {
    op,
    pos: positiveOf(op),
    mode,
    num: mode === "number" ? numberOf(value) : null,
    date: mode === "date" ? dateText(value as string) : null,
    str: String(value),
    span: spanOf(value, unit),
    value,
  };
}

function testPrepared(op: string, stored: unknown, p: PreparedValue, now: number): boolean {
  if (stored === undefined || stored === null) return false;
  switch (op) {
    case "exists":
      return true;
    case "contains":
      return typeof stored === "string" && stored.includes(p.str);
    case "startsWith":
      return typeof stored === "string" && stored.startsWith(p.str);
    case "endsWith":
      return typeof stored === "string" && stored.endsWith(p.str);
    case "within":
    case "olderThan": {
      const t = storedDate(stored);
      if (t === null) return false;
      return op === "within" ? t >= now - p.span && t <= now + p.span : t < now - p.span;
    }
  }
  // equals and the comparisons
  switch (p.mode) {
    case "boolean":
      return op === "equals" && stored === p.value;
    case "number": {
      const n = storedNumber(stored);
      return n !== null && compare(op, n, p.num!);
    }
    case "date": {
      const t = storedDate(stored);
      return t !== null && compare(op, t, p.date!);
    }
    default:
      return typeof stored === "string" && compare(op, stored, p.str);
  }
}

/** testValue with the filter's side prepared once. */
export function testPreparedValue(stored: unknown, p: PreparedValue, now: number): boolean {
  return p.pos ? !testPrepared(p.pos, stored, p, now) : testPrepared(p.op, stored, p, now);
}

/**
 * Whether a stored value (undefined when the key is missing) passes a value operator. Negated
 * operators are exactly the negation of their positive operator.
 */
export function testValue(op: string, stored: unknown, value: unknown, unit: unknown, now: number): boolean {
  return testPreparedValue(stored, prepareValue(op, value, unit), now);
}

/** A key of a facts object: the key itself, else a dotted path into nested objects. */
export function factValue(obj: Record<string, unknown> | undefined, key: string): unknown {
  if (!obj) return undefined;
  if (Object.hasOwn(obj, key)) return obj[key];
  let cur: unknown = obj;
  for (const part of key.split(".")) {
    if (cur === null || typeof cur !== "object" || Array.isArray(cur) || !Object.hasOwn(cur, part)) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

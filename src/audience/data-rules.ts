/**
 * THE contact `data` rules of the spec, in one place (PATCH /contacts/:id, POST /contacts,
 * /v1/track, CSV import and later /v1/send all call applyDataRules):
 *   1. a primitive (string, number, boolean) is stored on the contact;
 *   2. `null` deletes the key;
 *   3. `''` is ignored (does not overwrite, does not create);
 *   4. `{ value, persistent: false }` is used for this send/event only: it is in `vars`, never in `stored`;
 *   5. the reserved keys below are silently dropped.
 * Production choices where the spec is silent:
 *   - `{ value, persistent: true }` stores `value` (after the same rules: null deletes, '' is ignored);
 *   - any other object or array is stored as a JSON value (segments can test `exists`, templates print JSON);
 *   - an `undefined` value (only possible from code, not JSON) is ignored.
 */
import type { FieldError } from "../http/errors";

export const RESERVED_DATA_KEYS: ReadonlySet<string> = new Set([
  "id",
  "svc_id",
  "svc_email",
  "email",
  "unsubscribeUrl",
  "subscribeUrl",
  "manageUrl",
]);

export type Data = Record<string, unknown>;

export interface DataRulesResult {
  /** The contact's data after this write (the same object as `existing` when nothing changed). */
  stored: Data;
  /** Variables for this send/event: `stored` plus the non-persistent values. */
  vars: Data;
  /** What this call supplied, after the rules (non-persistent values unwrapped): the event's own data. */
  provided: Data;
  /** Whether `stored` differs from `existing`. */
  changed: boolean;
  /** The top-level keys whose stored value was set or deleted (empty when nothing changed). */
  changedKeys: string[];
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** `{ value, persistent }` wrapper; `persistent` must be a boolean for the object to count as one. */
function wrapper(v: unknown): { value: unknown; persistent: boolean } | null {
  if (!isPlainObject(v) || !("value" in v) || typeof v.persistent !== "boolean") return null;
  return { value: v.value, persistent: v.persistent };
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}

export function applyDataRules(existing: Data, incoming: Data | undefined | null): DataRulesResult {
  if (!incoming || !isPlainObject(incoming)) return { stored: existing, vars: { ...existing }, provided: {}, changed: false, changedKeys: [] };
  let stored: Data | null = null; // copied on first change
  const changedKeys: string[] = [];
  const transient: Data = {};
  const provided: Data = {};
  let hasTransient = false;
  const set = (k: string, v: unknown) => {
    if (sameValue((stored ?? existing)[k], v) && Object.hasOwn(stored ?? existing, k)) return;
    stored ??= { ...existing };
    stored[k] = v;
    changedKeys.push(k);
  };
  const del = (k: string) => {
    if (!Object.hasOwn(stored ?? existing, k)) return;
    stored ??= { ...existing };
    delete stored[k];
    changedKeys.push(k);
  };
  for (const k of Object.keys(incoming)) {
    if (RESERVED_DATA_KEYS.has(k)) continue;
    let v = incoming[k];
    const w = wrapper(v);
    if (w && !w.persistent) {
      if (w.value === undefined) continue;
      transient[k] = w.value;
      provided[k] = w.value;
      hasTransient = true;
      continue;
    }
    if (w) v = w.value;
    if (v === undefined || v === "") continue;
    if (v === null) {
      del(k);
      continue;
    }
    set(k, v);
    provided[k] = v;
  }
  const out = stored ?? existing;
  const vars = hasTransient ? { ...out, ...transient } : { ...out };
  return { stored: out, vars, provided, changed: stored !== null, changedKeys };
}

// ---- edge checks (routes and import call these before anything is written) ----------------------

export const MAX_DATA_KEY_LENGTH = 128;
/** Serialized size cap of the `data` of one request. */
export const MAX_DATA_BYTES = 64 * 1024;
/** Top-level keys in the `data` of one request. */
export const MAX_DATA_KEYS = 256;
/** Nesting of objects/arrays inside `data` (far below SQLite's JSON depth limit of 1000). */
export const MAX_DATA_DEPTH = 16;

/** True when `v` nests objects/arrays deeper than `max` (iterative: never overflows the stack). */
export function nestsDeeperThan(v: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[v, 0]];
  while (stack.length) {
    const [x, d] = stack.pop()!;
    if (x === null || typeof x !== "object") continue;
    if (d + 1 > max) return true;
    for (const child of Array.isArray(x) ? x : Object.values(x)) if (child !== null && typeof child === "object") stack.push([child, d + 1]);
  }
  return false;
}
const BAD_KEY = /["\\\u0000-\u001f\u007f]/;

/** A key usable as a field name and inside a JSON path (`$."key"`). */
export function isValidDataKey(k: string): boolean {
  return k.length >= 1 && k.length <= MAX_DATA_KEY_LENGTH && !BAD_KEY.test(k);
}

/**
 * Field errors of a request's `data` (empty when fine): not an object (arrays and primitives are 422, never
 * read as objects of their indexes), oversized, or keys that cannot be stored. Absent or null is fine.
 */
export function dataErrors(incoming: unknown, field = "data"): FieldError[] {
  if (incoming === undefined || incoming === null) return [];
  if (typeof incoming !== "object" || Array.isArray(incoming)) {
    return [{ field, message: "Expected an object", code: "invalid_type", received: Array.isArray(incoming) ? "array" : typeof incoming }];
  }
  const errors: FieldError[] = [];
  const keys = Object.keys(incoming);
  if (keys.length > MAX_DATA_KEYS) {
    return [{ field, message: `data may have at most ${MAX_DATA_KEYS} keys per request`, code: "too_big", received: keys.length }];
  }
  if (nestsDeeperThan(incoming, MAX_DATA_DEPTH)) {
    return [{ field, message: `data may nest objects and arrays at most ${MAX_DATA_DEPTH} levels deep`, code: "too_deep" }];
  }
  for (const k of keys) {
    if (RESERVED_DATA_KEYS.has(k) || isValidDataKey(k)) continue;
    errors.push({
      field: `${field}.${k}`,
      message: `Field names must be 1 to ${MAX_DATA_KEY_LENGTH} characters without quotes, backslashes or control characters`,
      code: "invalid_key",
      received: k.slice(0, 200),
    });
    if (errors.length >= 20) return errors;
  }
  const size = JSON.stringify(incoming).length;
  if (size > MAX_DATA_BYTES) {
    errors.push({ field, message: `data must serialize to at most ${MAX_DATA_BYTES} bytes`, code: "too_big", received: size });
  }
  return errors;
}

/** JSON path of a top-level data key for SQLite's JSON functions. */
export const jsonPath = (key: string) => `$."${key}"`;

/** Parses a stored data column (always an object). */
export function parseData(text: string | null | undefined): Data {
  if (!text) return {};
  try {
    const v = JSON.parse(text);
    return isPlainObject(v) ? v : {};
  } catch {
    return {};
  }
}

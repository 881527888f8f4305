/**
 * compileCondition: a condition tree -> one boolean SQL expression over the contacts table aliased
 * `c`. Pure (no database): segments referenced by `segment.<id>` come resolved in ctx.segments
 * (resolveSegments), workflow facts in ctx.facts. Every sub-expression is NULL-free, so negated
 * operators are exactly NOT of their positive operator, as in the in-memory evaluator (evaluate.ts).
 *
 * Set shape (default): event and static-membership tests are `c.id IN (subquery)` (counts, pages,
 * membership diffs). Row shape: correlated EXISTS (one contact).
 */
import { sql, type RawBuilder, type SqlBool } from "kysely";
import * as d from "./dialect";
import { parseField } from "./fields";
import { FALSE, Frag, join, q, raw, TRUE } from "../../db/frag";
import type { CompileContext, ConditionFilter, ConditionTree, FieldRef } from "./types";
import { dateText, factValue, instantOf, modeOf, numberOf, positiveOf, spanOf, testValue } from "./values";

const SQL_OP: Record<string, string> = { equals: "=", greaterThan: ">", lessThan: "<", greaterThanOrEqual: ">=", lessThanOrEqual: "<=" };

/** The smallest UUIDv7 text of a millisecond: `id >= floor(t)` iff the id's time is >= t. */
export function uuidv7Floor(ms: number): string {
  const h = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0").slice(-12);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}

interface State {
  ctx: CompileContext;
  /** Inside a NOT: every predicate must be NULL-free (outside, NULL acts as false and lets a simpler, indexable form through). */
  exact: boolean;
  /** Segment ids being expanded (cycle guard). */
  stack: string[];
  /** Contact-set subqueries written so far (event and static-segment filters). */
  sets: number;
  /** Write each set subquery as its own subplan (too many for the engine's join search: d.joinedSetLimit). */
  ownSubplans: boolean;
}

/** A contact-set subquery of the whole-table shape, counted (see State.ownSubplans). */
function setOf(st: State, f: Frag): Frag {
  st.sets++;
  return st.ownSubplans ? d.ownSubplan(f) : f;
}

function not(f: Frag): Frag {
  return q`NOT (${f})`;
}

function dataFilter(key: string, op: string, value: unknown, unit: unknown, now: number, exact: boolean): Frag {
  const pos = positiveOf(op);
  if (pos) return not(dataFilter(key, pos, value, unit, now, true));
  const x = d.jsonValue(key);
  switch (op) {
    case "exists":
      return d.hasKey(key);
    case "contains":
      return q`(${d.isText(key)} AND ${d.containsText(x, String(value))})`;
    case "startsWith":
      return q`(${d.isText(key)} AND ${d.startsWithText(x, String(value))})`;
    case "endsWith":
      return q`(${d.isText(key)} AND ${d.endsWithText(x, String(value))})`;
    case "within":
    case "olderThan": {
      const span = spanOf(value, unit);
      const t = d.dateMs(x);
      const range = op === "within" ? q`${t} >= ${now - span} AND ${t} <= ${now + span}` : q`${t} < ${now - span}`;
      return q`(${d.isText(key)} AND ${d.isDateText(x)} AND ${range})`;
    }
  }
  const cmp = raw(` ${SQL_OP[op]} `);
  switch (modeOf(value)) {
    case "boolean":
      return op === "equals" ? d.isBoolean(key, value as boolean) : FALSE;
    case "number": {
      const n = numberOf(value)!;
      return q`((${d.isNumber(key)} AND ${d.numberValue(key)}${cmp}${n}) OR (${d.isText(key)} AND ${d.isNumericText(x)} AND ${d.textNumber(x)}${cmp}${n}))`;
    }
    case "date":
      return q`(${d.isText(key)} AND ${d.isDateText(x)} AND ${d.dateMs(x)}${cmp}${dateText(value as string)!})`;
    default: {
      const v = String(value);
      // json_extract yields TEXT only for strings and (as JSON text) arrays/objects: a value that cannot be
      // JSON text of an array/object equals only a string. This form matches an expression index.
      if (op === "equals" && !exact && !/^\s*[[{]/.test(v)) return q`${x} = ${v}`;
      return q`(${d.isText(key)} AND ${x}${cmp}${v})`;
    }
  }
}

function emailFilter(op: string, value: unknown): Frag {
  const pos = positiveOf(op);
  if (pos) return not(emailFilter(pos, value));
  const v = String(value).trim().toLowerCase();
  switch (op) {
    case "equals":
      return q`c.email = ${v}`;
    case "contains":
      return q`c.email ${raw(d.like())} ${`%${d.likeEscape(v)}%`} ESCAPE '\\'`;
    case "startsWith":
      return q`c.email ${raw(d.like())} ${`${d.likeEscape(v)}%`} ESCAPE '\\'`;
    case "endsWith":
      return q`c.email ${raw(d.like())} ${`%${d.likeEscape(v)}`} ESCAPE '\\'`;
  }
  return FALSE;
}

/** Beyond every stored time (epoch ms): a bound past it is the same as this one. */
const FAR = 1e16;

/**
 * `col <op> v` over an integer column (epoch ms) with an integer bound that selects the same rows:
 * fractional, huge and infinite bounds (a condition's value x its unit) are what SQLite compares as
 * reals and PostgreSQL refuses as bigint parameters.
 */
function intCmp(col: Frag, op: "=" | "<>" | ">=" | ">" | "<" | "<=", v: number): Frag {
  if (op === "=" || op === "<>") {
    if (Number.isInteger(v) && Math.abs(v) <= FAR) return q`${col} ${raw(op)} ${v}`;
    return op === "=" ? FALSE : TRUE;
  }
  const clamped = Number.isNaN(v) ? 0 : Math.max(-FAR, Math.min(FAR, v));
  const bound = op === ">=" || op === "<" ? Math.ceil(clamped) : Math.floor(clamped);
  return q`${col} ${raw(op)} ${bound}`;
}

function timeFilter(column: "c.created_at" | "c.updated_at", op: string, value: unknown, unit: unknown, now: number): Frag {
  const col = raw(column);
  if (op === "notEquals") return intCmp(col, "<>", instantOf(value)!);
  if (op === "within") {
    const span = spanOf(value, unit);
    return q`(${intCmp(col, ">=", now - span)} AND ${intCmp(col, "<=", now + span)})`;
  }
  if (op === "olderThan") return intCmp(col, "<", now - spanOf(value, unit));
  return intCmp(col, SQL_OP[op] as ">=", instantOf(value)!);
}

/** Contacts with an event `name` (since `since` ms when given). */
function eventSet(st: State, name: string, since: number | null): Frag {
  const win = since === null ? raw("") : q` AND e.id >= ${uuidv7Floor(since)} AND ${intCmp(raw("e.created_at"), ">=", since)}`;
  if (st.ctx.shape === "row") return q`EXISTS (SELECT 1 FROM events e WHERE e.contact_id = c.id AND e.name = ${name}${win})`;
  return setOf(st, q`c.id IN (SELECT e.contact_id FROM events e WHERE e.project_id = ${st.ctx.projectId} AND e.name = ${name}${win})`);
}

function eventFilter(st: State, name: string, op: string, value: unknown, unit: unknown): Frag {
  const since = () => st.ctx.now - spanOf(value, unit);
  switch (op) {
    case "triggered":
      return eventSet(st, name, null);
    case "notTriggered":
      return not(eventSet(st, name, null));
    case "triggeredWithin":
      return eventSet(st, name, since());
    case "notTriggeredWithin":
      return not(eventSet(st, name, since()));
    case "triggeredOlderThan":
      return q`(${eventSet(st, name, null)} AND NOT (${eventSet(st, name, since())}))`;
  }
  return FALSE;
}

function memberOf(st: State, id: string, negated: boolean): Frag {
  const seg = st.ctx.segments?.get(id);
  if (!seg || st.stack.includes(id)) return FALSE;
  if (seg.type === "STATIC") {
    if (st.ctx.shape === "row") return q`EXISTS (SELECT 1 FROM segment_members sm WHERE sm.segment_id = ${id} AND sm.contact_id = c.id)`;
    return setOf(st, q`c.id IN (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = ${id})`);
  }
  if (!seg.condition) return FALSE;
  st.stack.push(id);
  const exact = st.exact;
  st.exact = exact || negated;
  try {
    return tree(st, seg.condition);
  } finally {
    st.stack.pop();
    st.exact = exact;
  }
}

function filter(st: State, f: ConditionFilter): Frag {
  const ref = parseField(f.field, f.operator, st.ctx.mode ?? (st.ctx.facts ? "workflow" : "segment")) as FieldRef | null;
  if (!ref) return FALSE;
  const { now } = st.ctx;
  switch (ref.kind) {
    case "email":
      return emailFilter(f.operator, f.value);
    case "subscribed": {
      const want = f.value === true ? 1 : 0;
      return f.operator === "notEquals" ? q`c.subscribed <> ${want}` : q`c.subscribed = ${want}`;
    }
    case "createdAt":
      return timeFilter("c.created_at", f.operator, f.value, f.unit, now);
    case "updatedAt":
      return timeFilter("c.updated_at", f.operator, f.value, f.unit, now);
    case "data":
      return dataFilter(ref.key, f.operator, f.value, f.unit, now, st.exact);
    case "event":
      return eventFilter(st, ref.name, f.operator, f.value, f.unit);
    case "segment": {
      const negated = f.operator === "notMemberOfSegment";
      const m = memberOf(st, ref.id, negated);
      return negated ? not(m) : m;
    }
    case "fact": {
      const facts = st.ctx.facts?.[ref.source];
      return testValue(f.operator, factValue(facts, ref.key), f.value, f.unit, now) ? TRUE : FALSE;
    }
  }
}

function tree(st: State, t: ConditionTree): Frag {
  const groups = (t.groups ?? []).map((g) => {
    const parts = (g.filters ?? []).map((f) => filter(st, f));
    if (g.conditions) parts.push(tree(st, g.conditions));
    return parts.length ? q`(${join(parts, " AND ")})` : TRUE;
  });
  if (!groups.length) return TRUE;
  return q`(${join(groups, String(t.logic).toUpperCase() === "OR" ? " OR " : " AND ")})`;
}

/** The condition as a fragment (for composing with other SQL in this folder). */
export function compileFrag(t: ConditionTree, ctx: CompileContext): Frag {
  const st: State = { ctx, stack: [], exact: false, sets: 0, ownSubplans: false };
  const f = tree(st, t);
  if (st.sets <= d.joinedSetLimit()) return f;
  return tree({ ctx, stack: [], exact: false, sets: 0, ownSubplans: true }, t);
}

/** A boolean SQL expression over contacts aliased `c`, with its `?` parameters in order. */
export function compileCondition(t: ConditionTree, ctx: CompileContext): { sql: string; params: unknown[] } {
  const f = compileFrag(t, ctx);
  return { sql: f.sql, params: [...f.params] };
}

/** The condition as a Kysely expression: `db.selectFrom("contacts as c").where(conditionWhere(tree, ctx))`. */
export function conditionWhere(t: ConditionTree, ctx: CompileContext): RawBuilder<SqlBool> {
  return fragToRaw(compileFrag(t, ctx));
}

export function fragToRaw<T = SqlBool>(f: Frag): RawBuilder<T> {
  return sql<T>(f.parts as unknown as TemplateStringsArray, ...f.params);
}

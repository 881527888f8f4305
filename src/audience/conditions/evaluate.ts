/**
 * evaluateInMemory: the same semantics as the SQL compiler for one contact already in memory
 * (workflow CONDITION steps on a loaded contact, the property test). Keep in step with compile.ts.
 * evaluateKnown: the same without the contact's events: true or false when the rest of the tree
 * decides it whatever the events are, undefined when it depends on them (three-valued logic).
 */
import { parseField } from "./fields";
import type { ConditionFilter, ConditionTree, Facts, SegmentDef } from "./types";
import { factValue, instantOf, prepareValue, spanOf, testPreparedValue, type PreparedValue } from "./values";

export interface MemContact {
  id: string;
  /** Lower-case, as stored. */
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
}

export interface MemEvent {
  name: string;
  /** Epoch ms. */
  createdAt: number;
}

export interface EvaluateOptions {
  now: number;
  /** The contact's events (any order). */
  events: readonly MemEvent[];
  /** Ids of the STATIC segments the contact is a member of. */
  memberships: ReadonlySet<string> | readonly string[];
  facts?: Facts;
  mode?: "segment" | "workflow";
  /** Segments referenced by `segment.<id>` (DYNAMIC ones are evaluated from their condition). */
  segments?: ReadonlyMap<string, SegmentDef>;
}

interface St {
  c: MemContact;
  o: EvaluateOptions;
  members: ReadonlySet<string>;
  stack: string[];
  /** The events are not known: an event filter is undefined (evaluateKnown). */
  noEvents: boolean;
}

/** Three-valued: undefined is "depends on the events". */
type Tri = boolean | undefined;
const not = (v: Tri): Tri => (v === undefined ? undefined : !v);

function cmpTime(op: string, t: number, v: number): boolean {
  switch (op) {
    case "equals":
      return t === v;
    case "notEquals":
      return t !== v;
    case "greaterThan":
      return t > v;
    case "lessThan":
      return t < v;
    case "greaterThanOrEqual":
      return t >= v;
    case "lessThanOrEqual":
      return t <= v;
  }
  return false;
}

function timeField(op: string, t: number, value: unknown, unit: unknown, now: number): boolean {
  if (op === "within") {
    const span = spanOf(value, unit);
    return t >= now - span && t <= now + span;
  }
  if (op === "olderThan") return t < now - spanOf(value, unit);
  return cmpTime(op, t, instantOf(value)!);
}

function emailField(op: string, email: string, value: unknown): boolean {
  const v = String(value).trim().toLowerCase();
  switch (op) {
    case "equals":
      return email === v;
    case "notEquals":
      return email !== v;
    case "contains":
      return email.includes(v);
    case "notContains":
      return !email.includes(v);
    case "startsWith":
      return email.startsWith(v);
    case "endsWith":
      return email.endsWith(v);
  }
  return false;
}

function eventField(st: St, name: string, op: string, value: unknown, unit: unknown): boolean {
  let any = false;
  let recent = false;
  const since = st.o.now - spanOf(value, unit);
  for (const e of st.o.events) {
    if (e.name !== name) continue;
    any = true;
    if (e.createdAt >= since) recent = true;
  }
  switch (op) {
    case "triggered":
      return any;
    case "notTriggered":
      return !any;
    case "triggeredWithin":
      return recent;
    case "notTriggeredWithin":
      return !recent;
    case "triggeredOlderThan":
      return any && !recent;
  }
  return false;
}

function memberOf(st: St, id: string): Tri {
  const seg = st.o.segments?.get(id);
  if (!seg || st.stack.includes(id)) return false;
  if (seg.type === "STATIC") return st.members.has(id);
  if (!seg.condition) return false;
  st.stack.push(id);
  try {
    return tree(st, seg.condition);
  } finally {
    st.stack.pop();
  }
}

/** Per filter, worked out once: what the field addresses and how the value compares. */
interface Prepared {
  mode: string;
  ref: ReturnType<typeof parseField>;
  value: PreparedValue;
}
const prepared = new WeakMap<ConditionFilter, Prepared>();

function prep(f: ConditionFilter, mode: "segment" | "workflow"): Prepared {
  const hit = prepared.get(f);
  if (hit && hit.mode === mode) return hit;
  const p = { mode, ref: parseField(f.field, f.operator, mode), value: prepareValue(f.operator, f.value, f.unit) };
  prepared.set(f, p);
  return p;
}

function filter(st: St, f: ConditionFilter): Tri {
  const mode = st.o.mode ?? (st.o.facts ? "workflow" : "segment");
  const { ref, value: pv } = prep(f, mode);
  if (!ref) return false;
  const { c, o } = st;
  switch (ref.kind) {
    case "email":
      return emailField(f.operator, c.email, f.value);
    case "subscribed":
      return f.operator === "notEquals" ? c.subscribed !== (f.value === true) : c.subscribed === (f.value === true);
    case "createdAt":
      return timeField(f.operator, c.createdAt, f.value, f.unit, o.now);
    case "updatedAt":
      return timeField(f.operator, c.updatedAt, f.value, f.unit, o.now);
    case "data":
      return testPreparedValue(Object.hasOwn(c.data, ref.key) ? c.data[ref.key] : undefined, pv, o.now);
    case "event":
      return st.noEvents ? undefined : eventField(st, ref.name, f.operator, f.value, f.unit);
    case "segment":
      return f.operator === "notMemberOfSegment" ? not(memberOf(st, ref.id)) : memberOf(st, ref.id);
    case "fact": {
      const v = factValue(o.facts?.[ref.source], ref.key);
      return testPreparedValue(v, pv, o.now);
    }
  }
}

/**
 * AND (`wins` false) or OR (`wins` true) of three-valued results: the first `wins` decides (the rest
 * are not evaluated), else undefined if any was, else !wins.
 */
function combine(values: Iterable<Tri>, wins: boolean): Tri {
  let out: Tri = !wins;
  for (const v of values) {
    if (v === wins) return wins;
    if (v === undefined) out = undefined;
  }
  return out;
}

function* groupValues(st: St, g: NonNullable<ConditionTree["groups"]>[number]): Generator<Tri> {
  for (const f of g.filters ?? []) yield filter(st, f);
  if (g.conditions) yield tree(st, g.conditions);
}

function tree(st: St, t: ConditionTree): Tri {
  const groups = t.groups ?? [];
  if (!groups.length) return true;
  const results = groups.map((g) => combine(groupValues(st, g), false));
  return combine(results, String(t.logic).toUpperCase() === "OR");
}

function state(contact: MemContact, opts: EvaluateOptions, noEvents: boolean): St {
  const members = opts.memberships instanceof Set ? opts.memberships : new Set(opts.memberships as readonly string[]);
  return { c: contact, o: opts, members, stack: [], noEvents };
}

export function evaluateInMemory(t: ConditionTree, contact: MemContact, opts: EvaluateOptions): boolean {
  return tree(state(contact, opts, false), t) === true;
}

/** What the tree says without the contact's events (`opts.events` is ignored): undefined when they decide. */
export function evaluateKnown(t: ConditionTree, contact: MemContact, opts: Omit<EvaluateOptions, "events">): boolean | undefined {
  return tree(state(contact, { ...opts, events: [] }, true), t);
}

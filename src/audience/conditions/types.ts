/**
 * The condition tree of segments, campaign audiences (FILTERED) and workflow CONDITION steps, and the
 * vocabulary of docs/api.md "Segments and conditions": operators, units and field forms.
 */
export type ConditionTree = { logic: "AND" | "OR"; groups: ConditionGroup[] };
export type ConditionGroup = { filters: ConditionFilter[]; conditions?: ConditionTree };
export type ConditionFilter = { field: string; operator: string; value?: unknown; unit?: string };

export interface FieldIssue {
  field: string;
  message: string;
  code: string;
}

export const OPERATORS = [
  "equals",
  "notEquals",
  "contains",
  "notContains",
  "startsWith",
  "endsWith",
  "greaterThan",
  "lessThan",
  "greaterThanOrEqual",
  "lessThanOrEqual",
  "exists",
  "notExists",
  "within",
  "olderThan",
  "triggered",
  "notTriggered",
  "triggeredWithin",
  "triggeredOlderThan",
  "notTriggeredWithin",
  "memberOfSegment",
  "notMemberOfSegment",
] as const;
export type Operator = (typeof OPERATORS)[number];

export const UNITS = { minutes: 60_000, hours: 3_600_000, days: 86_400_000, weeks: 604_800_000 } as const;
export type Unit = keyof typeof UNITS;

/** Operators that take no value (a given value is ignored). */
export const VALUELESS: ReadonlySet<string> = new Set(["exists", "notExists", "triggered", "notTriggered", "memberOfSegment", "notMemberOfSegment"]);
/** Operators that take `value` (a number) and `unit`. */
export const TIMED: ReadonlySet<string> = new Set(["within", "olderThan", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"]);

export const STRING_OPS: ReadonlySet<string> = new Set(["equals", "notEquals", "contains", "notContains", "startsWith", "endsWith"]);
export const COMPARE_OPS: ReadonlySet<string> = new Set(["greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual"]);
export const EVENT_OPS: ReadonlySet<string> = new Set(["triggered", "notTriggered", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"]);
export const SEGMENT_OPS: ReadonlySet<string> = new Set(["memberOfSegment", "notMemberOfSegment"]);
/** Operators on a value (contact data, workflow event/context facts). */
export const VALUE_OPS: ReadonlySet<string> = new Set([...STRING_OPS, ...COMPARE_OPS, "exists", "notExists", "within", "olderThan"]);

/** The `email.<kind>` events usable as fields. */
export const EMAIL_EVENT_KINDS: ReadonlySet<string> = new Set(["sent", "delivery", "open", "click", "bounce", "complaint"]);

/** What a `field` string addresses. */
export type FieldRef =
  | { kind: "email" }
  | { kind: "subscribed" }
  | { kind: "createdAt" }
  | { kind: "updatedAt" }
  | { kind: "data"; key: string }
  | { kind: "event"; name: string }
  | { kind: "segment"; id: string }
  /** Workflow mode: a key of the triggering event's data or of the execution context. */
  | { kind: "fact"; source: "event" | "workflow"; key: string };

/** A segment as the compiler needs it to resolve `segment.<id>` (see resolveSegments). */
export interface SegmentDef {
  id: string;
  type: "DYNAMIC" | "STATIC";
  condition: ConditionTree | null;
}

/** Workflow facts: the triggering event's data and the execution context. */
export interface Facts {
  event?: Record<string, unknown>;
  workflow?: Record<string, unknown>;
}

export interface CompileContext {
  projectId: string;
  now: number;
  facts?: Facts;
  /** "workflow" reads `event.<key>` (value operators) and `workflow.<key>` as facts; default: workflow when facts are given. */
  mode?: "segment" | "workflow";
  /** Segments referenced by `segment.<id>` filters (transitively); a missing one has no members. */
  segments?: ReadonlyMap<string, SegmentDef>;
  /**
   * "set" (default): event and membership tests as `c.id IN (subquery)`, best for counts and pages.
   * "row": correlated EXISTS, best when the outer query reads one contact.
   */
  shape?: "set" | "row";
}

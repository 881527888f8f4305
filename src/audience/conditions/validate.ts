/**
 * validateCondition: every problem of a condition tree as field issues whose `field` names the
 * filter (`condition.groups[0].filters[1].operator`), for a 422 VALIDATION_ERROR. A tree without
 * issues is safe to compile. Circular `segment.<id>` references need the database: see
 * segments/service.ts (checkSegmentReferences).
 */
import { parseField, type Mode } from "./fields";
import { COMPARE_OPS, EVENT_OPS, OPERATORS, SEGMENT_OPS, STRING_OPS, TIMED, UNITS, VALUELESS, type FieldIssue, type FieldRef } from "./types";
import { instantOf, modeOf, numberOf } from "./values";

export const MAX_DEPTH = 8;
export const MAX_FILTERS = 200;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const OPERATOR_SET: ReadonlySet<string> = new Set(OPERATORS);

/** Which operators each field form accepts. */
function operatorFits(ref: FieldRef, op: string): boolean {
  switch (ref.kind) {
    case "email":
      return STRING_OPS.has(op);
    case "subscribed":
      return op === "equals" || op === "notEquals";
    case "createdAt":
    case "updatedAt":
      return op === "equals" || op === "notEquals" || COMPARE_OPS.has(op) || op === "within" || op === "olderThan";
    case "data":
    case "fact":
      return !EVENT_OPS.has(op) && !SEGMENT_OPS.has(op);
    case "event":
      return EVENT_OPS.has(op);
    case "segment":
      return SEGMENT_OPS.has(op);
  }
}

function valueIssue(ref: FieldRef, op: string, f: Record<string, unknown>, at: string): FieldIssue | null {
  if (VALUELESS.has(op)) return null;
  const v = f.value;
  const issue = (message: string, code = "invalid_type"): FieldIssue => ({ field: `${at}.value`, message, code });
  if (v === undefined || v === null) return issue(`A value is required for operator "${op}"`, "required");
  if (TIMED.has(op)) {
    const n = numberOf(v);
    if (n === null || n < 0) return issue("Expected a number of units (0 or more)");
    return null;
  }
  switch (ref.kind) {
    case "email":
      return typeof v === "string" ? null : issue("Expected a string");
    case "subscribed":
      return typeof v === "boolean" ? null : issue("Expected a boolean");
    case "createdAt":
    case "updatedAt":
      return instantOf(v) === null ? issue("Expected a date-time (ISO 8601)", "invalid_date") : null;
  }
  if (STRING_OPS.has(op) && op !== "equals" && op !== "notEquals") {
    return typeof v === "string" || typeof v === "number" ? null : issue("Expected a string");
  }
  if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") return issue("Expected a string, number or boolean");
  if (typeof v === "number" && !Number.isFinite(v)) return issue("Expected a finite number");
  if (COMPARE_OPS.has(op) && modeOf(v) === "boolean") return issue("Expected a number, date or string to compare with");
  return null;
}

function validateFilter(f: unknown, at: string, mode: Mode, out: FieldIssue[]) {
  if (!isObject(f)) {
    out.push({ field: at, message: "A filter must be an object { field, operator, value, unit? }", code: "invalid_type" });
    return;
  }
  if (typeof f.field !== "string" || !f.field) {
    out.push({ field: `${at}.field`, message: "Required: a field such as email, subscribed, createdAt, data.<name>, event.<name>", code: "required" });
    return;
  }
  if (typeof f.operator !== "string" || !OPERATOR_SET.has(f.operator)) {
    out.push({
      field: `${at}.operator`,
      message: `Unknown operator; expected one of: ${OPERATORS.join(", ")}`,
      code: f.operator === undefined ? "required" : "invalid_enum_value",
    });
    return;
  }
  const op = f.operator;
  const ref = parseField(f.field, op, mode);
  if (!ref) {
    out.push({
      field: `${at}.field`,
      message:
        mode === "workflow"
          ? "Unknown field; expected email, subscribed, createdAt, updatedAt, data.<name>, event.<name>, email.<sent|delivery|open|click|bounce|complaint>, segment.<id>, workflow.<key>"
          : "Unknown field; expected email, subscribed, createdAt, updatedAt, data.<name>, event.<name>, email.<sent|delivery|open|click|bounce|complaint>, segment.<id>",
      code: "invalid_field",
    });
    return;
  }
  if (!operatorFits(ref, op)) {
    out.push({ field: `${at}.operator`, message: `Operator "${op}" does not apply to field "${f.field}"`, code: "invalid_operator" });
    return;
  }
  if (TIMED.has(op)) {
    if (f.unit === undefined || f.unit === null) {
      out.push({ field: `${at}.unit`, message: `A unit is required for operator "${op}": ${Object.keys(UNITS).join(", ")}`, code: "required" });
    } else if (typeof f.unit !== "string" || !Object.hasOwn(UNITS, f.unit)) {
      out.push({ field: `${at}.unit`, message: `Unknown unit; expected one of: ${Object.keys(UNITS).join(", ")}`, code: "invalid_enum_value" });
    }
  } else if (f.unit !== undefined && f.unit !== null && (typeof f.unit !== "string" || !Object.hasOwn(UNITS, f.unit))) {
    out.push({ field: `${at}.unit`, message: `Unknown unit; expected one of: ${Object.keys(UNITS).join(", ")}`, code: "invalid_enum_value" });
  }
  const vi = valueIssue(ref, op, f, at);
  if (vi) out.push(vi);
}

function validateTree(tree: unknown, at: string, mode: Mode, depth: number, out: FieldIssue[], count: { n: number }) {
  if (!isObject(tree)) {
    out.push({ field: at, message: "Expected a condition tree { logic, groups: [{ filters, conditions? }] }", code: "invalid_type" });
    return;
  }
  if (depth > MAX_DEPTH) {
    out.push({ field: at, message: `Conditions may nest at most ${MAX_DEPTH} levels`, code: "too_deep" });
    return;
  }
  if (typeof tree.logic !== "string" || !["AND", "OR"].includes(tree.logic.toUpperCase())) {
    out.push({ field: `${at}.logic`, message: "Expected AND or OR", code: tree.logic === undefined ? "required" : "invalid_enum_value" });
  }
  if (!Array.isArray(tree.groups)) {
    out.push({ field: `${at}.groups`, message: "Expected an array of groups", code: tree.groups === undefined ? "required" : "invalid_type" });
    return;
  }
  tree.groups.forEach((g, i) => {
    const gat = `${at}.groups[${i}]`;
    if (!isObject(g)) {
      out.push({ field: gat, message: "A group must be an object { filters, conditions? }", code: "invalid_type" });
      return;
    }
    const filters = g.filters ?? [];
    if (!Array.isArray(filters)) {
      out.push({ field: `${gat}.filters`, message: "Expected an array of filters", code: "invalid_type" });
    } else {
      filters.forEach((f, j) => {
        if (++count.n > MAX_FILTERS) {
          if (count.n === MAX_FILTERS + 1) out.push({ field: `${gat}.filters[${j}]`, message: `At most ${MAX_FILTERS} filters per condition`, code: "too_big" });
          return;
        }
        validateFilter(f, `${gat}.filters[${j}]`, mode, out);
      });
    }
    if (g.conditions !== undefined && g.conditions !== null) validateTree(g.conditions, `${gat}.conditions`, mode, depth + 1, out, count);
  });
}

export function validateCondition(tree: unknown, opts: { path?: string; mode?: Mode } = {}): FieldIssue[] {
  const out: FieldIssue[] = [];
  validateTree(tree, opts.path ?? "condition", opts.mode ?? "segment", 1, out, { n: 0 });
  return out.slice(0, 50);
}

/** A validated tree with its logic normalised to upper case and null `conditions` dropped. */
export function normalizeCondition(tree: unknown): import("./types").ConditionTree {
  const t = tree as { logic: string; groups: Array<{ filters?: unknown[]; conditions?: unknown }> };
  return {
    logic: t.logic.toUpperCase() as "AND" | "OR",
    groups: t.groups.map((g) => {
      const out: import("./types").ConditionGroup = { filters: ((g.filters ?? []) as import("./types").ConditionFilter[]).map((f) => ({ ...f })) };
      if (g.conditions !== undefined && g.conditions !== null) out.conditions = normalizeCondition(g.conditions);
      return out;
    }),
  };
}

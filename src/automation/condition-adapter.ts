/**
 * CONDITION steps on top of the one condition compiler (src/audience/conditions): a step config
 * is a condition tree `{ logic, groups }` or a single filter `{ field, operator, value, unit? }`,
 * which is wrapped into a one-filter tree.
 */
import type { FieldError } from "../http/errors";

export type ConditionTree = { logic: string; groups: unknown[] };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The tree of a CONDITION config (a bare filter is wrapped). */
export function treeOf(config: Record<string, unknown>): ConditionTree {
  if ("groups" in config || "logic" in config) return config as ConditionTree;
  const filter: Record<string, unknown> = { field: config.field, operator: config.operator };
  if ("value" in config) filter.value = config.value;
  if ("unit" in config) filter.unit = config.unit;
  return { logic: "AND", groups: [{ filters: [filter] }] };
}

/** Validates a CONDITION config; errors name paths under `config`. */
export function conditionErrors(c: Record<string, unknown>): { config: Record<string, unknown>; errors: FieldError[] } {
  const isTree = "groups" in c || "logic" in c;
  if (!isTree) {
    const errors: FieldError[] = [];
    if (typeof c.field !== "string" || !c.field) errors.push({ field: "config.field", message: "Required: a condition tree { logic, groups } or a filter { field, operator, value }", code: "invalid_type", received: c.field === undefined ? "undefined" : typeof c.field });
    if (typeof c.operator !== "string" || !c.operator) errors.push({ field: "config.operator", message: "Required", code: "invalid_type", received: c.operator === undefined ? "undefined" : typeof c.operator });
    if (errors.length) return { config: c, errors };
  }
  const tree = treeOf(c);
  const errors = validateTree(tree, isTree);
  const config: Record<string, unknown> = isTree ? { logic: tree.logic, groups: tree.groups } : { field: c.field, operator: c.operator, ...("value" in c ? { value: c.value } : {}), ...("unit" in c ? { unit: c.unit } : {}) };
  return { config, errors };
}

/** Placeholder until the condition compiler lands: shape checks only. */
function validateTree(tree: ConditionTree, isTree: boolean): FieldError[] {
  const errors: FieldError[] = [];
  if (!isTree) return errors;
  if (tree.logic !== "AND" && tree.logic !== "OR") errors.push({ field: "config.logic", message: "Expected one of: AND, OR", code: "invalid_enum_value", received: String(tree.logic) });
  if (!Array.isArray(tree.groups)) errors.push({ field: "config.groups", message: "groups must be an array", code: "invalid_type" });
  else tree.groups.forEach((g, i) => {
    if (!isObject(g)) errors.push({ field: `config.groups[${i}]`, message: "A group is an object", code: "invalid_type" });
  });
  return errors;
}

export interface MatchOptions {
  projectId: string;
  contactId: string;
  now: number;
  facts: { event: Record<string, unknown>; workflow: Record<string, unknown> };
}

/** Whether the contact matches the CONDITION config (placeholder evaluator until the compiler lands). */
export async function contactMatchesTree(db: import("./store").Db, config: Record<string, unknown>, opts: MatchOptions): Promise<boolean> {
  const { getContactRow } = await import("./store");
  const row = await getContactRow(db, opts.projectId, opts.contactId);
  if (!row) return false;
  const data = JSON.parse(row.data) as Record<string, unknown>;
  const valueOf = (field: string): unknown => {
    if (field === "email") return row.email;
    if (field === "subscribed") return row.subscribed === 1;
    const [head, ...rest] = field.split(".");
    const path = rest.join(".");
    const src = head === "data" ? data : head === "event" ? opts.facts.event : head === "workflow" ? opts.facts.workflow : undefined;
    return src ? src[path] : undefined;
  };
  const test = (f: Record<string, unknown>): boolean => {
    const v = valueOf(String(f.field));
    const w = f.value;
    switch (f.operator) {
      case "equals": return v === w;
      case "notEquals": return v !== w;
      case "exists": return v !== undefined && v !== null;
      case "notExists": return v === undefined || v === null;
      case "contains": return typeof v === "string" && typeof w === "string" && v.includes(w);
      case "greaterThan": return typeof v === "number" && typeof w === "number" && v > w;
      case "lessThan": return typeof v === "number" && typeof w === "number" && v < w;
      default: return false;
    }
  };
  const evalTree = (t: ConditionTree): boolean => {
    const groups = (t.groups ?? []) as Array<{ filters?: Record<string, unknown>[]; conditions?: ConditionTree }>;
    if (!groups.length) return true;
    const results = groups.map((g) => (g.filters ?? []).every(test) && (g.conditions ? evalTree(g.conditions) : true));
    return t.logic === "OR" ? results.some(Boolean) : results.every(Boolean);
  };
  return evalTree(treeOf(config));
}

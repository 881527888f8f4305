/**
 * CONDITION steps on top of the one condition compiler (src/audience/conditions): a step config
 * is a condition tree `{ logic, groups }` or a single filter `{ field, operator, value, unit? }`,
 * which is wrapped into a one-filter tree.
 */
import {
  conditionReferences,
  contactMatches,
  evaluateInMemory,
  evaluateKnown,
  normalizeCondition,
  validateCondition,
  type ConditionTree as Tree,
} from "../../../audience/conditions";
import type { FieldError } from "../../../http/errors";
import type { Db } from "./store";

export type ConditionTree = { logic: string; groups: unknown[] };


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
  // A bare filter's issues are named at config.<key> (the filter is the config itself).
  const errors: FieldError[] = validateCondition(tree, { path: "config", mode: "workflow" }).map((e) => ({
    ...e,
    field: isTree ? e.field : e.field.replace(/^config\.groups\[0\]\.filters\[0\]/, "config"),
  }));
  const config: Record<string, unknown> = isTree ? { logic: tree.logic, groups: tree.groups } : { field: c.field, operator: c.operator, ...("value" in c ? { value: c.value } : {}), ...("unit" in c ? { unit: c.unit } : {}) };
  return { config, errors };
}

export interface MatchOptions {
  projectId: string;
  contactId: string;
  now: number;
  facts: { event: Record<string, unknown>; workflow: Record<string, unknown> };
}

/** The contact row a CONDITION step already holds (evaluated in memory when the tree allows). */
export interface LoadedContact {
  id: string;
  email: string;
  subscribed: number;
  data: string | null;
  created_at: number;
  updated_at: number;
}

/** A config's normalized tree, and what it reads besides the contact and the facts. */
const prepared = new WeakMap<Record<string, unknown>, { tree: Tree; events: boolean; segments: boolean }>();
function prepare(config: Record<string, unknown>) {
  let p = prepared.get(config);
  if (!p) {
    const tree = normalizeCondition(treeOf(config)) as Tree;
    const refs = conditionReferences(tree, "workflow");
    prepared.set(config, (p = { tree, events: refs.events.length > 0, segments: refs.segments.length > 0 }));
  }
  return p;
}

/**
 * Whether the contact matches the CONDITION config: the one condition compiler, for one contact. A
 * tree over the contact's own fields and the facts is evaluated in memory on the loaded row (the same
 * semantics, property-tested against the SQL); so is one over events whose other filters decide
 * alone (evaluateKnown, three-valued). The rest (events that decide, segments) is a query.
 */
export async function contactMatchesTree(db: Db, config: Record<string, unknown>, opts: MatchOptions, contact?: LoadedContact): Promise<boolean> {
  const { tree, events, segments } = prepare(config);
  if (contact && !segments) {
    let data: Record<string, unknown> = {};
    try {
      data = contact.data ? (JSON.parse(contact.data) as Record<string, unknown>) : {};
    } catch {}
    const mem = { id: contact.id, email: contact.email, subscribed: contact.subscribed === 1, data, createdAt: contact.created_at, updatedAt: contact.updated_at };
    const opt = { now: opts.now, memberships: [], facts: opts.facts, mode: "workflow" as const };
    if (!events) return evaluateInMemory(tree, mem, { ...opt, events: [] });
    const known = evaluateKnown(tree, mem, opt);
    if (known !== undefined) return known;
  }
  return contactMatches(db, tree, { projectId: opts.projectId, contactId: opts.contactId, now: opts.now, facts: opts.facts, mode: "workflow" });
}

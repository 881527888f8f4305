/**
 * Pure graph rules: what follows a step (decideNext), which transitions may be added
 * (transitionErrors: branches, one way out, nothing out of EXIT, no self-links, no cycles) and how
 * a splice delete reconnects a step's predecessors to its successor (splicePlan).
 */
import type { FieldError } from "../../../http/errors";
import { BRANCHES, type Branch, type Graph, type GraphStep, type GraphTransition, type StepOutcome } from "./types";

/**
 * The step that follows `stepId` after `outcome`, or null when the execution stops there: the end
 * of the graph (no transition for the branch) and the non-`next` outcomes (wait, exit, fail, retry)
 * do not move.
 */
export function decideNext(graph: Pick<Graph, "transitions">, stepId: string, outcome: StepOutcome): string | null {
  if (outcome.kind !== "next") return null;
  const out = graph.transitions.filter((t) => t.fromStepId === stepId);
  const branch = outcome.branch ?? null;
  const t = branch === null ? out.find((x) => x.branch === null) : out.find((x) => x.branch === branch);
  return t?.toStepId ?? null;
}

/** Whether `to` can reach `from` through existing transitions (adding from -> to would close a cycle). */
export function reaches(graph: Graph, start: string, target: string): boolean {
  const seen = new Set<string>();
  const stack = [start];
  while (stack.length) {
    const s = stack.pop()!;
    if (s === target) return true;
    if (seen.has(s)) continue;
    seen.add(s);
    for (const t of graph.transitions) if (t.fromStepId === s) stack.push(t.toStepId);
  }
  return false;
}

export interface NewTransition {
  fromStepId: string;
  toStepId: string;
  branch?: string | null;
}

/** Every reason the transition cannot be added (empty when it can). */
export function transitionErrors(graph: Graph, t: NewTransition): FieldError[] {
  const from = graph.steps.find((s) => s.id === t.fromStepId);
  const to = graph.steps.find((s) => s.id === t.toStepId);
  const errors: FieldError[] = [];
  if (!from) errors.push({ field: "fromStepId", message: "No such step in this workflow", code: "not_found", received: t.fromStepId });
  if (!to) errors.push({ field: "toStepId", message: "No such step in this workflow", code: "not_found", received: t.toStepId });
  if (!from || !to) return errors;
  if (from.id === to.id) return [{ field: "toStepId", message: "A step cannot lead to itself", code: "self_link", received: t.toStepId }];
  if (from.type === "EXIT") return [{ field: "fromStepId", message: "An EXIT step ends the execution: nothing can follow it", code: "exit_step" }];
  const allowed = BRANCHES[from.type];
  const branch = t.branch ?? null;
  const out = graph.transitions.filter((x) => x.fromStepId === from.id);
  if (allowed.length) {
    if (branch === null || !allowed.includes(branch as Branch)) {
      errors.push({
        field: "branch",
        message: `A transition out of a ${from.type} step needs branch ${allowed.map((b) => `"${b}"`).join(" or ")}`,
        code: "invalid_branch",
        received: branch ?? "undefined",
      });
    } else if (out.some((x) => x.branch === branch)) {
      errors.push({ field: "branch", message: `The step already has a "${branch}" transition`, code: "duplicate_branch", received: branch });
    }
  } else {
    if (branch !== null) {
      errors.push({ field: "branch", message: `Only CONDITION (yes/no) and WAIT_FOR_EVENT (event/timeout) transitions carry a branch`, code: "invalid_branch", received: branch });
    } else if (out.length) {
      errors.push({ field: "fromStepId", message: `A ${from.type} step has at most one outgoing transition`, code: "too_many_transitions" });
    }
  }
  if (errors.length) return errors;
  if (reaches(graph, to.id, from.id)) {
    return [{ field: "toStepId", message: "The transition would create a cycle", code: "cycle", received: t.toStepId }];
  }
  return [];
}

export interface SplicePlan {
  /** Transitions to delete (every one touching the step). */
  remove: string[];
  /** Transitions to add: each predecessor (with its branch) to the step's successor. */
  add: { fromStepId: string; toStepId: string; branch: Branch | null }[];
  /** The workflow's new entry step when the deleted step was the entry (undefined: unchanged). */
  entry?: string | null;
}

/**
 * Deleting `step`: its transitions go; with splice, each predecessor is connected to the step's
 * single successor. Null when splicing is impossible (more than one successor).
 */
export function splicePlan(graph: Graph, step: GraphStep, splice: boolean, entryStepId: string | null): SplicePlan | null {
  const incoming = graph.transitions.filter((t) => t.toStepId === step.id);
  const outgoing = graph.transitions.filter((t) => t.fromStepId === step.id);
  const remove = [...incoming, ...outgoing].map((t) => t.id);
  if (!splice) return { remove, add: [], entry: entryStepId === step.id ? null : undefined };
  const successors = [...new Set(outgoing.map((t) => t.toStepId))];
  if (successors.length > 1) return null;
  const succ = successors[0] ?? null;
  const add = succ ? incoming.map((t: GraphTransition) => ({ fromStepId: t.fromStepId, toStepId: succ, branch: t.branch })) : [];
  return { remove, add, entry: entryStepId === step.id ? succ : undefined };
}

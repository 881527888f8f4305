/**
 * The workflow engine's vocabulary: step types, the graph as the engine sees it, and the typed
 * outcome every step returns (like Postal's SendResult: a value, never an exception).
 */
export const STEP_TYPES = ["SEND_EMAIL", "DELAY", "WAIT_FOR_EVENT", "CONDITION", "WEBHOOK", "UPDATE_CONTACT", "EXIT"] as const;
export type StepType = (typeof STEP_TYPES)[number];

export const EXECUTION_STATUSES = ["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
export const ACTIVE_STATUSES: readonly ExecutionStatus[] = ["RUNNING", "WAITING"];

export type StepLogStatus = "RUNNING" | "WAITING" | "COMPLETED" | "SKIPPED" | "FAILED";

export type Branch = "yes" | "no" | "event" | "timeout";

/** Branches a step type's outgoing transitions carry (empty: one plain transition at most). */
export const BRANCHES: Record<StepType, readonly Branch[]> = {
  SEND_EMAIL: [],
  DELAY: [],
  WAIT_FOR_EVENT: ["event", "timeout"],
  CONDITION: ["yes", "no"],
  WEBHOOK: [],
  UPDATE_CONTACT: [],
  EXIT: [],
};

export interface GraphStep {
  id: string;
  type: StepType;
}

export interface GraphTransition {
  id: string;
  fromStepId: string;
  toStepId: string;
  branch: Branch | null;
}

export interface Graph {
  steps: GraphStep[];
  transitions: GraphTransition[];
}

/** What a step decided. `output` is logged on the step row; `skipped` logs the step as SKIPPED. */
export type StepOutcome =
  | { kind: "next"; branch?: Branch; output?: unknown; skipped?: boolean }
  | { kind: "wait"; until: number; output?: unknown }
  | { kind: "waitEvent"; eventName: string; timeoutAt: number | null; output?: unknown }
  | { kind: "exit"; reason: string; output?: unknown }
  | { kind: "fail"; error: string; output?: unknown }
  /** WEBHOOK: try the same step again at `at` (attempt counter in output). */
  | { kind: "retry"; at: number; error: string; output?: unknown };

export const next = (branch?: Branch, output?: unknown, skipped = false): StepOutcome => ({ kind: "next", branch, output, skipped });
export const wait = (until: number, output?: unknown): StepOutcome => ({ kind: "wait", until, output });
export const waitEvent = (eventName: string, timeoutAt: number | null, output?: unknown): StepOutcome => ({ kind: "waitEvent", eventName, timeoutAt, output });
export const exit = (reason: string, output?: unknown): StepOutcome => ({ kind: "exit", reason, output });
export const fail = (error: string, output?: unknown): StepOutcome => ({ kind: "fail", error, output });

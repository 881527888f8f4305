/**
 * The engine's SQL (Kysely): executions, their step log, and the workflow graph an execution
 * walks. Every write takes the caller's transaction.
 */
import type { Q } from "../../../db/raw";
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { DB } from "../../../db";
import { dialect } from "../../../db/dialect";
import type { WorkflowExecutionsTable, WorkflowStepsTable, WorkflowsTable } from "../../../db/tables/workflows";
import type { Branch, ExecutionStatus, GraphTransition, StepLogStatus, StepType } from "./types";

export type Db = Kysely<DB> | Transaction<DB>;
export type ExecutionRow = Selectable<WorkflowExecutionsTable>;
export type WorkflowRow = Selectable<WorkflowsTable>;
export type StepRow = Selectable<WorkflowStepsTable>;

export interface LoadedStep {
  id: string;
  type: StepType;
  name: string;
  config: Record<string, unknown>;
}

/** A workflow with its graph, as the executor walks it (cached per workflow version). */
export interface LoadedWorkflow {
  id: string;
  projectId: string;
  name: string;
  updatedAt: number;
  steps: Map<string, LoadedStep>;
  transitions: GraphTransition[];
}

export const getExecution = (db: Db, id: string) => db.selectFrom("workflow_executions").selectAll().where("id", "=", id).executeTakeFirst();

export const workflowVersion = (db: Db, id: string) =>
  db.selectFrom("workflows").select(["id", "project_id", "name", "updated_at"]).where("id", "=", id).executeTakeFirst();

export async function loadGraph(db: Db, workflowId: string) {
  const [steps, transitions] = await Promise.all([
    db.selectFrom("workflow_steps").selectAll().where("workflow_id", "=", workflowId).orderBy("created_at").orderBy("id").execute(),
    db.selectFrom("workflow_transitions").selectAll().where("workflow_id", "=", workflowId).orderBy("created_at").orderBy("id").execute(),
  ]);
  return {
    steps: steps.map((s) => ({ id: s.id, type: s.type as StepType, name: s.name, config: JSON.parse(s.config) as Record<string, unknown> })),
    transitions: transitions.map((t) => ({ id: t.id, fromStepId: t.from_step_id, toStepId: t.to_step_id, branch: (t.branch as Branch | null) ?? null })),
  };
}

/** claimTurn that also returns the execution row (after the bump), or undefined. */
export const claimTurnRow = (trx: Db, id: string, seq: number, now: number) =>
  trx
    .updateTable("workflow_executions")
    .set({ step_seq: seq + 1, updated_at: now })
    .where("id", "=", id)
    .where("step_seq", "=", seq)
    .where("status", "in", ["RUNNING", "WAITING"])
    .returningAll()
    .executeTakeFirst();

/** Takes the execution's turn: bumps step_seq from `seq` while it is active. False when someone else moved it. */
export async function claimTurn(trx: Db, id: string, seq: number, now: number): Promise<boolean> {
  const r = await trx
    .updateTable("workflow_executions")
    .set({ step_seq: seq + 1, updated_at: now })
    .where("id", "=", id)
    .where("step_seq", "=", seq)
    .where("status", "in", ["RUNNING", "WAITING"])
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export interface ExecutionPatch {
  status?: ExecutionStatus;
  current_step_id?: string | null;
  step_seq?: number;
  exit_reason?: string | null;
  wait_event?: string | null;
  wait_since?: number | null;
  wait_seq?: number | null;
  resume_at?: number | null;
  job_id?: string | null;
  completed_at?: number | null;
}

export async function updateExecution(trx: Db, id: string, patch: ExecutionPatch, now: number): Promise<void> {
  await trx.updateTable("workflow_executions").set({ ...patch, updated_at: now }).where("id", "=", id).execute();
}

export interface StepLogInput {
  executionId: string;
  stepId: string;
  type: string;
  /** Order within the execution (step_seq * 1000 + position in the turn). */
  ord: number;
  status: StepLogStatus;
  startedAt: number;
  completedAt: number | null;
  output?: unknown;
  error?: string | null;
}

const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));

/** The open (RUNNING or WAITING) log row of a step, if the step was entered before. */
export const openStepLog = (db: Db, executionId: string, stepId: string) =>
  db
    .selectFrom("workflow_execution_steps")
    .select(["id", "started_at", "output"])
    .where("execution_id", "=", executionId)
    .where("step_id", "=", stepId)
    .where("status", "in", ["RUNNING", "WAITING"])
    .orderBy("id", "desc")
    .executeTakeFirst();

/**
 * Writes a step's log row: with `reopen` (a resumed wait or retry) the step's open row is updated,
 * otherwise (or when there is none) a row is inserted.
 */
export async function writeStepLog(trx: Db, reopen: boolean, now: number, log: StepLogInput): Promise<void> {
  if (reopen) {
    const r = await trx
      .updateTable("workflow_execution_steps")
      .set({ status: log.status, completed_at: log.completedAt, output: json(log.output), error: log.error ?? null })
      .where("execution_id", "=", log.executionId)
      .where("step_id", "=", log.stepId)
      .where("status", "in", ["RUNNING", "WAITING"])
      .executeTakeFirst();
    if (Number(r.numUpdatedRows)) return;
  }
  await trx
    .insertInto("workflow_execution_steps")
    .values({
      id: Bun.randomUUIDv7(undefined, now),
      execution_id: log.executionId,
      step_id: log.stepId,
      type: log.type,
      ord: log.ord,
      status: log.status,
      started_at: log.startedAt,
      completed_at: log.completedAt,
      output: json(log.output),
      error: log.error ?? null,
    })
    .execute();
}

/** Closes the open log rows of an execution (cancel). */
export async function closeOpenLogs(trx: Db, executionId: string, now: number, error: string): Promise<void> {
  await trx
    .updateTable("workflow_execution_steps")
    .set({ status: "FAILED", completed_at: now, error })
    .where("execution_id", "=", executionId)
    .where("status", "in", ["RUNNING", "WAITING"])
    .execute();
}

/** Marks a waiting job as cancelled (a resume that no longer applies), inside the caller's transaction. */
export async function dropJob(trx: Db, jobId: string | null, now: number): Promise<void> {
  if (!jobId) return;
  await trx.updateTable("jobs").set({ state: "failed", error: "cancelled", finished_at: now, updated_at: now }).where("id", "=", jobId).where("state", "=", "waiting").execute();
}

export const getTemplateRow = (db: Db, projectId: string, id: string) =>
  db.selectFrom("templates").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export const getContactRow = (db: Db, projectId: string, id: string) =>
  db.selectFrom("contacts").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export async function writeContact(trx: Db, id: string, set: { data?: string; subscribed?: number }, now: number): Promise<void> {
  await trx.updateTable("contacts").set({ ...set, ...(set.subscribed === 1 ? { pending_confirmation: 0 } : {}), updated_at: now }).where("id", "=", id).execute();
}

/** The last events.seq: a wait that begins now is resumed only by events after it. */
export async function currentEventSeq(db: Db): Promise<number> {
  const r = await db.selectFrom("events").select((eb) => eb.fn.max("seq").as("max")).executeTakeFirst();
  return Number(r?.max ?? 0);
}

/**
 * Due, waiting jobs of one type in run_at order (read inside the batch's transaction). On PostgreSQL
 * the rows are locked (SKIP LOCKED) until the batch commits: another instance's batch takes other
 * rows, and a job loop's claim of one of them waits and then finds it completed (read without the
 * lock, a job could be run by two batches, or completed by the batch while a peer's loop held it).
 */
export const dueStepJobs = (trx: Db, type: string, now: number, limit: number) => {
  const due = trx.selectFrom("jobs").select(["id", "payload"]).where("state", "=", "waiting").where("run_at", "<=", now).where("type", "=", type).orderBy("run_at").limit(limit);
  return (dialect().engine === "postgres" ? due.forUpdate().skipLocked() : due).execute();
};

/**
 * Executions the trigger consumer started without a job (RUNNING, no job, step_seq 0), oldest first.
 * The predicate is written out as migration 019's partial index states it, so the index serves it.
 */
export const unstartedExecutions = (trx: Db, limit: number) =>
  trx
    .selectFrom("workflow_executions")
    .select("id")
    .where(sql<boolean>`status = 'RUNNING' AND job_id IS NULL AND step_seq = 0`)
    .orderBy("id")
    .limit(limit)
    .execute();

/** Marks jobs run by a batch completed, in the batch's transaction. */
export async function completeJobs(trx: Db, ids: string[], now: number): Promise<void> {
  for (let i = 0; i < ids.length; i += 500) {
    await trx
      .updateTable("jobs")
      .set((eb) => ({ state: "completed", progress: 100, finished_at: now, updated_at: now, lease_until: null, locked_by: null, attempts: eb("attempts", "+", 1) }))
      .where("id", "in", ids.slice(i, i + 500))
      .execute();
  }
}

/** Loads the contacts of these executions into the batch memo (`contact:<id>`). */
export async function preloadContacts(trx: Db, executionIds: string[], memo: Map<string, unknown>): Promise<void> {
  for (let i = 0; i < executionIds.length; i += 500) {
    const rows = await trx
      .selectFrom("workflow_executions as e")
      .innerJoin("contacts as c", "c.id", "e.contact_id")
      .selectAll("c")
      .where("e.id", "in", executionIds.slice(i, i + 500))
      .execute();
    for (const c of rows) memo.set(`contact:${c.id}`, c);
  }
}

/** The project's webhook signing secret; projects from before migration 010 get one on first use. */
export async function projectWebhookSecret(db: Db, projectId: string, generate: () => string): Promise<string | null> {
  const row = await db.selectFrom("projects").select("webhook_secret").where("id", "=", projectId).executeTakeFirst();
  if (!row) return null;
  if (row.webhook_secret) return row.webhook_secret;
  const secret = generate();
  await db.updateTable("projects").set({ webhook_secret: secret }).where("id", "=", projectId).where("webhook_secret", "is", null).execute();
  const again = await db.selectFrom("projects").select("webhook_secret").where("id", "=", projectId).executeTakeFirst();
  return again?.webhook_secret ?? secret;
}

/** The Kysely form of insertExecutionsRaw (the portable sibling). */
export async function insertExecutionRows(trx: Db, rows: ExecutionRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 100) await trx.insertInto("workflow_executions").values(rows.slice(i, i + 100)).execute();
}

const EXECUTION_COLUMNS = [
  "id", "project_id", "workflow_id", "contact_id", "status", "current_step_id", "step_seq", "context", "trigger_event", "exit_reason",
  "wait_event", "wait_since", "wait_seq", "resume_at", "job_id", "started_at", "completed_at", "updated_at",
] as const satisfies readonly (keyof ExecutionRow)[];
const INSERT_EXECUTION = `INSERT INTO workflow_executions (${EXECUTION_COLUMNS.join(", ")}) VALUES (${EXECUTION_COLUMNS.map(() => "?").join(", ")})`;

/**
 * insertExecutionRows as one prepared statement per row, on the connection of the caller's open
 * transaction (the event feed's): raw because every triggered start passes here (scripts/bench/workflows.ts).
 */
export async function insertExecutionsRaw(q: Q, rows: ExecutionRow[]): Promise<void> {
  for (const r of rows) await q.run(INSERT_EXECUTION, EXECUTION_COLUMNS.map((k) => r[k] ?? null));
}

/**
 * Which of `contactIds` entered the workflow before: ever (`once`, no re-entry) or in an execution
 * still active. One look-up per workflow and feed round (the contacts go in as one JSON array), raw on
 * the feed transaction's connection: every triggered start passes here (scripts/bench/workflows.ts).
 */
export async function enteredAmongRaw(q: Q, workflowId: string, contactIds: readonly string[], once: boolean): Promise<Set<string>> {
  if (!contactIds.length) return new Set();
  const sql = once
    ? "SELECT DISTINCT contact_id FROM workflow_executions WHERE workflow_id = ? AND contact_id IN (SELECT value FROM json_each(?))"
    : "SELECT DISTINCT contact_id FROM workflow_executions WHERE workflow_id = ? AND contact_id IN (SELECT value FROM json_each(?)) AND status IN ('RUNNING', 'WAITING')";
  return new Set((await q.all<{ contact_id: string }>(sql, [workflowId, JSON.stringify(contactIds)])).map((r) => r.contact_id));
}

/**
 * The executor: advances ONE execution per job. A job carries the execution's step_seq; the
 * transaction that runs a step first takes the turn (compare-and-set on step_seq), then writes the
 * step's log row, its effects (an email row, a contact update) and the next job together, so a job
 * re-run after kill -9 finds the turn taken and does nothing: no step runs twice, no email is
 * written twice. Steps that only touch the database are chained in the same transaction; DELAY,
 * WAIT_FOR_EVENT and WEBHOOK (network, outside any transaction) end the chain with a job.
 */
import { qOf } from "../../../db/raw";
import type { Transaction } from "kysely";
import { contactsChangedMany } from "../../../audience/changes";
import { notifyEvents } from "../../../audience/events";
import type { AppContext } from "../../../context";
import type { DB } from "../../../db";
import { Mutex } from "../../../db/bun-sqlite-dialect";
import type { JobRunContext } from "../../../jobs/queue";
import { wakeOutbox } from "../../../mail/outbox/outbox";
import { decideNext } from "./graph";
import { runCondition } from "./steps/condition";
import { runDelay } from "./steps/delay";
import type { StepEnv, StepRunner } from "./steps/env";
import { runExit } from "./steps/exit";
import { runSendEmail } from "./steps/send-email";
import { runUpdateContact } from "./steps/update-contact";
import { runWaitForEvent } from "./steps/wait-for-event";
import { performWebhook } from "./steps/webhook";
import {
  claimTurn,
  currentEventSeq,
  getContactRow,
  claimTurnRow,
  completeJobs,
  dueStepJobs,
  unstartedExecutions,
  preloadContacts,
  getExecution,
  insertExecutionRows,
  insertExecutionsRaw,
  loadGraph,
  openStepLog,
  updateExecution,
  workflowVersion,
  writeStepLog,
  type Db,
  type ExecutionRow,
  type LoadedWorkflow,
} from "./store";
import { fail, next, type StepOutcome, type StepType } from "./types";

export const STEP_JOB = "workflow.step";
/** Walks the executions the trigger consumer started without a job of their own (enqueued with this dedupe key). */
export const STARTS_JOB = "workflow.starts";
/** Steps run in one transaction before the chain hands over to a new job. */
const MAX_CHAIN = 50;
const MAX_JOB_ATTEMPTS = 5;

export type Resume = "delay" | "timeout" | "event" | "retry";

export interface StepJobPayload {
  executionId: string;
  seq: number;
  resume?: Resume;
  /** The awaited event (resume "event"). */
  event?: { id: string; name: string; data: Record<string, unknown> };
}

const RUNNERS: Record<Exclude<StepType, "WEBHOOK">, StepRunner> = {
  SEND_EMAIL: runSendEmail,
  DELAY: runDelay,
  WAIT_FOR_EVENT: runWaitForEvent,
  CONDITION: runCondition,
  UPDATE_CONTACT: runUpdateContact,
  EXIT: runExit,
};

// ---- workflow graphs, cached per version (every structural edit bumps workflows.updated_at) ----

/** The workflow engine's per-instance state: the graph cache, the turn gate, the batch runners going. */
export class WorkflowEngineState {
  /** workflowId -> its graph at a version (every structural edit bumps workflows.updated_at). */
  readonly graphs = new Map<string, LoadedWorkflow>();
  readonly gate = new Mutex();
  /** The sources with a batch runner going (`again`: another run asked for one more look). */
  readonly batching = new Map<string, { again: boolean }>();
  readonly batchSizes = new Map<string, number>();
}

declare module "../../../context" {
  interface Services {
    workflowEngine: WorkflowEngineState;
  }
}

export async function loadWorkflow(ctx: AppContext, db: Db, workflowId: string, memo?: Map<string, unknown>): Promise<LoadedWorkflow | null> {
  // Inside one batch transaction nothing else changes the graph: check the version once.
  const seen = memo?.get(`wf:${workflowId}`) as LoadedWorkflow | undefined;
  if (seen) return seen;
  const v = await workflowVersion(db, workflowId);
  if (!v) return null;
  const cache = ctx.services.workflowEngine.graphs;
  const hit = cache.get(workflowId);
  if (hit && hit.updatedAt === v.updated_at && hit.name === v.name) {
    memo?.set(`wf:${workflowId}`, hit);
    return hit;
  }
  const g = await loadGraph(db, workflowId);
  const wf: LoadedWorkflow = { id: v.id, projectId: v.project_id, name: v.name, updatedAt: v.updated_at, steps: new Map(g.steps.map((s) => [s.id, s])), transitions: g.transitions };
  if (cache.size > 1000) cache.clear();
  cache.set(workflowId, wf);
  memo?.set(`wf:${workflowId}`, wf);
  return wf;
}

// ---- starting ----------------------------------------------------------------------------------

export interface StartInput {
  projectId: string;
  workflowId: string;
  entryStepId: string | null;
  contactId: string;
  context?: Record<string, unknown> | null;
  event?: { id: string; name: string; data: Record<string, unknown> } | null;
}

/** The row of a new RUNNING execution whose first job is `jobId` (null: the starts job's, see insertExecutionsInFeed). */
export function newExecutionRow(id: string, input: StartInput, jobId: string | null, now: number): ExecutionRow {
  return {
    id,
    project_id: input.projectId,
    workflow_id: input.workflowId,
    contact_id: input.contactId,
    status: "RUNNING",
    current_step_id: input.entryStepId,
    step_seq: 0,
    context: input.context ? JSON.stringify(input.context) : null,
    trigger_event: input.event ? JSON.stringify(input.event) : null,
    exit_reason: null,
    wait_event: null,
    wait_since: null,
    wait_seq: null,
    resume_at: null,
    job_id: jobId,
    started_at: now,
    completed_at: null,
    updated_at: now,
  };
}

/** Inserts a RUNNING execution and its first job inside `trx` (the caller wakes the job loop after commit). */
export async function insertExecution(ctx: AppContext, trx: Transaction<DB>, input: StartInput, now: number): Promise<ExecutionRow> {
  return (await insertExecutions(ctx, trx, [input], now))[0]!;
}

/** Many starts with multi-row inserts (the trigger consumer's batches). */
export async function insertExecutions(ctx: AppContext, trx: Transaction<DB>, inputs: StartInput[], now: number): Promise<ExecutionRow[]> {
  if (!inputs.length) return [];
  const ids = inputs.map(() => Bun.randomUUIDv7(undefined, now));
  const jobIds = await ctx.jobs.enqueueMany(STEP_JOB, ids.map((executionId) => ({ executionId, seq: 0 }) satisfies StepJobPayload), { trx, runAt: now, maxAttempts: MAX_JOB_ATTEMPTS });
  const rows = inputs.map((input, i) => newExecutionRow(ids[i]!, input, jobIds[i]!, now));
  await insertExecutionRows(trx, rows);
  return rows;
}

/**
 * The trigger consumer's starts, with raw prepared statements on the connection of the caller's open
 * transaction (the event feed's, which holds the database until it commits): every triggered start
 * passes here (scripts/bench/workflows.ts). The rows are RUNNING with no job: one STARTS_JOB (the
 * caller enqueues it, deduplicated) walks them, instead of a job row per start written here and
 * completed later. Durable all the same: rows and job commit together, and the job finds every
 * unstarted row (migration 019's index), also after a restart.
 */
export async function insertExecutionsInFeed(ctx: AppContext, trx: Transaction<DB>, inputs: StartInput[], now: number): Promise<ExecutionRow[]> {
  if (!inputs.length) return [];
  const rows = inputs.map((input) => newExecutionRow(Bun.randomUUIDv7(undefined, now), input, null, now));
  await insertExecutionsRaw(qOf(trx, ctx.store.engine), rows);
  return rows;
}

/** Whether the contact may enter: without re-entry never twice; with it, not while one is active. */
export async function mayEnter(db: Db, workflowId: string, contactId: string, allowReentry: boolean): Promise<boolean> {
  let q = db.selectFrom("workflow_executions").select("id").where("workflow_id", "=", workflowId).where("contact_id", "=", contactId);
  if (allowReentry) q = q.where("status", "in", ["RUNNING", "WAITING"]);
  return !(await q.limit(1).executeTakeFirst());
}

// ---- advancing ---------------------------------------------------------------------------------

interface Effects {
  /** Look-ups shared by the turns of one transaction (workflow graphs, templates). */
  memo: Map<string, unknown>;
  wakeOutbox: boolean;
  events: StepEnv["effects"]["events"];
  contacts: StepEnv["effects"]["contacts"];
  wakeJobs: boolean;
}

async function afterCommit(ctx: AppContext, fx: Effects) {
  if (fx.wakeOutbox) wakeOutbox(ctx);
  if (fx.wakeJobs) ctx.jobs.wake();
  if (fx.events.length) await notifyEvents(ctx, fx.events);
  // Tracked segments re-evaluate the contacts UPDATE_CONTACT wrote.
  if (fx.contacts.length) await contactsChangedMany(ctx, fx.contacts);
}

const parse = (s: string | null) => (s ? JSON.parse(s) : null);

/** While the API is busy, the engine pauses this many times as long as each turn took: it takes about 1/(1+n) of the time. */
const BUSY_PAUSE_FACTOR = 19;
const MAX_PAUSE_MS = 250;

/**
 * Every turn of the engine (one execution's, or a batch's) runs through one gate per instance.
 * While the API is busy the gate stays closed after a turn for BUSY_PAUSE_FACTOR times its
 * duration, so however many job slots run workflow turns, together they take about a tenth of the
 * time: requests keep their latency, the engine's due work waits in the queue (durable).
 */
async function engineTurn<T>(ctx: AppContext, fn: () => Promise<T>): Promise<T> {
  const gate = ctx.services.workflowEngine.gate;
  await gate.lock();
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    if (apiBusy(ctx)) await Bun.sleep(Math.min(MAX_PAUSE_MS, (performance.now() - t0) * BUSY_PAUSE_FACTOR));
    gate.unlock();
  }
}
/** Whether the API answered more than 50 requests per second lately (Metrics.apiLoad): the engine then yields most of the time (its due work stays durable in the queue). */
const apiBusy = (ctx: AppContext): boolean => ctx.metrics.apiLoad.busy();

/** The job handler: one turn of one execution, then (when more are due) a batch of others. */
export async function runStepJob(ctx: AppContext, job: JobRunContext<StepJobPayload>): Promise<unknown> {
  const p = job.payload;
  let result: unknown;
  try {
    result = await engineTurn(ctx, () => advance(ctx, p));
  } catch (e) {
    if (job.attempt < MAX_JOB_ATTEMPTS) throw e;
    // The last attempt: the execution fails visibly instead of staying RUNNING forever.
    const now = ctx.clock.now();
    await ctx.db.transaction().execute(async (trx) => {
      if (!(await claimTurn(trx, p.executionId, p.seq, now))) return;
      await updateExecution(trx, p.executionId, { status: "FAILED", exit_reason: String((e as Error)?.message ?? e), completed_at: now, resume_at: null, job_id: null, wait_event: null }, now);
    });
    return { failed: String(e) };
  }
  // Thousands of DELAYs can fall due at the same moment: take the other due step jobs in batches,
  // each batch (the jobs, their steps, their emails, their next jobs) in one short transaction.
  const batched = await runBatches(ctx, DUE_JOBS);
  return batched ? { result, batched } : result;
}

/**
 * The starts job: walks the executions the trigger consumer started without a job, in batches. A
 * batch that fails hands its executions to step jobs of their own (the job loop's retries, then
 * FAILED). More than one run's worth: another starts job follows.
 */
export async function runStartsJob(ctx: AppContext): Promise<unknown> {
  const started = await runBatches(ctx, UNSTARTED, async () => {
    for (;;) {
      const n = await engineTurn(ctx, () => ctx.db.transaction().execute((trx) => handOverUnstarted(ctx, trx, ctx.clock.now())));
      if (!n) break;
      ctx.jobs.wake();
    }
  });
  if (started >= MAX_BATCHED_PER_RUN) await ctx.jobs.enqueue(STARTS_JOB, {}, { dedupeKey: STARTS_JOB });
  return { started };
}

/** At start-up: unstarted executions (none, normally: their job commits with them) get a starts job. */
export async function ensureStartsJob(ctx: AppContext): Promise<void> {
  if ((await unstartedExecutions(ctx.db, 1)).length) await ctx.jobs.enqueue(STARTS_JOB, {}, { dedupeKey: STARTS_JOB });
}

/** Gives unstarted executions a step job each (the path manual starts take). */
async function handOverUnstarted(ctx: AppContext, trx: Transaction<DB>, now: number): Promise<number> {
  const rows = await unstartedExecutions(trx, BATCH);
  for (const r of rows) await handOverStart(ctx, trx, r.id, now);
  return rows.length;
}

async function handOverStart(ctx: AppContext, trx: Transaction<DB>, executionId: string, now: number): Promise<void> {
  const jobId = await ctx.jobs.enqueue(STEP_JOB, { executionId, seq: 0 } satisfies StepJobPayload, { trx, runAt: now, maxAttempts: MAX_JOB_ATTEMPTS });
  await updateExecution(trx, executionId, { job_id: jobId }, now);
}

/**
 * One batch runner per source at a time, yielding between batches, so HTTP writers get the database
 * in turn. Returns how many items the batches advanced. A run that finds another one going asks it
 * for one more look before it ends (work committed after that runner's last look is not left
 * behind: a start has no job of its own to find it later). `onFail`: what to do when a batch rolled back.
 */
async function runBatches(ctx: AppContext, source: BatchSource, onFail?: () => Promise<void>): Promise<number> {
  const running = ctx.services.workflowEngine.batching;
  const other = running.get(source.name);
  if (other) {
    other.again = true;
    return 0;
  }
  const me = { again: false };
  running.set(source.name, me);
  let batched = 0;
  try {
    while (batched < MAX_BATCHED_PER_RUN) {
      let n: number;
      try {
        n = await engineTurn(ctx, () => advanceBatch(ctx, source));
      } catch (e) {
        // One turn failed and rolled its batch back: its items run one by one (and a bad one fails).
        ctx.log.warn("workflow batch failed; its executions run one by one", { source: source.name, error: String((e as Error)?.message ?? e) });
        await onFail?.();
        break;
      }
      if (!n) {
        if (!me.again) break;
        me.again = false;
        continue;
      }
      batched += n;
      await new Promise((r) => setImmediate(r));
    }
  } finally {
    running.delete(source.name);
  }
  return batched;
}

/** Where a batch finds its due turns, and how it settles them in the batch's transaction. */
interface BatchSource {
  name: string;
  /** Up to `limit` due turns, oldest first, each with the key `settle` gets back. */
  take(trx: Transaction<DB>, now: number, limit: number): Promise<{ key: string; payload: StepJobPayload }[]>;
  /** The turns this batch ran. */
  settle(trx: Transaction<DB>, keys: string[], now: number): Promise<void>;
  /** A turn the batch could not run (its step needs the network) goes to the job loop; true when it left the source's due set. */
  leave(ctx: AppContext, trx: Transaction<DB>, key: string, now: number): Promise<boolean>;
}

/** Waiting step jobs that are due: completed with the batch; a WEBHOOK turn's job stays for the job loop. */
const DUE_JOBS: BatchSource = {
  name: "jobs",
  take: async (trx, now, limit) => (await dueStepJobs(trx, STEP_JOB, now, limit)).map((r) => ({ key: r.id, payload: JSON.parse(r.payload) as StepJobPayload })),
  settle: (trx, keys, now) => completeJobs(trx, keys, now),
  leave: async () => false,
};

/** Executions started without a job: the walk moves them out of the index; a WEBHOOK entry step gets a job. */
const UNSTARTED: BatchSource = {
  name: "starts",
  take: async (trx, _now, limit) => (await unstartedExecutions(trx, limit)).map((r) => ({ key: r.id, payload: { executionId: r.id, seq: 0 } })),
  settle: async () => {},
  leave: async (ctx, trx, key, now) => {
    await handOverStart(ctx, trx, key, now);
    return true;
  },
};

/** Due turns looked at per transaction, and the time one batch may hold the database. */
const BATCH = 200;
const BATCH_BUDGET_MS = 20;
/**
 * While the API is busy a batch is one short stretch of the event loop (requests queue behind it):
 * 2 ms (was 4) kept /v1/track's worst p99 at 21-24 ms in scripts/bench/workflows.ts (was 22-26).
 */
const BUSY_BATCH_BUDGET_MS = 2;
const MAX_BATCHED_PER_RUN = 5000;

/**
 * Runs due turns inside ONE transaction that also settles them (a crash rolls back both), until the
 * time budget has passed: short enough not to hold up HTTP writers for long. A turn whose step needs
 * the network (WEBHOOK) is left to the job loop; stale ones settle as no-ops.
 */
async function advanceBatch(ctx: AppContext, source: BatchSource): Promise<number> {
  const fx: Effects = { memo: new Map(), wakeOutbox: false, events: [], contacts: [], wakeJobs: false };
  const sizes = ctx.services.workflowEngine.batchSizes;
  const n = await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock.now();
    const t0 = performance.now();
    // While the API is busy a batch holds the database for less time (requests wait for it).
    const budget = apiBusy(ctx) ? BUSY_BATCH_BUDGET_MS : BATCH_BUDGET_MS;
    // Fetch about as many as fit in the time budget (what the last batch managed, a bit more).
    const due = await source.take(trx, now, sizes.get(source.name) ?? 20);
    if (!due.length) return 0;
    await preloadContacts(trx, due.map((d) => d.payload.executionId), fx.memo);
    const ran: string[] = [];
    let looked = 0;
    let left = 0;
    for (const d of due) {
      if (looked && performance.now() - t0 > budget) break;
      looked++;
      if (await advanceInTrx(ctx, trx, d.payload, now, fx)) ran.push(d.key);
      else if (await source.leave(ctx, trx, d.key, now)) left++;
    }
    await source.settle(trx, ran, now);
    sizes.set(source.name, looked === due.length ? Math.min(BATCH, due.length * 2) : Math.max(5, looked + 5));
    // Progress: what left the due set (a turn left to the job loop in place is still due).
    return ran.length + left;
  });
  await afterCommit(ctx, fx);
  return n;
}

function resumeOutcome(ctx: AppContext, p: StepJobPayload): StepOutcome | undefined {
  if (p.resume === "delay") return next(undefined, { resumedAt: new Date(ctx.clock.now()).toISOString() });
  if (p.resume === "timeout") return next("timeout", { timedOut: true });
  if (p.resume === "event") return next("event", { event: p.event ? { id: p.event.id, name: p.event.name } : null });
  return undefined;
}

/**
 * One turn inside the caller's transaction (batches). False when the turn needs the network (a
 * WEBHOOK to perform): the job is left to the job loop, which runs it on its own.
 */
async function advanceInTrx(ctx: AppContext, trx: Transaction<DB>, p: StepJobPayload, now: number, fx: Effects): Promise<boolean> {
  const ex = await claimTurnRow(trx, p.executionId, p.seq, now);
  if (!ex) return true; // stale: the job completes as a no-op
  const wf = await loadWorkflow(ctx, trx, ex.workflow_id, fx.memo);
  if (!wf) return true;
  const first = resumeOutcome(ctx, p);
  if (!first && ex.current_step_id && wf.steps.get(ex.current_step_id)?.type === "WEBHOOK") {
    await updateExecution(trx, ex.id, { step_seq: p.seq }, ex.updated_at); // give the turn back
    return false;
  }
  await walk(ctx, trx, wf, ex, p.seq + 1, first, p.resume !== undefined, now, fx);
  return true;
}

async function advance(ctx: AppContext, p: StepJobPayload): Promise<unknown> {
  const ex = await getExecution(ctx.db, p.executionId);
  if (!ex || ex.step_seq !== p.seq || (ex.status !== "RUNNING" && ex.status !== "WAITING")) return { stale: true };
  const wf = await loadWorkflow(ctx, ctx.db, ex.workflow_id);
  if (!wf) return { stale: true };
  const current = ex.current_step_id ? wf.steps.get(ex.current_step_id) : undefined;

  // A resume decides the waiting step's outcome; a WEBHOOK is performed before the transaction.
  let first = resumeOutcome(ctx, p);
  if (!first && current?.type === "WEBHOOK") {
    const contact = await getContactRow(ctx.db, ex.project_id, ex.contact_id);
    const open = await openStepLog(ctx.db, ex.id, current.id);
    first = contact ? await performWebhook(ctx, { workflow: wf, execution: ex, step: current, contact, openLog: open ?? null }) : fail("The contact no longer exists");
  }

  const fx: Effects = { memo: new Map(), wakeOutbox: false, events: [], contacts: [], wakeJobs: false };
  const now = ctx.clock.now();
  const result = await ctx.db.transaction().execute(async (trx) => {
    if (!(await claimTurn(trx, ex.id, p.seq, now))) return { stale: true };
    return walk(ctx, trx, wf, ex, p.seq + 1, first, p.resume !== undefined || current?.type === "WEBHOOK", now, fx);
  });
  await afterCommit(ctx, fx);
  return result;
}

/** Runs steps from the execution's current one until a wait, the end, or the chain cap. */
async function walk(
  ctx: AppContext,
  trx: Transaction<DB>,
  wf: LoadedWorkflow,
  ex: ExecutionRow,
  seq: number,
  firstOutcome: StepOutcome | undefined,
  resumed: boolean,
  now: number,
  fx: Effects,
): Promise<unknown> {
  const contact = (fx.memo.get(`contact:${ex.contact_id}`) as Awaited<ReturnType<typeof getContactRow>>) ?? (await getContactRow(trx, ex.project_id, ex.contact_id));
  const event = parse(ex.trigger_event);
  const context = (parse(ex.context) ?? {}) as Record<string, unknown>;
  const enqueue = (payload: Omit<StepJobPayload, "executionId" | "seq">, runAt: number) => {
    fx.wakeJobs = true;
    return ctx.jobs.enqueue(STEP_JOB, { executionId: ex.id, seq, ...payload } satisfies StepJobPayload, { trx, runAt, maxAttempts: MAX_JOB_ATTEMPTS });
  };
  const done = { resume_at: null, job_id: null, wait_event: null, wait_since: null, wait_seq: null } as const;
  let stepId = ex.current_step_id;
  let outcome = firstOutcome;
  // The first step of a resumed turn has an open log row (its wait or retry) to close.
  let reopen = resumed;
  for (let i = 0; i < MAX_CHAIN; i++) {
    if (!stepId) {
      await updateExecution(trx, ex.id, { ...done, status: "COMPLETED", current_step_id: null, completed_at: now }, now);
      return { status: "COMPLETED" };
    }
    const step = wf.steps.get(stepId);
    if (!step) {
      await updateExecution(trx, ex.id, { ...done, status: "FAILED", exit_reason: `Step ${stepId} no longer exists`, completed_at: now }, now);
      return { status: "FAILED" };
    }
    if (!contact) outcome = fail("The contact no longer exists");
    if (!outcome) {
      if (step.type === "WEBHOOK") {
        // Network work happens outside a transaction: hand the step to its own job.
        const jobId = await enqueue({}, now);
        await updateExecution(trx, ex.id, { ...done, status: "RUNNING", current_step_id: step.id, job_id: jobId }, now);
        return { status: "RUNNING", handedOver: step.id };
      }
      const env: StepEnv = { ctx, trx, now, workflow: wf, execution: ex, step, contact: contact!, event, context, effects: fx, memo: fx.memo };
      outcome = await RUNNERS[step.type](env);
    }
    const base = { executionId: ex.id, stepId: step.id, type: step.type, startedAt: now, ord: seq * 1000 + i };
    switch (outcome.kind) {
      case "next": {
        await writeStepLog(trx, reopen, now, { ...base, status: outcome.skipped ? "SKIPPED" : "COMPLETED", completedAt: now, output: outcome.output });
        stepId = decideNext(wf, step.id, outcome);
        outcome = undefined;
        reopen = false;
        continue;
      }
      case "wait": {
        await writeStepLog(trx, reopen, now, { ...base, status: "WAITING", completedAt: null, output: outcome.output });
        const jobId = await enqueue({ resume: "delay" }, outcome.until);
        await updateExecution(trx, ex.id, { ...done, status: "WAITING", current_step_id: step.id, resume_at: outcome.until, job_id: jobId }, now);
        return { status: "WAITING", until: outcome.until };
      }
      case "waitEvent": {
        await writeStepLog(trx, reopen, now, { ...base, status: "WAITING", completedAt: null, output: outcome.output });
        const jobId = outcome.timeoutAt === null ? null : await enqueue({ resume: "timeout" }, outcome.timeoutAt);
        await updateExecution(
          trx,
          ex.id,
          { status: "WAITING", current_step_id: step.id, wait_event: outcome.eventName, wait_since: now, wait_seq: await currentEventSeq(trx), resume_at: outcome.timeoutAt, job_id: jobId },
          now,
        );
        return { status: "WAITING", eventName: outcome.eventName };
      }
      case "exit": {
        await writeStepLog(trx, reopen, now, { ...base, status: "COMPLETED", completedAt: now, output: outcome.output });
        await updateExecution(trx, ex.id, { ...done, status: "EXITED", current_step_id: step.id, exit_reason: outcome.reason, completed_at: now }, now);
        return { status: "EXITED" };
      }
      case "fail": {
        await writeStepLog(trx, reopen, now, { ...base, status: "FAILED", completedAt: now, output: outcome.output, error: outcome.error });
        await updateExecution(trx, ex.id, { ...done, status: "FAILED", current_step_id: step.id, exit_reason: outcome.error, completed_at: now }, now);
        return { status: "FAILED" };
      }
      case "retry": {
        await writeStepLog(trx, reopen, now, { ...base, status: "RUNNING", completedAt: null, output: outcome.output, error: outcome.error });
        const jobId = await enqueue({ resume: "retry" }, outcome.at);
        await updateExecution(trx, ex.id, { ...done, status: "RUNNING", current_step_id: step.id, resume_at: outcome.at, job_id: jobId }, now);
        return { status: "RUNNING", retryAt: outcome.at };
      }
    }
  }
  // Chain cap: continue in a fresh job.
  const jobId = await enqueue({}, now);
  await updateExecution(trx, ex.id, { ...done, status: "RUNNING", current_step_id: stepId, job_id: jobId }, now);
  return { status: "RUNNING" };
}

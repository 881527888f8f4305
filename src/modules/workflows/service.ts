/**
 * Workflows: the graph (workflow, steps, transitions) with every validation rule, the structural
 * lock while executions are active, manual starts and the executions API. The engine that runs
 * executions lives in src/automation.
 */
import type { Transaction } from "kysely";
import { conditionReferences, normalizeCondition, segmentReferenceIssues, type ConditionTree } from "../../audience/conditions";
import { treeOf } from "./engine/condition-adapter";
import { checkStepConfig } from "./engine/configs";
import { insertExecution, mayEnter } from "./engine/executor";
import { splicePlan, transitionErrors } from "./engine/graph";
import { closeOpenLogs, dropJob } from "./engine/store";
import { EXECUTION_STATUSES, STEP_TYPES, type Branch, type Graph, type StepType } from "./engine/types";
import type { AppContext } from "../../context";
import type { DB } from "../../db";
import { badRequest, conflict, invalidState, notFound, validationError, type FieldError } from "../../http/errors";
import { offsetPage, type OffsetParams } from "../../http/pagination";
import { listFields } from "../contacts/service";
import * as q from "./queries";
import { viewExecution, viewStep, viewStepLog, viewTransition, viewWorkflow } from "./views";

type Trx = Transaction<DB>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

// ---- workflows -----------------------------------------------------------------------------------

export interface WorkflowInput {
  name: string;
  description?: string | null;
  triggerConfig?: unknown;
  allowReentry?: boolean;
}

export interface WorkflowPatch {
  name?: string;
  description?: string | null;
  triggerType?: "EVENT" | "MANUAL";
  triggerConfig?: unknown;
  enabled?: boolean;
  allowReentry?: boolean;
  entryStepId?: string | null;
}

/** Normalises `triggerConfig` (`{ eventName? }`); 422 when malformed. */
function triggerConfigOf(raw: unknown): { config: Record<string, unknown>; eventName: string | null } {
  if (raw === undefined || raw === null) return { config: {}, eventName: null };
  if (!isObject(raw)) throw validationError([{ field: "triggerConfig", message: "triggerConfig must be an object like { eventName }", code: "invalid_type", received: Array.isArray(raw) ? "array" : typeof raw }]);
  const name = raw.eventName;
  if (name !== undefined && name !== null && (typeof name !== "string" || !name.trim() || name.length > 255)) {
    throw validationError([{ field: "triggerConfig.eventName", message: "eventName is an event name of 1 to 255 characters", code: "invalid_string", received: typeof name === "string" ? name : typeof name }]);
  }
  const eventName = typeof name === "string" ? name.trim() : null;
  return { config: { ...raw, ...(eventName ? { eventName } : {}) }, eventName };
}

export async function listWorkflows(ctx: AppContext, projectId: string, query: { search?: string; enabled?: string }, page: OffsetParams) {
  let enabled: boolean | undefined;
  if (query.enabled !== undefined && query.enabled !== "") {
    const v = query.enabled.toLowerCase();
    if (v === "true" || v === "1") enabled = true;
    else if (v === "false" || v === "0") enabled = false;
    else throw badRequest("enabled must be true or false", { details: { enabled: query.enabled } });
  }
  const { rows, total } = await q.listWorkflows(ctx.db, projectId, { search: query.search?.trim() || undefined, enabled }, page.pageSize, page.offset);
  return offsetPage(rows.map(viewWorkflow), total, page);
}

export async function requireWorkflow(ctx: AppContext, db: AppContext["db"] | Trx, projectId: string, id: string) {
  const w = await q.getWorkflow(db, projectId, id);
  if (!w) throw notFound("Workflow");
  return w;
}

export async function workflowDetail(ctx: AppContext, projectId: string, id: string) {
  const w = await requireWorkflow(ctx, ctx.db, projectId, id);
  const [steps, transitions] = await Promise.all([q.stepsOf(ctx.db, id), q.transitionsOf(ctx.db, id)]);
  return { ...viewWorkflow(w), steps: steps.map(viewStep), transitions: transitions.map(viewTransition) };
}

export async function createWorkflow(ctx: AppContext, projectId: string, input: WorkflowInput) {
  const trigger = triggerConfigOf(input.triggerConfig);
  const now = ctx.clock.now();
  const id = Bun.randomUUIDv7(undefined, now);
  await ctx.db
    .insertInto("workflows")
    .values({
      id,
      project_id: projectId,
      name: input.name.trim(),
      description: input.description ?? null,
      trigger_type: "EVENT",
      trigger_config: JSON.stringify(trigger.config),
      trigger_event: trigger.eventName,
      enabled: 0,
      allow_reentry: input.allowReentry ? 1 : 0,
      entry_step_id: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return workflowDetail(ctx, projectId, id);
}

/** 409 while the workflow has RUNNING or WAITING executions (structural edits). */
async function assertUnlocked(trx: Trx, workflowId: string, what: string) {
  const n = await q.activeExecutionCount(trx, workflowId);
  if (n > 0) {
    throw invalidState(`${what} is refused while the workflow has ${n} active execution(s); cancel them or let them finish first`, { activeExecutions: n });
  }
}

/** Why the workflow cannot be enabled (empty when it can). */
function enableErrors(w: { trigger_type: string; trigger_event: string | null; entry_step_id: string | null }): FieldError[] {
  const errors: FieldError[] = [];
  if (!w.entry_step_id) errors.push({ field: "entryStepId", message: "A workflow needs an entry step before it can be enabled: add a step first", code: "missing_entry_step" });
  if (w.trigger_type === "EVENT" && !w.trigger_event) {
    errors.push({ field: "triggerConfig.eventName", message: "An EVENT workflow needs triggerConfig.eventName before it can be enabled", code: "missing_event_name" });
  }
  return errors;
}

export async function updateWorkflow(ctx: AppContext, projectId: string, id: string, patch: WorkflowPatch) {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const w = await requireWorkflow(ctx, trx, projectId, id);
    const next = { ...w };
    if (patch.name !== undefined) next.name = patch.name.trim();
    if (patch.description !== undefined) next.description = patch.description;
    if (patch.allowReentry !== undefined) next.allow_reentry = patch.allowReentry ? 1 : 0;
    if (patch.enabled !== undefined) next.enabled = patch.enabled ? 1 : 0;
    if (patch.triggerType !== undefined) next.trigger_type = patch.triggerType;
    if (patch.triggerConfig !== undefined) {
      const t = triggerConfigOf(patch.triggerConfig);
      next.trigger_config = JSON.stringify(t.config);
      next.trigger_event = t.eventName;
    }
    if (patch.triggerType !== undefined || patch.triggerConfig !== undefined) {
      const cfg = JSON.parse(next.trigger_config) as Record<string, unknown>;
      next.trigger_event = next.trigger_type === "EVENT" && typeof cfg.eventName === "string" ? cfg.eventName : null;
    }
    if (patch.entryStepId !== undefined && patch.entryStepId !== w.entry_step_id) {
      if (patch.entryStepId !== null) {
        const steps = await q.stepsOf(trx, id);
        if (!steps.some((s) => s.id === patch.entryStepId)) {
          throw validationError([{ field: "entryStepId", message: "No such step in this workflow", code: "not_found", received: patch.entryStepId }]);
        }
      }
      await assertUnlocked(trx, id, "Changing the entry step");
      next.entry_step_id = patch.entryStepId;
    }
    if (next.enabled === 1) {
      const errors = enableErrors(next);
      if (errors.length) throw validationError(errors, patch.enabled ? "The workflow cannot be enabled" : "The change would leave the enabled workflow unable to run");
    }
    await trx
      .updateTable("workflows")
      .set({
        name: next.name,
        description: next.description,
        allow_reentry: next.allow_reentry,
        enabled: next.enabled,
        trigger_type: next.trigger_type,
        trigger_config: next.trigger_config,
        trigger_event: next.trigger_event,
        entry_step_id: next.entry_step_id,
        updated_at: now,
      })
      .where("id", "=", id)
      .execute();
  });
  return workflowDetail(ctx, projectId, id);
}

export async function deleteWorkflow(ctx: AppContext, projectId: string, id: string) {
  await ctx.db.transaction().execute(async (trx) => {
    await requireWorkflow(ctx, trx, projectId, id);
    await assertUnlocked(trx, id, "Deleting the workflow");
    await trx.deleteFrom("workflow_executions").where("workflow_id", "=", id).execute();
    await trx.deleteFrom("workflows").where("id", "=", id).execute();
  });
}

// ---- steps ----------------------------------------------------------------------------------------

export interface StepInput {
  type: StepType;
  name?: string;
  config?: unknown;
  position?: Record<string, unknown> | null;
}

const defaultName = (type: StepType) => type.charAt(0) + type.slice(1).toLowerCase().replace(/_/g, " ");

/**
 * 422 for an invalid config, including a SEND_EMAIL template the project does not have and a CONDITION
 * naming a segment it does not have (the same check as segments and campaign audiences).
 */
async function validConfig(ctx: AppContext, trx: Trx, projectId: string, type: StepType, raw: unknown): Promise<Record<string, unknown>> {
  const r = checkStepConfig(type, raw, { allowPrivateWebhooks: ctx.config.allowPrivateWebhooks });
  if (!r.errors.length && type === "SEND_EMAIL") {
    const tpl = await trx.selectFrom("templates").select("id").where("project_id", "=", projectId).where("id", "=", String(r.config.templateId)).executeTakeFirst();
    if (!tpl) r.errors.push({ field: "config.templateId", message: "No such template in this project", code: "not_found", received: String(r.config.templateId) });
  }
  if (!r.errors.length && type === "CONDITION") {
    const isTree = "groups" in r.config || "logic" in r.config;
    const issues = await segmentReferenceIssues(trx, projectId, normalizeCondition(treeOf(r.config)), "config");
    // The one-filter form `{ field, operator, value }` is the filter itself: its field is `config.field`.
    r.errors.push(...issues.map((i) => (isTree ? i : { ...i, field: "config.field" })));
  }
  if (r.errors.length) throw validationError(r.errors, `Invalid ${type} step config`);
  return r.config;
}

export async function addStep(ctx: AppContext, projectId: string, workflowId: string, input: StepInput) {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const w = await requireWorkflow(ctx, trx, projectId, workflowId);
    await assertUnlocked(trx, workflowId, "Adding a step");
    const config = await validConfig(ctx, trx, projectId, input.type, input.config);
    const row = {
      id: Bun.randomUUIDv7(undefined, now),
      workflow_id: workflowId,
      project_id: projectId,
      type: input.type,
      name: input.name?.trim() || defaultName(input.type),
      config: JSON.stringify(config),
      position: input.position ? JSON.stringify(input.position) : null,
      template_id: input.type === "SEND_EMAIL" ? String(config.templateId) : null,
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto("workflow_steps").values(row).execute();
    // The first step added becomes the entry step.
    await trx
      .updateTable("workflows")
      .set({ updated_at: now, ...(w.entry_step_id ? {} : { entry_step_id: row.id }) })
      .where("id", "=", workflowId)
      .execute();
    return row;
  });
  return viewStep(row);
}

async function requireStep(trx: Trx, workflowId: string, stepId: string) {
  const s = await trx.selectFrom("workflow_steps").selectAll().where("workflow_id", "=", workflowId).where("id", "=", stepId).executeTakeFirst();
  if (!s) throw notFound("Step");
  return s;
}

export async function updateStep(ctx: AppContext, projectId: string, workflowId: string, stepId: string, patch: { name?: string; config?: unknown; position?: Record<string, unknown> | null }) {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    await requireWorkflow(ctx, trx, projectId, workflowId);
    const s = await requireStep(trx, workflowId, stepId);
    // Renaming or moving a step is not structural; changing what it does is.
    if (patch.config !== undefined) await assertUnlocked(trx, workflowId, "Editing a step config");
    const next = { ...s };
    if (patch.config !== undefined) {
      const config = await validConfig(ctx, trx, projectId, s.type as StepType, patch.config);
      next.config = JSON.stringify(config);
      next.template_id = s.type === "SEND_EMAIL" ? String(config.templateId) : null;
    }
    if (patch.name !== undefined) next.name = patch.name.trim() || defaultName(s.type as StepType);
    if (patch.position !== undefined) next.position = patch.position ? JSON.stringify(patch.position) : null;
    next.updated_at = now;
    await trx.updateTable("workflow_steps").set({ name: next.name, config: next.config, position: next.position, template_id: next.template_id, updated_at: now }).where("id", "=", stepId).execute();
    await q.touchWorkflow(trx, workflowId, now);
    return next;
  });
  return viewStep(row);
}

async function graphOf(trx: Trx, workflowId: string): Promise<Graph> {
  const [steps, transitions] = await Promise.all([q.stepsOf(trx, workflowId), q.transitionsOf(trx, workflowId)]);
  return {
    steps: steps.map((s) => ({ id: s.id, type: s.type as StepType })),
    transitions: transitions.map((t) => ({ id: t.id, fromStepId: t.from_step_id, toStepId: t.to_step_id, branch: t.branch as Branch | null })),
  };
}

export async function deleteStep(ctx: AppContext, projectId: string, workflowId: string, stepId: string, splice: boolean) {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const w = await requireWorkflow(ctx, trx, projectId, workflowId);
    const s = await requireStep(trx, workflowId, stepId);
    await assertUnlocked(trx, workflowId, "Deleting a step");
    const graph = await graphOf(trx, workflowId);
    const plan = splicePlan(graph, { id: s.id, type: s.type as StepType }, splice, w.entry_step_id);
    if (!plan) {
      throw validationError([{ field: "splice", message: "A step with more than one successor cannot be spliced out: delete its branches first, or delete without splice", code: "invalid_splice" }]);
    }
    if (plan.remove.length) await trx.deleteFrom("workflow_transitions").where("id", "in", plan.remove).execute();
    await trx.deleteFrom("workflow_steps").where("id", "=", stepId).execute();
    for (const t of plan.add) {
      await trx
        .insertInto("workflow_transitions")
        .values({ id: Bun.randomUUIDv7(undefined, now), workflow_id: workflowId, from_step_id: t.fromStepId, to_step_id: t.toStepId, branch: t.branch, created_at: now })
        .execute();
    }
    const entry = plan.entry === undefined ? w.entry_step_id : plan.entry;
    if (w.enabled === 1 && !entry) {
      throw validationError([{ field: "entryStepId", message: "Deleting the entry step would leave the enabled workflow without one: disable it first", code: "missing_entry_step" }]);
    }
    await trx.updateTable("workflows").set({ entry_step_id: entry, updated_at: now }).where("id", "=", workflowId).execute();
  });
}

// ---- transitions ----------------------------------------------------------------------------------

export async function addTransition(ctx: AppContext, projectId: string, workflowId: string, input: { fromStepId: string; toStepId: string; branch?: string | null }) {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    await requireWorkflow(ctx, trx, projectId, workflowId);
    await assertUnlocked(trx, workflowId, "Adding a transition");
    const graph = await graphOf(trx, workflowId);
    const errors = transitionErrors(graph, input);
    if (errors.length) throw validationError(errors, errors[0]!.message);
    const row = { id: Bun.randomUUIDv7(undefined, now), workflow_id: workflowId, from_step_id: input.fromStepId, to_step_id: input.toStepId, branch: input.branch ?? null, created_at: now };
    await trx.insertInto("workflow_transitions").values(row).execute();
    await q.touchWorkflow(trx, workflowId, now);
    return row;
  });
  return viewTransition(row);
}

export async function deleteTransition(ctx: AppContext, projectId: string, workflowId: string, transitionId: string) {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    await requireWorkflow(ctx, trx, projectId, workflowId);
    const t = await trx.selectFrom("workflow_transitions").select("id").where("workflow_id", "=", workflowId).where("id", "=", transitionId).executeTakeFirst();
    if (!t) throw notFound("Transition");
    await assertUnlocked(trx, workflowId, "Deleting a transition");
    await trx.deleteFrom("workflow_transitions").where("id", "=", transitionId).execute();
    await q.touchWorkflow(trx, workflowId, now);
  });
}

// ---- executions -----------------------------------------------------------------------------------

export async function startExecution(ctx: AppContext, projectId: string, workflowId: string, input: { contactId?: string; email?: string; context?: unknown }) {
  if (!input.contactId && !input.email) {
    throw validationError([{ field: "contactId", message: "Give contactId or email of the contact to start", code: "invalid_type", received: "undefined" }]);
  }
  if (input.context !== undefined && input.context !== null && !isObject(input.context)) {
    throw validationError([{ field: "context", message: "context must be a JSON object (its keys are workflow.<key> variables)", code: "invalid_type", received: Array.isArray(input.context) ? "array" : typeof input.context }]);
  }
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const w = await requireWorkflow(ctx, trx, projectId, workflowId);
    if (w.enabled !== 1) throw invalidState("The workflow is disabled: enable it before starting executions");
    const contact = input.contactId ? await q.findContactById(trx, projectId, input.contactId) : await q.findContactByEmail(trx, projectId, input.email!.trim().toLowerCase());
    if (!contact) throw notFound("Contact");
    if (!(await mayEnter(trx, workflowId, contact.id, w.allow_reentry === 1))) {
      throw conflict(
        w.allow_reentry === 1 ? "The contact already has an active execution of this workflow" : "The contact has already entered this workflow (allowReentry is false)",
        { contactId: contact.id },
      );
    }
    return insertExecution(ctx, trx, { projectId, workflowId, entryStepId: w.entry_step_id, contactId: contact.id, context: (input.context as Record<string, unknown>) ?? null }, now);
  });
  ctx.jobs.wake();
  return viewExecution(row);
}

export async function listExecutions(ctx: AppContext, projectId: string, workflowId: string, status: string | undefined, page: OffsetParams) {
  await requireWorkflow(ctx, ctx.db, projectId, workflowId);
  let s: string | undefined;
  if (status !== undefined && status !== "") {
    s = status.toUpperCase();
    if (!(EXECUTION_STATUSES as readonly string[]).includes(s)) throw badRequest(`status must be one of ${EXECUTION_STATUSES.join(", ")}`, { details: { status } });
  }
  const { rows, total } = await q.listExecutions(ctx.db, workflowId, s, page.pageSize, page.offset);
  return offsetPage(rows.map(viewExecution), total, page);
}

export async function getExecution(ctx: AppContext, projectId: string, workflowId: string, executionId: string) {
  await requireWorkflow(ctx, ctx.db, projectId, workflowId);
  const e = await q.getExecution(ctx.db, workflowId, executionId);
  if (!e) throw notFound("Execution");
  const steps = await q.executionSteps(ctx.db, e.id);
  return { ...viewExecution(e), steps: steps.map(viewStepLog) };
}

async function cancelOne(trx: Trx, id: string, jobId: string | null, now: number): Promise<boolean> {
  const r = await trx
    .updateTable("workflow_executions")
    .set((eb) => ({ status: "CANCELLED", completed_at: now, updated_at: now, exit_reason: "Cancelled", wait_event: null, resume_at: null, job_id: null, step_seq: eb("step_seq", "+", 1) }))
    .where("id", "=", id)
    .where("status", "in", ["RUNNING", "WAITING"])
    .executeTakeFirst();
  if (!Number(r.numUpdatedRows)) return false;
  await closeOpenLogs(trx, id, now, "Cancelled");
  await dropJob(trx, jobId, now);
  return true;
}

export async function cancelExecution(ctx: AppContext, projectId: string, workflowId: string, executionId: string) {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    await requireWorkflow(ctx, trx, projectId, workflowId);
    const e = await q.getExecution(trx, workflowId, executionId);
    if (!e) throw notFound("Execution");
    if (!(await cancelOne(trx, e.id, e.job_id, now))) throw invalidState(`The execution is ${e.status}: only RUNNING or WAITING executions can be cancelled`, { status: e.status });
  });
  return getExecution(ctx, projectId, workflowId, executionId);
}

export async function cancelAll(ctx: AppContext, projectId: string, workflowId: string) {
  const now = ctx.clock.now();
  const cancelled = await ctx.db.transaction().execute(async (trx) => {
    await requireWorkflow(ctx, trx, projectId, workflowId);
    let n = 0;
    for (const e of await q.activeExecutions(trx, workflowId)) if (await cancelOne(trx, e.id, e.job_id, now)) n++;
    return n;
  });
  return { cancelled };
}

// ---- fields, usage, upcoming ----------------------------------------------------------------------

/** Fields a CONDITION filter can use: contact fields, event names (triggered family), trigger-event data keys, context keys. */
export async function conditionFields(ctx: AppContext, projectId: string) {
  const [contact, names, recent] = await Promise.all([listFields(ctx, projectId), q.eventNames(ctx.db, projectId), q.recentEventData(ctx.db, projectId)]);
  const keys = new Set<string>();
  for (const r of recent) {
    try {
      const d = JSON.parse(r.data!);
      if (isObject(d)) for (const k of Object.keys(d)) keys.add(k);
    } catch {}
  }
  return {
    standard: contact.standard.map((f) => ({ ...f, path: f.name })),
    custom: contact.custom,
    events: names.map((n) => ({ name: n.name, path: `event.${n.name}` })),
    eventData: [...keys].sort().map((k) => ({ name: k, path: `event.${k}` })),
    workflow: [{ name: "<key>", path: "workflow.<key>" }],
  };
}

export async function templateUsage(ctx: AppContext, projectId: string, templateId: string) {
  const rows = await q.stepsUsingTemplate(ctx.db, projectId, templateId);
  return { workflows: rows.map((r) => ({ id: r.id, name: r.name, stepId: r.stepId })) };
}

export async function eventUsage(ctx: AppContext, projectId: string, name: string) {
  const { wfs, steps } = await q.workflowsMentioning(ctx.db, projectId, name);
  const out: unknown[] = wfs.filter((w) => w.trigger_event === name).map((w) => ({ id: w.id, name: w.name, stepId: null, usage: "trigger" }));
  for (const s of steps) {
    const c = JSON.parse(s.config) as Record<string, unknown>;
    // In a CONDITION, `event.<name>` with the triggered family and `email.<kind>` name events; `event.<key>`
    // with a value operator is a key of the triggering event's data, not an event.
    const hit = (s.type === "WAIT_FOR_EVENT" && c.eventName === name) || (s.type === "CONDITION" && conditionReferences(treeOf(c) as ConditionTree, "workflow").events.includes(name));
    if (hit) out.push({ id: s.id, name: s.name, stepId: s.stepId, usage: s.type });
  }
  return { workflows: out };
}

export async function fieldUsage(ctx: AppContext, projectId: string, field: string) {
  const { steps } = await q.workflowsMentioning(ctx.db, projectId, field);
  const out: unknown[] = [];
  for (const s of steps) {
    const c = JSON.parse(s.config) as Record<string, unknown>;
    const inCondition = s.type === "CONDITION" && conditionReferences(treeOf(c) as ConditionTree, "workflow").fields.includes(field);
    const inUpdate = s.type === "UPDATE_CONTACT" && isObject(c.updates) && Object.hasOwn(c.updates, field);
    if (inCondition || inUpdate) out.push({ id: s.id, name: s.name, stepId: s.stepId, usage: s.type });
  }
  return { workflows: out };
}

export async function upcoming(ctx: AppContext, projectId: string, limit: number) {
  const rows = await q.upcomingExecutions(ctx.db, projectId, limit);
  return rows.map((r) => ({
    type: "workflow.execution",
    id: r.id,
    at: r.resumeAt === null ? null : new Date(r.resumeAt).toISOString(),
    details: { workflowId: r.workflowId, workflowName: r.workflowName, contactId: r.contactId, status: r.status, stepId: r.stepId, waitingFor: r.waitEvent },
  }));
}

export const STEP_TYPE_LIST = STEP_TYPES;

import { dialect } from "../../db/dialect";
// SQL of the workflows resource (Kysely). The engine's own SQL lives in src/automation/store.ts.
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { DB } from "../../db";
import type { WorkflowExecutionsTable, WorkflowStepsTable, WorkflowsTable, WorkflowTransitionsTable } from "../../db/tables/workflows";

type Db = Kysely<DB> | Transaction<DB>;
export type WorkflowRow = Selectable<WorkflowsTable>;
export type StepRow = Selectable<WorkflowStepsTable>;
export type TransitionRow = Selectable<WorkflowTransitionsTable>;
export type ExecutionRow = Selectable<WorkflowExecutionsTable>;

const ACTIVE = ["RUNNING", "WAITING"];

export const getWorkflow = (db: Db, projectId: string, id: string) =>
  db.selectFrom("workflows").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export async function listWorkflows(db: Db, projectId: string, f: { search?: string; enabled?: boolean }, limit: number, offset: number) {
  let base = db.selectFrom("workflows").where("project_id", "=", projectId);
  if (f.enabled !== undefined) base = base.where("enabled", "=", f.enabled ? 1 : 0);
  if (f.search) {
    base = base.where(dialect().containsAnyNoCase(["name", "description"], f.search));
  }
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy("created_at", "desc").orderBy("id", "desc").limit(limit).offset(offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export const stepsOf = (db: Db, workflowId: string) =>
  db.selectFrom("workflow_steps").selectAll().where("workflow_id", "=", workflowId).orderBy("created_at").orderBy("id").execute();

export const transitionsOf = (db: Db, workflowId: string) =>
  db.selectFrom("workflow_transitions").selectAll().where("workflow_id", "=", workflowId).orderBy("created_at").orderBy("id").execute();

export async function activeExecutionCount(db: Db, workflowId: string): Promise<number> {
  const r = await db
    .selectFrom("workflow_executions")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("workflow_id", "=", workflowId)
    .where("status", "in", ACTIVE)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Bumps the workflow's version (the executor's graph cache keys on updated_at). */
export async function touchWorkflow(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable("workflows").set({ updated_at: now }).where("id", "=", id).execute();
}

export async function listExecutions(db: Db, workflowId: string, status: string | undefined, limit: number, offset: number) {
  let base = db.selectFrom("workflow_executions").where("workflow_id", "=", workflowId);
  if (status) base = base.where("status", "=", status);
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy("id", "desc").limit(limit).offset(offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export const getExecution = (db: Db, workflowId: string, id: string) =>
  db.selectFrom("workflow_executions").selectAll().where("workflow_id", "=", workflowId).where("id", "=", id).executeTakeFirst();

export const executionSteps = (db: Db, executionId: string) =>
  db.selectFrom("workflow_execution_steps").selectAll().where("execution_id", "=", executionId).orderBy("ord").orderBy("id").execute();

export const activeExecutions = (db: Db, workflowId: string) =>
  db.selectFrom("workflow_executions").select(["id", "job_id"]).where("workflow_id", "=", workflowId).where("status", "in", ACTIVE).execute();

export const findContactByEmail = (db: Db, projectId: string, email: string) =>
  db.selectFrom("contacts").select(["id"]).where("project_id", "=", projectId).where("email", "=", email).executeTakeFirst();

export const findContactById = (db: Db, projectId: string, id: string) =>
  db.selectFrom("contacts").select(["id"]).where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export const stepsUsingTemplate = (db: Db, projectId: string, templateId: string) =>
  db
    .selectFrom("workflow_steps")
    .innerJoin("workflows", "workflows.id", "workflow_steps.workflow_id")
    .select(["workflows.id as id", "workflows.name as name", "workflow_steps.id as stepId"])
    .where("workflow_steps.project_id", "=", projectId)
    .where("workflow_steps.template_id", "=", templateId)
    .execute();

/** Workflows and steps whose JSON mentions `needle` (event names, fields); filtered precisely by the caller. */
export async function workflowsMentioning(db: Db, projectId: string, needle: string) {
  const like = `%${needle.replace(/[\\%_]/g, (c) => "\\" + c)}%`;
  const [wfs, steps] = await Promise.all([
    db.selectFrom("workflows").select(["id", "name", "trigger_event"]).where("project_id", "=", projectId).execute(),
    db
      .selectFrom("workflow_steps")
      .innerJoin("workflows", "workflows.id", "workflow_steps.workflow_id")
      .select(["workflows.id as id", "workflows.name as name", "workflow_steps.id as stepId", "workflow_steps.type as type", "workflow_steps.config as config"])
      .where("workflow_steps.project_id", "=", projectId)
      .where(sql<boolean>`workflow_steps.config ${sql.raw(dialect().likeNoCase)} ${like} ESCAPE '\\'`)
      .execute(),
  ]);
  return { wfs, steps };
}

/** Waiting executions with a resume time, soonest first (/activity/upcoming). */
export const upcomingExecutions = (db: Db, projectId: string, limit: number) =>
  db
    .selectFrom("workflow_executions")
    .innerJoin("workflows", "workflows.id", "workflow_executions.workflow_id")
    .select([
      "workflow_executions.id as id",
      "workflow_executions.workflow_id as workflowId",
      "workflows.name as workflowName",
      "workflow_executions.contact_id as contactId",
      "workflow_executions.status as status",
      "workflow_executions.current_step_id as stepId",
      "workflow_executions.wait_event as waitEvent",
      "workflow_executions.resume_at as resumeAt",
    ])
    .where("workflow_executions.project_id", "=", projectId)
    .where("workflow_executions.status", "=", "WAITING")
    .orderBy(sql`CASE WHEN workflow_executions.resume_at IS NULL THEN 1 ELSE 0 END`)
    .orderBy("workflow_executions.resume_at")
    .limit(limit)
    .execute();

export const recentEventData = (db: Db, projectId: string) =>
  db.selectFrom("events").select(["data"]).where("project_id", "=", projectId).where("data", "is not", null).orderBy("id", "desc").limit(500).execute();

export const eventNames = (db: Db, projectId: string) =>
  db.selectFrom("events").select("name").distinct().where("project_id", "=", projectId).orderBy("name").limit(1000).execute();

export async function deleteProjectWorkflows(db: Kysely<DB>, projectId: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom("workflow_executions").where("project_id", "=", projectId).execute();
    await trx.deleteFrom("workflows").where("project_id", "=", projectId).execute();
  });
}

export async function workflowCount(db: Db, projectId: string) {
  const r = await db.selectFrom("workflows").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow();
  return Number(r.n);
}

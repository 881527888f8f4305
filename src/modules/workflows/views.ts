import { iso } from "../../clock";
import type { ExecutionRow, StepRow, TransitionRow, WorkflowRow } from "./queries";

const parse = (s: string | null) => (s ? JSON.parse(s) : null);

export function viewWorkflow(w: WorkflowRow) {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    triggerType: w.trigger_type,
    triggerConfig: parse(w.trigger_config) ?? {},
    enabled: w.enabled === 1,
    allowReentry: w.allow_reentry === 1,
    entryStepId: w.entry_step_id,
    projectId: w.project_id,
    createdAt: iso(w.created_at)!,
    updatedAt: iso(w.updated_at)!,
  };
}

export function viewStep(s: StepRow) {
  return { id: s.id, type: s.type, name: s.name, config: parse(s.config) ?? {}, position: parse(s.position), createdAt: iso(s.created_at)!, updatedAt: iso(s.updated_at)! };
}

export function viewTransition(t: TransitionRow) {
  return { id: t.id, fromStepId: t.from_step_id, toStepId: t.to_step_id, branch: t.branch };
}

export function viewExecution(e: ExecutionRow) {
  return {
    id: e.id,
    workflowId: e.workflow_id,
    contactId: e.contact_id,
    status: e.status,
    currentStepId: e.current_step_id,
    context: parse(e.context),
    exitReason: e.exit_reason,
    startedAt: iso(e.started_at)!,
    completedAt: iso(e.completed_at),
    triggerEvent: parse(e.trigger_event),
    waitingFor: e.status === "WAITING" ? e.wait_event : null,
    resumeAt: e.status === "WAITING" || e.status === "RUNNING" ? iso(e.resume_at) : null,
  };
}

export interface StepLogRow {
  step_id: string;
  type: string;
  status: string;
  started_at: number;
  completed_at: number | null;
  output: string | null;
  error: string | null;
}

export function viewStepLog(r: StepLogRow) {
  return { stepId: r.step_id, type: r.type, status: r.status, startedAt: iso(r.started_at)!, completedAt: iso(r.completed_at), output: parse(r.output), error: r.error };
}

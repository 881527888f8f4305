// Table types for the workflow engine (migrations/010_workflows.sql).

export interface WorkflowsTable {
  id: string;
  project_id: string;
  name: string;
  description: string | null;
  trigger_type: string;
  /** JSON object text. */
  trigger_config: string;
  trigger_event: string | null;
  enabled: number;
  allow_reentry: number;
  entry_step_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface WorkflowStepsTable {
  id: string;
  workflow_id: string;
  project_id: string;
  type: string;
  name: string;
  /** JSON object text. */
  config: string;
  position: string | null;
  template_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface WorkflowTransitionsTable {
  id: string;
  workflow_id: string;
  from_step_id: string;
  to_step_id: string;
  branch: string | null;
  created_at: number;
}

export interface WorkflowExecutionsTable {
  id: string;
  project_id: string;
  workflow_id: string;
  contact_id: string;
  status: string;
  current_step_id: string | null;
  step_seq: number;
  context: string | null;
  trigger_event: string | null;
  exit_reason: string | null;
  wait_event: string | null;
  wait_since: number | null;
  wait_seq: number | null;
  resume_at: number | null;
  job_id: string | null;
  started_at: number;
  completed_at: number | null;
  updated_at: number;
}

export interface WorkflowExecutionStepsTable {
  id: string;
  execution_id: string;
  step_id: string;
  type: string;
  ord: number;
  status: string;
  started_at: number;
  completed_at: number | null;
  output: string | null;
  error: string | null;
}

export interface WorkflowTables {
  workflows: WorkflowsTable;
  workflow_steps: WorkflowStepsTable;
  workflow_transitions: WorkflowTransitionsTable;
  workflow_executions: WorkflowExecutionsTable;
  workflow_execution_steps: WorkflowExecutionStepsTable;
}

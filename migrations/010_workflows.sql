-- Workflows: a graph of steps and transitions per workflow, one execution per contact run and a log
-- row per step an execution ran. Executions advance as jobs (jobs table); an execution's step_seq is
-- the compare-and-set token that makes a re-run job (kill -9 after commit) a no-op.
CREATE TABLE workflows (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  trigger_type TEXT NOT NULL DEFAULT 'EVENT',   -- EVENT | MANUAL
  trigger_config TEXT NOT NULL DEFAULT '{}',    -- JSON object
  trigger_event TEXT,                           -- triggerConfig.eventName (EVENT workflows), for the trigger look-up
  enabled INTEGER NOT NULL DEFAULT 0,
  allow_reentry INTEGER NOT NULL DEFAULT 0,
  entry_step_id TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX workflows_project ON workflows (project_id, created_at, id);
CREATE INDEX workflows_trigger ON workflows (project_id, trigger_event, enabled);

CREATE TABLE workflow_steps (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  project_id TEXT NOT NULL,
  type TEXT NOT NULL,          -- SEND_EMAIL | DELAY | WAIT_FOR_EVENT | CONDITION | WEBHOOK | UPDATE_CONTACT | EXIT
  name TEXT NOT NULL,
  config TEXT NOT NULL,        -- JSON object
  position TEXT,               -- JSON { x, y } for an editor, or NULL
  template_id TEXT,            -- SEND_EMAIL's config.templateId (template usage look-ups)
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX workflow_steps_workflow ON workflow_steps (workflow_id, created_at);
CREATE INDEX workflow_steps_template ON workflow_steps (project_id, template_id) WHERE template_id IS NOT NULL;

CREATE TABLE workflow_transitions (
  id TEXT PRIMARY KEY,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  from_step_id TEXT NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
  to_step_id TEXT NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
  branch TEXT,                 -- yes | no (CONDITION), event | timeout (WAIT_FOR_EVENT), NULL otherwise
  created_at INTEGER NOT NULL
);
CREATE INDEX workflow_transitions_workflow ON workflow_transitions (workflow_id);

CREATE TABLE workflow_executions (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  workflow_id TEXT NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  status TEXT NOT NULL,        -- RUNNING | WAITING | COMPLETED | EXITED | FAILED | CANCELLED
  current_step_id TEXT,
  step_seq INTEGER NOT NULL DEFAULT 0,
  context TEXT,                -- JSON (manual start context) or NULL
  trigger_event TEXT,          -- JSON { id, name, data } of the triggering event, or NULL
  exit_reason TEXT,
  wait_event TEXT,             -- WAIT_FOR_EVENT: the awaited event name while WAITING
  wait_since INTEGER,
  wait_seq INTEGER,            -- events.seq when the wait began: only later events resume it
  resume_at INTEGER,           -- when a DELAY ends or a WAIT_FOR_EVENT times out
  job_id TEXT,                 -- the pending job that resumes it
  started_at INTEGER NOT NULL,
  completed_at INTEGER,
  updated_at INTEGER NOT NULL
);
CREATE INDEX workflow_executions_workflow ON workflow_executions (workflow_id, status, id);
CREATE INDEX workflow_executions_contact ON workflow_executions (workflow_id, contact_id, status);
CREATE INDEX workflow_executions_waiting ON workflow_executions (project_id, contact_id, wait_event) WHERE wait_event IS NOT NULL;
CREATE INDEX workflow_executions_upcoming ON workflow_executions (project_id, status, resume_at);

CREATE TABLE workflow_execution_steps (
  id TEXT PRIMARY KEY,
  execution_id TEXT NOT NULL REFERENCES workflow_executions(id) ON DELETE CASCADE,
  step_id TEXT NOT NULL,
  type TEXT NOT NULL,
  ord INTEGER NOT NULL,        -- order within the execution: step_seq * 1000 + position in the turn's chain
  status TEXT NOT NULL,        -- RUNNING | WAITING | COMPLETED | SKIPPED | FAILED
  started_at INTEGER NOT NULL,
  completed_at INTEGER,
  output TEXT,                 -- JSON or NULL
  error TEXT
);
CREATE INDEX workflow_execution_steps_execution ON workflow_execution_steps (execution_id, ord);

-- The project's secret for signing workflow webhooks (decisions: `webhookSecret`, whsec_…, rotated
-- with the keys). Projects created before this migration get one the first time it is needed.
ALTER TABLE projects ADD COLUMN webhook_secret TEXT;

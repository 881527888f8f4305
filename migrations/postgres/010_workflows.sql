-- Workflows: a graph of steps and transitions per workflow, one execution per contact run and a log
-- row per step an execution ran. Executions advance as jobs (jobs table); an execution's step_seq is
-- the compare-and-set token that makes a re-run job (kill -9 after commit) a no-op.
CREATE TABLE workflows (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  description text COLLATE "C",
  trigger_type text COLLATE "C" NOT NULL DEFAULT 'EVENT',   -- EVENT | MANUAL
  trigger_config text COLLATE "C" NOT NULL DEFAULT '{}',    -- JSON object
  trigger_event text COLLATE "C",                           -- triggerConfig.eventName (EVENT workflows), for the trigger look-up
  enabled bigint NOT NULL DEFAULT 0,
  allow_reentry bigint NOT NULL DEFAULT 0,
  entry_step_id text COLLATE "C",
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX workflows_project ON workflows (project_id, created_at, id);
CREATE INDEX workflows_trigger ON workflows (project_id, trigger_event, enabled);

CREATE TABLE workflow_steps (
  id text COLLATE "C" PRIMARY KEY,
  workflow_id text COLLATE "C" NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  project_id text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,          -- SEND_EMAIL | DELAY | WAIT_FOR_EVENT | CONDITION | WEBHOOK | UPDATE_CONTACT | EXIT
  name text COLLATE "C" NOT NULL,
  config text COLLATE "C" NOT NULL,        -- JSON object
  position text COLLATE "C",               -- JSON { x, y } for an editor, or NULL
  template_id text COLLATE "C",            -- SEND_EMAIL's config.templateId (template usage look-ups)
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX workflow_steps_workflow ON workflow_steps (workflow_id, created_at);
CREATE INDEX workflow_steps_template ON workflow_steps (project_id, template_id) WHERE template_id IS NOT NULL;

CREATE TABLE workflow_transitions (
  id text COLLATE "C" PRIMARY KEY,
  workflow_id text COLLATE "C" NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  from_step_id text COLLATE "C" NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
  to_step_id text COLLATE "C" NOT NULL REFERENCES workflow_steps(id) ON DELETE CASCADE,
  branch text COLLATE "C",                 -- yes | no (CONDITION), event | timeout (WAIT_FOR_EVENT), NULL otherwise
  created_at bigint NOT NULL
);
CREATE INDEX workflow_transitions_workflow ON workflow_transitions (workflow_id);

CREATE TABLE workflow_executions (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  workflow_id text COLLATE "C" NOT NULL REFERENCES workflows(id) ON DELETE CASCADE,
  contact_id text COLLATE "C" NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  status text COLLATE "C" NOT NULL,        -- RUNNING | WAITING | COMPLETED | EXITED | FAILED | CANCELLED
  current_step_id text COLLATE "C",
  step_seq bigint NOT NULL DEFAULT 0,
  context text COLLATE "C",                -- JSON (manual start context) or NULL
  trigger_event text COLLATE "C",          -- JSON { id, name, data } of the triggering event, or NULL
  exit_reason text COLLATE "C",
  wait_event text COLLATE "C",             -- WAIT_FOR_EVENT: the awaited event name while WAITING
  wait_since bigint,
  wait_seq bigint,            -- events.seq when the wait began: only later events resume it
  resume_at bigint,           -- when a DELAY ends or a WAIT_FOR_EVENT times out
  job_id text COLLATE "C",                 -- the pending job that resumes it
  started_at bigint NOT NULL,
  completed_at bigint,
  updated_at bigint NOT NULL
);
CREATE INDEX workflow_executions_workflow ON workflow_executions (workflow_id, status, id);
CREATE INDEX workflow_executions_contact ON workflow_executions (workflow_id, contact_id, status);
CREATE INDEX workflow_executions_waiting ON workflow_executions (project_id, contact_id, wait_event) WHERE wait_event IS NOT NULL;
CREATE INDEX workflow_executions_upcoming ON workflow_executions (project_id, status, resume_at);

CREATE TABLE workflow_execution_steps (
  id text COLLATE "C" PRIMARY KEY,
  execution_id text COLLATE "C" NOT NULL REFERENCES workflow_executions(id) ON DELETE CASCADE,
  step_id text COLLATE "C" NOT NULL,
  type text COLLATE "C" NOT NULL,
  ord bigint NOT NULL,        -- order within the execution: step_seq * 1000 + position in the turn's chain
  status text COLLATE "C" NOT NULL,        -- RUNNING | WAITING | COMPLETED | SKIPPED | FAILED
  started_at bigint NOT NULL,
  completed_at bigint,
  output text COLLATE "C",                 -- JSON or NULL
  error text COLLATE "C"
);
CREATE INDEX workflow_execution_steps_execution ON workflow_execution_steps (execution_id, ord);

-- The project's secret for signing workflow webhooks (decisions: `webhookSecret`, whsec_…, rotated
-- with the keys). Projects created before this migration get one the first time it is needed.
ALTER TABLE projects ADD COLUMN webhook_secret text COLLATE "C";

-- Leases across instances (issue 32). A claim records who holds it: emails in SENDING and active jobs
-- carry the claiming instance's id (MAILSVC_INSTANCE_ID) next to lease_until. At start-up an instance
-- takes back only its own rows and rows whose lease ended, never a live peer's.
ALTER TABLE emails ADD COLUMN locked_by TEXT;
ALTER TABLE jobs ADD COLUMN locked_by TEXT;
-- A webhook delivery being sent by an instance (PostgreSQL): its next_attempt_at is moved to the lease's end.
ALTER TABLE webhook_deliveries ADD COLUMN locked_by TEXT;
-- Periodic tasks (Schedules.cron): one row per task. An instance runs a task only after winning the
-- conditional UPDATE that moves due_at to the next due time, so a due time runs once across instances.
CREATE TABLE periodic_tasks (
  name TEXT PRIMARY KEY,
  due_at INTEGER NOT NULL,
  run_by TEXT,
  run_at INTEGER
);
-- The send rate shared by instances (MAILSVC_SEND_RATE on PostgreSQL): messages claimed per project and
-- one-second window; a claim takes what is left of the window's budget with a conditional UPDATE.
CREATE TABLE send_rate_windows (
  project_id TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  sent INTEGER NOT NULL DEFAULT 0,
  granted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, window_start)
);

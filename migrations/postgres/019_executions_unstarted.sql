-- Starts made by the trigger consumer no longer get a job row each: the execution row is inserted
-- RUNNING with no job (step_seq 0), and one "workflow.starts" job per burst walks them. This index
-- holds exactly those rows (it is empty once they have started), oldest first.
CREATE INDEX workflow_executions_unstarted ON workflow_executions (id) WHERE status = 'RUNNING' AND job_id IS NULL AND step_seq = 0;

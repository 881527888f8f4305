-- Deleting a contact cascades to its workflow executions, and SQLite finds them by contact_id, which
-- no index led with: every deleted contact was a full scan of workflow_executions (on the event loop).
-- The (workflow_id, contact_id, status) index served one question, "may this contact enter this
-- workflow?", which the same columns with contact_id first serve as well; the WAIT_FOR_EVENT
-- look-up of the trigger consumer (status, contact_id, wait_event) uses it too.
DROP INDEX workflow_executions_contact;
CREATE INDEX workflow_executions_contact ON workflow_executions (contact_id, workflow_id, status);

-- Idempotency keys across instances (issue 32). A key row records the instance whose request holds it
-- (MAILSVC_INSTANCE_ID). At start-up an instance releases only its own unfinished keys (its previous run
-- died mid-request) and a peer's unfinished keys older than the lease (MAILSVC_LEASE: that peer died),
-- never a live peer's key whose request is still running.
ALTER TABLE idempotency_keys ADD COLUMN locked_by text;

-- The event feed: events get a monotonic sequence number so consumers (workflow triggers and waits,
-- outbound webhooks, ...) can follow the one events table as a durable log with a cursor each.
-- A sequence never reuses a number. seq order must be commit order (a consumer's cursor never passes an
-- event that commits later): events_seq_in_commit_order takes a transaction-wide advisory lock before
-- it numbers a row, so event-writing transactions commit one at a time, across instances too.
CREATE TABLE events_new (
  seq bigint PRIMARY KEY,
  id text COLLATE "C" NOT NULL UNIQUE,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id text COLLATE "C" NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  data jsonb,                              -- JSON object or NULL
  email_id text COLLATE "C",                          -- the email a system event is about
  created_at bigint NOT NULL
);
INSERT INTO events_new (id, project_id, contact_id, name, data, email_id, created_at)
  SELECT id, project_id, contact_id, name, data, email_id, created_at FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_project ON events (project_id, id);
CREATE INDEX events_project_name ON events (project_id, name, id);
CREATE INDEX events_contact ON events (contact_id, id);
CREATE INDEX events_project_email ON events (project_id, email_id) WHERE email_id IS NOT NULL;
CREATE SEQUENCE events_seq OWNED BY events.seq;
CREATE FUNCTION events_seq_in_commit_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(7411023002);
  IF NEW.seq IS NULL THEN NEW.seq := nextval('events_seq'); END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER events_seq_in_commit_order BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_seq_in_commit_order();
-- The per-project count of 006, on the new table.
CREATE TRIGGER events_count_insert AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_count_insert();
CREATE TRIGGER events_count_delete AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_count_delete();



-- One durable cursor per consumer: the last seq it has processed (moved in the transaction that
-- writes the consumer's effects).
CREATE TABLE event_cursors (
  consumer text COLLATE "C" PRIMARY KEY,
  last_seq bigint NOT NULL,
  updated_at bigint NOT NULL
);

-- The event feed: events get a monotonic sequence number so consumers (workflow triggers and waits,
-- outbound webhooks, ...) can follow the one events table as a durable log with a cursor each.
-- AUTOINCREMENT never reuses a number, even after the newest rows are deleted. One writer at a time
-- (SQLite) means seq order is commit order.
CREATE TABLE events_new (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  data TEXT,                              -- JSON object or NULL
  email_id TEXT,                          -- the email a system event is about
  created_at INTEGER NOT NULL
);
INSERT INTO events_new (id, project_id, contact_id, name, data, email_id, created_at)
  SELECT id, project_id, contact_id, name, data, email_id, created_at FROM events ORDER BY id;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_project ON events (project_id, id);
CREATE INDEX events_project_name ON events (project_id, name, id);
CREATE INDEX events_contact ON events (contact_id, id);
CREATE INDEX events_project_email ON events (project_id, email_id) WHERE email_id IS NOT NULL;
-- The per-project count of 006, on the new table.
CREATE TRIGGER events_count_insert AFTER INSERT ON events BEGIN
  INSERT INTO event_counts (project_id, total) VALUES (NEW.project_id, 1)
  ON CONFLICT (project_id) DO UPDATE SET total = total + 1;
END;
CREATE TRIGGER events_count_delete AFTER DELETE ON events BEGIN
  UPDATE event_counts SET total = total - 1 WHERE project_id = OLD.project_id;
END;

-- One durable cursor per consumer: the last seq it has processed (moved in the transaction that
-- writes the consumer's effects).
CREATE TABLE event_cursors (
  consumer TEXT PRIMARY KEY,
  last_seq INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Observability: a per-project count of activity (events) rows, so the first page of GET /activity
-- can carry its total without counting a million rows. Kept by triggers, like contact_counts.
CREATE TABLE event_counts (
  project_id TEXT PRIMARY KEY,
  total INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
INSERT INTO event_counts (project_id, total) SELECT project_id, count(*) FROM events GROUP BY project_id;
CREATE TRIGGER events_count_insert AFTER INSERT ON events BEGIN
  INSERT INTO event_counts (project_id, total) VALUES (NEW.project_id, 1)
  ON CONFLICT (project_id) DO UPDATE SET total = total + 1;
END;
CREATE TRIGGER events_count_delete AFTER DELETE ON events BEGIN
  UPDATE event_counts SET total = total - 1 WHERE project_id = OLD.project_id;
END;

-- Observability: a per-project count of activity (events) rows, so the first page of GET /activity
-- can carry its total without counting a million rows. Kept by triggers, like contact_counts.
CREATE TABLE event_counts (
  project_id text COLLATE "C" PRIMARY KEY,
  total bigint NOT NULL DEFAULT 0
) ;
INSERT INTO event_counts (project_id, total) SELECT project_id, count(*) FROM events GROUP BY project_id;

CREATE FUNCTION events_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_counts AS ec (project_id, total) VALUES (NEW.project_id, 1)
  ON CONFLICT (project_id) DO UPDATE SET total = ec.total + 1;
  RETURN NULL;
END $$;
CREATE FUNCTION events_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE event_counts SET total = total - 1 WHERE project_id = OLD.project_id;
  RETURN NULL;
END $$;
CREATE TRIGGER events_count_insert AFTER INSERT ON events FOR EACH ROW EXECUTE FUNCTION events_count_insert();
CREATE TRIGGER events_count_delete AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_count_delete();

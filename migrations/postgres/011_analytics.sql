-- Analytics: rollups, so every aggregate endpoint reads small tables instead of scanning events or
-- contacts. Backfilled here from existing rows.
--
-- event_rollup_hourly / event_rollup_daily / event_name_totals: events per project, per bucket
-- (start of the UTC hour / day, epoch ms), per event name; and per name all time. They are kept by
-- the event-feed consumer `analytics.rollups` (src/modules/analytics/rollup-consumer.ts), which
-- folds each batch of new events into a few upserts in the transaction that moves its cursor, so
-- the /v1/track write path pays nothing per event. Readers add the events after that cursor (the
-- unconsumed tail, normally empty) so every answer is exact. Every writer of `events` (track, send,
-- outbox outcomes, opens, clicks, segments, campaigns, workflows) feeds them without knowing it.
CREATE TABLE event_rollup_hourly (
  project_id text COLLATE "C" NOT NULL,
  bucket bigint NOT NULL,
  name text COLLATE "C" NOT NULL,
  count bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, bucket, name)
) ;
CREATE TABLE event_rollup_daily (
  project_id text COLLATE "C" NOT NULL,
  bucket bigint NOT NULL,
  name text COLLATE "C" NOT NULL,
  count bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, bucket, name)
) ;
-- Per project and name, all time: /events/names, /activity/types and the unfiltered /activity total.
CREATE TABLE event_name_totals (
  project_id text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  count bigint NOT NULL DEFAULT 0,
  last_at bigint NOT NULL,
  PRIMARY KEY (project_id, name)
) ;

INSERT INTO event_rollup_hourly (project_id, bucket, name, count)
  SELECT project_id, (created_at / 3600000) * 3600000, name, count(*) FROM events GROUP BY 1, 2, 3;
INSERT INTO event_rollup_daily (project_id, bucket, name, count)
  SELECT project_id, (created_at / 86400000) * 86400000, name, count(*) FROM events GROUP BY 1, 2, 3;
INSERT INTO event_name_totals (project_id, name, count, last_at)
  SELECT project_id, name, count(*), max(created_at) FROM events GROUP BY 1, 2;

-- The consumer's cursor starts where the backfill ends (same transaction): nothing counted twice.
INSERT INTO event_cursors (consumer, last_seq, updated_at)
  SELECT 'analytics.rollups', COALESCE(max(seq), 0), 0 FROM events WHERE true
  ON CONFLICT (consumer) DO UPDATE SET last_seq = excluded.last_seq;

-- event_name_totals (+ the tail) replaces event_counts (006/007) as the source of the unfiltered
-- /activity total: no trigger left on the event insert path.



DROP TRIGGER IF EXISTS events_count_insert ON events;
DROP TRIGGER IF EXISTS events_count_delete ON events;

-- Deletes (DELETE /events/:name, a contact's cascade, project reset) subtract what was counted: only
-- events the consumer has already folded in.


-- Custom contact fields: per project, data key and kind (the JSON type, with ISO-looking text
-- counted as 'date'), how many contacts have it. /contacts/fields reads types and coverage here.
CREATE TABLE contact_field_stats (
  project_id text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  kind text COLLATE "C" NOT NULL,
  n bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, key, kind)
) ;





-- Only keys whose presence or kind changed are written: a new value of the same kind costs two
-- json_each walks and no write.


-- Per campaign: emails sent, delivered, opened (first open, or first click without the pixel),
-- clicked (first click), bounced, complained; unique per email. Kept by the same consumer from the
-- email.* events (their email's campaign_id), so campaign figures need no scan of emails.
CREATE TABLE campaign_rollup (
  project_id text COLLATE "C" NOT NULL,
  campaign_id text COLLATE "C" NOT NULL,
  sent bigint NOT NULL DEFAULT 0,
  delivered bigint NOT NULL DEFAULT 0,
  opened bigint NOT NULL DEFAULT 0,
  clicked bigint NOT NULL DEFAULT 0,
  bounced bigint NOT NULL DEFAULT 0,
  complained bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, campaign_id)
) ;
INSERT INTO campaign_rollup (project_id, campaign_id, sent, delivered, opened, clicked, bounced, complained)
  SELECT e.project_id, m.campaign_id,
    count(DISTINCT CASE WHEN e.name = 'email.sent' THEN e.email_id END),
    count(DISTINCT CASE WHEN e.name = 'email.delivery' THEN e.email_id END),
    count(DISTINCT CASE WHEN e.name IN ('email.open', 'email.click') THEN e.email_id END),
    count(DISTINCT CASE WHEN e.name = 'email.click' THEN e.email_id END),
    count(DISTINCT CASE WHEN e.name = 'email.bounce' THEN e.email_id END),
    count(DISTINCT CASE WHEN e.name = 'email.complaint' THEN e.email_id END)
  FROM events e JOIN emails m ON m.id = e.email_id
  WHERE e.email_id IS NOT NULL AND m.campaign_id IS NOT NULL
  GROUP BY e.project_id, m.campaign_id;

CREATE FUNCTION events_rollup_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.seq <= (SELECT last_seq FROM event_cursors WHERE consumer = 'analytics.rollups') THEN
    UPDATE event_rollup_hourly SET count = count - 1
      WHERE project_id = OLD.project_id AND bucket = (OLD.created_at / 3600000) * 3600000 AND name = OLD.name;
    UPDATE event_rollup_daily SET count = count - 1
      WHERE project_id = OLD.project_id AND bucket = (OLD.created_at / 86400000) * 86400000 AND name = OLD.name;
    UPDATE event_name_totals SET count = count - 1 WHERE project_id = OLD.project_id AND name = OLD.name;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER events_rollup_delete AFTER DELETE ON events FOR EACH ROW EXECUTE FUNCTION events_rollup_delete();

-- The kind of a data value as SQLite's json_each names it (null, true, false, integer, real, text,
-- array, object), with ISO-looking text counted as 'date': what /contacts/fields reports.
CREATE FUNCTION mailsvc_json_kind(v jsonb) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(v)
    WHEN 'boolean' THEN v::text
    WHEN 'number' THEN CASE WHEN v::text ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END
    WHEN 'string' THEN CASE WHEN (v #>> '{}') ~ '^[0-9]{4}-[0-1][0-9]-[0-3][0-9]' THEN 'date' ELSE 'text' END
    ELSE jsonb_typeof(v) END
$$;
CREATE FUNCTION mailsvc_field_kinds(d jsonb) RETURNS TABLE (k text, kd text) LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT j.key, mailsvc_json_kind(j.value) FROM jsonb_each(CASE WHEN jsonb_typeof(d) = 'object' THEN d ELSE '{}'::jsonb END) j
$$;
CREATE FUNCTION contacts_fields_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO contact_field_stats AS s (project_id, key, kind, n)
    SELECT NEW.project_id, f.k, f.kd, 1 FROM mailsvc_field_kinds(NEW.data) f
  ON CONFLICT (project_id, key, kind) DO UPDATE SET n = s.n + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER contacts_fields_insert AFTER INSERT ON contacts FOR EACH ROW
  WHEN (NEW.data <> '{}'::jsonb) EXECUTE FUNCTION contacts_fields_insert();
CREATE FUNCTION contacts_fields_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE contact_field_stats s SET n = s.n - 1
  WHERE s.project_id = OLD.project_id AND (s.key, s.kind) IN (SELECT f.k, f.kd FROM mailsvc_field_kinds(OLD.data) f);
  RETURN NULL;
END $$;
CREATE TRIGGER contacts_fields_delete AFTER DELETE ON contacts FOR EACH ROW
  WHEN (OLD.data <> '{}'::jsonb) EXECUTE FUNCTION contacts_fields_delete();
-- Only keys whose presence or kind changed are written.
CREATE FUNCTION contacts_fields_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE contact_field_stats s SET n = s.n - 1
  WHERE s.project_id = OLD.project_id AND (s.key, s.kind) IN (
    SELECT f.k, f.kd FROM mailsvc_field_kinds(OLD.data) f EXCEPT SELECT g.k, g.kd FROM mailsvc_field_kinds(NEW.data) g);
  INSERT INTO contact_field_stats AS s (project_id, key, kind, n)
    SELECT NEW.project_id, x.k, x.kd, 1 FROM (
      SELECT f.k, f.kd FROM mailsvc_field_kinds(NEW.data) f EXCEPT SELECT g.k, g.kd FROM mailsvc_field_kinds(OLD.data) g) x
  ON CONFLICT (project_id, key, kind) DO UPDATE SET n = s.n + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER contacts_fields_update AFTER UPDATE OF data ON contacts FOR EACH ROW
  WHEN (OLD.data IS DISTINCT FROM NEW.data) EXECUTE FUNCTION contacts_fields_update();

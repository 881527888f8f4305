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
  project_id TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  name TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, bucket, name)
) WITHOUT ROWID;
CREATE TABLE event_rollup_daily (
  project_id TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  name TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, bucket, name)
) WITHOUT ROWID;
-- Per project and name, all time: /events/names, /activity/types and the unfiltered /activity total.
CREATE TABLE event_name_totals (
  project_id TEXT NOT NULL,
  name TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 0,
  last_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, name)
) WITHOUT ROWID;

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
DROP TRIGGER IF EXISTS events_count_insert;
DROP TRIGGER IF EXISTS events_count_delete;

-- Deletes (DELETE /events/:name, a contact's cascade, project reset) subtract what was counted: only
-- events the consumer has already folded in.
CREATE TRIGGER events_rollup_delete AFTER DELETE ON events
WHEN OLD.seq <= (SELECT last_seq FROM event_cursors WHERE consumer = 'analytics.rollups') BEGIN
  UPDATE event_rollup_hourly SET count = count - 1
    WHERE project_id = OLD.project_id AND bucket = (OLD.created_at / 3600000) * 3600000 AND name = OLD.name;
  UPDATE event_rollup_daily SET count = count - 1
    WHERE project_id = OLD.project_id AND bucket = (OLD.created_at / 86400000) * 86400000 AND name = OLD.name;
  UPDATE event_name_totals SET count = count - 1 WHERE project_id = OLD.project_id AND name = OLD.name;
END;

-- Custom contact fields: per project, data key and kind (the JSON type, with ISO-looking text
-- counted as 'date'), how many contacts have it. /contacts/fields reads types and coverage here.
CREATE TABLE contact_field_stats (
  project_id TEXT NOT NULL,
  key TEXT NOT NULL,
  kind TEXT NOT NULL,
  n INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, key, kind)
) WITHOUT ROWID;

INSERT INTO contact_field_stats (project_id, key, kind, n)
  SELECT c.project_id, j.key,
    CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END,
    count(*)
  FROM contacts c, json_each(c.data) j GROUP BY 1, 2, 3;

CREATE TRIGGER contacts_fields_insert AFTER INSERT ON contacts WHEN NEW.data <> '{}' BEGIN
  INSERT INTO contact_field_stats (project_id, key, kind, n)
    SELECT NEW.project_id, j.key,
      CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END, 1
    FROM json_each(NEW.data) j WHERE true
  ON CONFLICT (project_id, key, kind) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER contacts_fields_delete AFTER DELETE ON contacts WHEN OLD.data <> '{}' BEGIN
  UPDATE contact_field_stats SET n = n - 1
  WHERE project_id = OLD.project_id AND (key, kind) IN (
    SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
    FROM json_each(OLD.data) j);
END;
-- Only keys whose presence or kind changed are written: a new value of the same kind costs two
-- json_each walks and no write.
CREATE TRIGGER contacts_fields_update AFTER UPDATE OF data ON contacts WHEN OLD.data <> NEW.data BEGIN
  UPDATE contact_field_stats SET n = n - 1
  WHERE project_id = OLD.project_id AND (key, kind) IN (
    SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
    FROM json_each(OLD.data) j
    EXCEPT
    SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
    FROM json_each(NEW.data) j);
  INSERT INTO contact_field_stats (project_id, key, kind, n)
    SELECT NEW.project_id, x.key, x.kind, 1 FROM (
      SELECT j.key AS key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END AS kind
      FROM json_each(NEW.data) j
      EXCEPT
      SELECT j.key, CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END
      FROM json_each(OLD.data) j) x WHERE true
  ON CONFLICT (project_id, key, kind) DO UPDATE SET n = n + 1;
END;

-- Per campaign: emails sent, delivered, opened (first open, or first click without the pixel),
-- clicked (first click), bounced, complained; unique per email. Kept by the same consumer from the
-- email.* events (their email's campaign_id), so campaign figures need no scan of emails.
CREATE TABLE campaign_rollup (
  project_id TEXT NOT NULL,
  campaign_id TEXT NOT NULL,
  sent INTEGER NOT NULL DEFAULT 0,
  delivered INTEGER NOT NULL DEFAULT 0,
  opened INTEGER NOT NULL DEFAULT 0,
  clicked INTEGER NOT NULL DEFAULT 0,
  bounced INTEGER NOT NULL DEFAULT 0,
  complained INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, campaign_id)
) WITHOUT ROWID;
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

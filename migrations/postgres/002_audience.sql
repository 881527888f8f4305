-- Audience: contacts, the one events table (client and system events), per-project contact counters
-- and the uploaded CSV files of imports. Times are epoch ms; ids are UUIDv7 text.

CREATE TABLE contacts (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email text COLLATE "C" NOT NULL,                    -- stored lower-case
  subscribed bigint NOT NULL DEFAULT 1,  -- 0 | 1
  data jsonb NOT NULL DEFAULT '{}',        -- JSON object of custom fields
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
-- Upsert by email, sort=email lists (email is unique in a project, so it is a total order) and the
-- search count (an index-only scan of the emails).
CREATE UNIQUE INDEX contacts_project_email ON contacts (project_id, email);
-- sort=createdAt lists; email is carried along so a search walks the index without touching rows.
CREATE INDEX contacts_project_created ON contacts (project_id, created_at, id, email);

-- Totals of the unfiltered and subscribed-filtered contact lists without counting a million rows.
CREATE TABLE contact_counts (
  project_id text COLLATE "C" PRIMARY KEY,
  total bigint NOT NULL DEFAULT 0,
  subscribed bigint NOT NULL DEFAULT 0
) ;




-- Client events (/v1/track) and system events (contact.subscribed, email.*, segment.<slug>.entry …).
-- Ids are UUIDv7 taken from the service clock, so id order is time order (cursors and windows use it).
CREATE TABLE events (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id text COLLATE "C" NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  data jsonb,                              -- JSON object or NULL
  email_id text COLLATE "C",                          -- the email a system event is about
  created_at bigint NOT NULL
);
CREATE INDEX events_project ON events (project_id, id);
CREATE INDEX events_project_name ON events (project_id, name, id);
CREATE INDEX events_contact ON events (contact_id, id);
CREATE INDEX events_project_email ON events (project_id, email_id) WHERE email_id IS NOT NULL;

-- The uploaded CSV of an import job, kept until the job completes so a restart can resume it.
CREATE TABLE contact_imports (
  job_id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  filename text COLLATE "C",
  size bigint NOT NULL,
  content text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX contact_imports_project ON contact_imports (project_id);

-- contact_counts kept by row triggers (SQLite's contacts_count_* in plpgsql).
CREATE FUNCTION contacts_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO contact_counts AS cc (project_id, total, subscribed) VALUES (NEW.project_id, 1, NEW.subscribed)
  ON CONFLICT (project_id) DO UPDATE SET total = cc.total + 1, subscribed = cc.subscribed + excluded.subscribed;
  RETURN NULL;
END $$;
CREATE TRIGGER contacts_count_insert AFTER INSERT ON contacts FOR EACH ROW EXECUTE FUNCTION contacts_count_insert();
CREATE FUNCTION contacts_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE contact_counts SET total = total - 1, subscribed = subscribed - OLD.subscribed WHERE project_id = OLD.project_id;
  RETURN NULL;
END $$;
CREATE TRIGGER contacts_count_delete AFTER DELETE ON contacts FOR EACH ROW EXECUTE FUNCTION contacts_count_delete();
CREATE FUNCTION contacts_count_subscribed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE contact_counts SET subscribed = subscribed + NEW.subscribed - OLD.subscribed WHERE project_id = NEW.project_id;
  RETURN NULL;
END $$;
CREATE TRIGGER contacts_count_subscribed AFTER UPDATE OF subscribed ON contacts FOR EACH ROW
  WHEN (OLD.subscribed <> NEW.subscribed) EXECUTE FUNCTION contacts_count_subscribed();

-- Audience: contacts, the one events table (client and system events), per-project contact counters
-- and the uploaded CSV files of imports. Times are epoch ms; ids are UUIDv7 text.

CREATE TABLE contacts (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email TEXT NOT NULL,                    -- stored lower-case
  subscribed INTEGER NOT NULL DEFAULT 1,  -- 0 | 1
  data TEXT NOT NULL DEFAULT '{}',        -- JSON object of custom fields
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
-- Upsert by email, sort=email lists (email is unique in a project, so it is a total order) and the
-- search count (an index-only scan of the emails).
CREATE UNIQUE INDEX contacts_project_email ON contacts (project_id, email);
-- sort=createdAt lists; email is carried along so a search walks the index without touching rows.
CREATE INDEX contacts_project_created ON contacts (project_id, created_at, id, email);

-- Totals of the unfiltered and subscribed-filtered contact lists without counting a million rows.
CREATE TABLE contact_counts (
  project_id TEXT PRIMARY KEY,
  total INTEGER NOT NULL DEFAULT 0,
  subscribed INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TRIGGER contacts_count_insert AFTER INSERT ON contacts BEGIN
  INSERT INTO contact_counts (project_id, total, subscribed) VALUES (NEW.project_id, 1, NEW.subscribed)
  ON CONFLICT (project_id) DO UPDATE SET total = total + 1, subscribed = subscribed + excluded.subscribed;
END;
CREATE TRIGGER contacts_count_delete AFTER DELETE ON contacts BEGIN
  UPDATE contact_counts SET total = total - 1, subscribed = subscribed - OLD.subscribed WHERE project_id = OLD.project_id;
END;
CREATE TRIGGER contacts_count_subscribed AFTER UPDATE OF subscribed ON contacts WHEN OLD.subscribed <> NEW.subscribed BEGIN
  UPDATE contact_counts SET subscribed = subscribed + NEW.subscribed - OLD.subscribed WHERE project_id = NEW.project_id;
END;

-- Client events (/v1/track) and system events (contact.subscribed, email.*, segment.<slug>.entry …).
-- Ids are UUIDv7 taken from the service clock, so id order is time order (cursors and windows use it).
CREATE TABLE events (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  data TEXT,                              -- JSON object or NULL
  email_id TEXT,                          -- the email a system event is about
  created_at INTEGER NOT NULL
);
CREATE INDEX events_project ON events (project_id, id);
CREATE INDEX events_project_name ON events (project_id, name, id);
CREATE INDEX events_contact ON events (contact_id, id);
CREATE INDEX events_project_email ON events (project_id, email_id) WHERE email_id IS NOT NULL;

-- The uploaded CSV of an import job, kept until the job completes so a restart can resume it.
CREATE TABLE contact_imports (
  job_id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  filename TEXT,
  size INTEGER NOT NULL,
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX contact_imports_project ON contact_imports (project_id);

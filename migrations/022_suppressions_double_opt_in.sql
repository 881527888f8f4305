-- Issue 34: a suppression list users manage, and double opt-in.
-- Suppressions get an id (GET/DELETE /suppressions/:id), upper-case reasons
-- (HARD_BOUNCE | COMPLAINT | MANUAL | UNSUBSCRIBE) and where each came from: source EMAIL (email_id,
-- a bounce or complaint), API (POST /suppressions, the dashboard) or IMPORT (job_id, a CSV import).
ALTER TABLE suppressions ADD COLUMN id TEXT;
ALTER TABLE suppressions ADD COLUMN source TEXT NOT NULL DEFAULT 'EMAIL';
ALTER TABLE suppressions ADD COLUMN job_id TEXT;
UPDATE suppressions SET id = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(2)) || '-' || hex(randomblob(6)));
UPDATE suppressions SET reason = CASE reason WHEN 'bounce' THEN 'HARD_BOUNCE' WHEN 'complaint' THEN 'COMPLAINT' WHEN 'manual' THEN 'MANUAL' ELSE upper(reason) END;
CREATE UNIQUE INDEX suppressions_id ON suppressions (id);
CREATE INDEX suppressions_project_created ON suppressions (project_id, created_at, id);

-- Double opt-in: the project's setting, the contact's pending state and the confirmation links.
ALTER TABLE projects ADD COLUMN double_opt_in INTEGER NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN double_opt_in_template_id TEXT;
ALTER TABLE projects ADD COLUMN double_opt_in_redirect_url TEXT;
ALTER TABLE contacts ADD COLUMN pending_confirmation INTEGER NOT NULL DEFAULT 0;
ALTER TABLE contacts ADD COLUMN confirmation_sent_at INTEGER;

-- One row per confirmation email: the signed confirmUrl names the row; confirmed_at makes it single use.
CREATE TABLE contact_confirmations (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id TEXT NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  email_id TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  confirmed_at INTEGER
);
CREATE INDEX contact_confirmations_contact ON contact_confirmations (contact_id);
CREATE INDEX contact_confirmations_project ON contact_confirmations (project_id);

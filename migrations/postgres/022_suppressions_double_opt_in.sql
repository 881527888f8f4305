-- Issue 34: a suppression list users manage, and double opt-in (PostgreSQL twin of 022).
-- Suppressions get an id (GET/DELETE /suppressions/:id), upper-case reasons
-- (HARD_BOUNCE | COMPLAINT | MANUAL | UNSUBSCRIBE) and where each came from: source EMAIL (email_id,
-- a bounce or complaint), API (POST /suppressions, the dashboard) or IMPORT (job_id, a CSV import).
ALTER TABLE suppressions ADD COLUMN id text COLLATE "C";
ALTER TABLE suppressions ADD COLUMN source text COLLATE "C" NOT NULL DEFAULT 'EMAIL';
ALTER TABLE suppressions ADD COLUMN job_id text COLLATE "C";
UPDATE suppressions SET id = gen_random_uuid()::text;
UPDATE suppressions SET reason = CASE reason WHEN 'bounce' THEN 'HARD_BOUNCE' WHEN 'complaint' THEN 'COMPLAINT' WHEN 'manual' THEN 'MANUAL' ELSE upper(reason) END;
CREATE UNIQUE INDEX suppressions_id ON suppressions (id);
CREATE INDEX suppressions_project_created ON suppressions (project_id, created_at, id);

-- Double opt-in: the project's setting, the contact's pending state and the confirmation links.
ALTER TABLE projects ADD COLUMN double_opt_in bigint NOT NULL DEFAULT 0;
ALTER TABLE projects ADD COLUMN double_opt_in_template_id text COLLATE "C";
ALTER TABLE projects ADD COLUMN double_opt_in_redirect_url text COLLATE "C";
ALTER TABLE contacts ADD COLUMN pending_confirmation bigint NOT NULL DEFAULT 0;
ALTER TABLE contacts ADD COLUMN confirmation_sent_at bigint;

-- One row per confirmation email: the signed confirmUrl names the row; confirmed_at makes it single use.
CREATE TABLE contact_confirmations (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  contact_id text COLLATE "C" NOT NULL REFERENCES contacts(id) ON DELETE CASCADE,
  email_id text COLLATE "C",
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  confirmed_at bigint
);
CREATE INDEX contact_confirmations_contact ON contact_confirmations (contact_id);
CREATE INDEX contact_confirmations_project ON contact_confirmations (project_id);

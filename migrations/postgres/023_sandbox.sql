-- PostgreSQL twin of migrations/023_sandbox.sql (see there).
ALTER TABLE projects ADD COLUMN sandbox bigint NOT NULL DEFAULT 0;
ALTER TABLE emails ADD COLUMN sandbox bigint NOT NULL DEFAULT 0;
CREATE TABLE email_raw (
  email_id text COLLATE "C" PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  project_id text COLLATE "C" REFERENCES projects(id) ON DELETE CASCADE,
  raw BYTEA NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX email_raw_project ON email_raw (project_id);

-- The sandbox (decisions.md "Sandbox: try everything without DNS"): a sandbox project's mail is built,
-- signed and tracked as for real, then captured instead of handed to an MX.
-- projects.sandbox: 1 for a sandbox project (MAILSVC_SANDBOX=true makes every project one).
-- emails.sandbox: 1 for an email captured by the sandbox (never sent; not counted by reputation or metrics).
-- email_raw: the exact message as handed to SMTP, kept for GET /emails/:id/raw (sandbox mail always,
-- other mail only with MAILSVC_KEEP_RAW); the latest attempt's bytes.
ALTER TABLE projects ADD COLUMN sandbox INTEGER NOT NULL DEFAULT 0;
ALTER TABLE emails ADD COLUMN sandbox INTEGER NOT NULL DEFAULT 0;
CREATE TABLE email_raw (
  email_id TEXT PRIMARY KEY REFERENCES emails(id) ON DELETE CASCADE,
  project_id TEXT REFERENCES projects(id) ON DELETE CASCADE,
  raw BLOB NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX email_raw_project ON email_raw (project_id);

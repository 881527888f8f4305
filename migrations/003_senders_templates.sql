-- Senders and templates: sender domains with their DKIM keys, and reusable email templates.

-- A sender domain of a project. The DKIM private key lives here (one-file backup).
-- status: PENDING (records not seen yet) | VERIFIED (DKIM record matches) | FAILED (wrong or vanished record).
-- records: JSON array of the DNS records to publish, each with its own status (see domains/records.ts).
CREATE TABLE domains (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  domain TEXT NOT NULL,                 -- lower-case, no trailing dot
  status TEXT NOT NULL DEFAULT 'PENDING',
  dkim_selector TEXT NOT NULL,
  dkim_private_key TEXT NOT NULL,       -- PKCS#8 PEM
  dkim_public_key TEXT NOT NULL,        -- base64 SPKI (the p= tag)
  records TEXT NOT NULL DEFAULT '[]',
  verified_at INTEGER,
  last_checked_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX domains_project_domain ON domains (project_id, domain);
CREATE INDEX domains_project_created ON domains (project_id, created_at);

CREATE TABLE templates (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  from_email TEXT NOT NULL,
  from_name TEXT,
  reply_to TEXT,
  type TEXT NOT NULL DEFAULT 'MARKETING',   -- TRANSACTIONAL | MARKETING | HEADLESS
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
-- The offset list sorts by one of these within a project (optionally filtered by type); id breaks ties.
CREATE INDEX templates_project_created ON templates (project_id, created_at, id);
CREATE INDEX templates_project_updated ON templates (project_id, updated_at, id);
CREATE INDEX templates_project_name ON templates (project_id, name COLLATE NOCASE, id);
CREATE INDEX templates_project_type ON templates (project_id, type, created_at, id);

-- Senders and templates: sender domains with their DKIM keys, and reusable email templates.

-- A sender domain of a project. The DKIM private key lives here (one-file backup).
-- status: PENDING (records not seen yet) | VERIFIED (DKIM record matches) | FAILED (wrong or vanished record).
-- records: JSON array of the DNS records to publish, each with its own status (see domains/records.ts).
CREATE TABLE domains (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  domain text COLLATE "C" NOT NULL,                 -- lower-case, no trailing dot
  status text COLLATE "C" NOT NULL DEFAULT 'PENDING',
  dkim_selector text COLLATE "C" NOT NULL,
  dkim_private_key text COLLATE "C" NOT NULL,       -- PKCS#8 PEM
  dkim_public_key text COLLATE "C" NOT NULL,        -- base64 SPKI (the p= tag)
  records text COLLATE "C" NOT NULL DEFAULT '[]',
  verified_at bigint,
  last_checked_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX domains_project_domain ON domains (project_id, domain);
CREATE INDEX domains_project_created ON domains (project_id, created_at);

CREATE TABLE templates (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  description text COLLATE "C",
  subject text COLLATE "C" NOT NULL,
  body text COLLATE "C" NOT NULL,
  from_email text COLLATE "C" NOT NULL,
  from_name text COLLATE "C",
  reply_to text COLLATE "C",
  type text COLLATE "C" NOT NULL DEFAULT 'MARKETING',   -- TRANSACTIONAL | MARKETING | HEADLESS
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
-- The offset list sorts by one of these within a project (optionally filtered by type); id breaks ties.
CREATE INDEX templates_project_created ON templates (project_id, created_at, id);
CREATE INDEX templates_project_updated ON templates (project_id, updated_at, id);
CREATE INDEX templates_project_name ON templates (project_id, lower(name), id);
CREATE INDEX templates_project_type ON templates (project_id, type, created_at, id);

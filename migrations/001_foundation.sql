-- Foundation: settings, accounts, projects, membership, account tokens, idempotency, durable jobs.
-- Times are epoch milliseconds; ids are UUIDv7 text.

CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL,
  password_hash TEXT NOT NULL,
  email_verified_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (email COLLATE NOCASE);

CREATE TABLE projects (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  public_key TEXT NOT NULL,
  secret_key TEXT NOT NULL,
  disabled INTEGER NOT NULL DEFAULT 0,
  disabled_reason TEXT,
  tracking TEXT NOT NULL DEFAULT 'ENABLED',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX projects_public_key ON projects (public_key);
CREATE UNIQUE INDEX projects_secret_key ON projects (secret_key);

CREATE TABLE project_members (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members (user_id);

-- Single-use, expiring tokens for email verification and password reset (only the hash is stored).
CREATE TABLE account_tokens (
  token_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  used_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX account_tokens_user ON account_tokens (user_id, kind);

-- One row per (project, Idempotency-Key). Inserted before the work runs, so a concurrent duplicate loses the insert.
CREATE TABLE idempotency_keys (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  status_code INTEGER,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- The durable job loop. state: waiting | active | completed | failed.
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  type TEXT NOT NULL,
  project_id TEXT REFERENCES projects(id) ON DELETE CASCADE,
  state TEXT NOT NULL DEFAULT 'waiting',
  payload TEXT NOT NULL DEFAULT '{}',
  checkpoint TEXT,
  progress INTEGER NOT NULL DEFAULT 0,
  result TEXT,
  error TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 5,
  run_at INTEGER NOT NULL,
  lease_until INTEGER,
  dedupe_key TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX jobs_due ON jobs (state, run_at);
CREATE INDEX jobs_project ON jobs (project_id, type, created_at);
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL AND state = 'waiting';

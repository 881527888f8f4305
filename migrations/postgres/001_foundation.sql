-- PostgreSQL twins of migrations/*.sql: the same names, applied in the same order, the same tables,
-- columns, indexes and trigger-kept counters. Conventions (the application code is shared):
-- - text columns are COLLATE "C": byte order, as SQLite's BINARY (ids are time-ordered UUIDv7 text and
--   cursors compare them; a locale collation would order them differently). Ids stay text, not uuid: a
--   malformed id in a URL simply matches nothing, as on SQLite.
-- - integers are bigint (epoch milliseconds, counters, 0/1 flags; the driver reads int8 as a number);
--   contacts.data and events.data are jsonb (read back as text; key order and spacing normalised).
-- - SQLite's triggers are plpgsql row triggers with the same names.
-- Foundation: settings, accounts, projects, membership, account tokens, idempotency, durable jobs.
-- Times are epoch milliseconds; ids are UUIDv7 text.

CREATE TABLE settings (
  key text COLLATE "C" PRIMARY KEY,
  value text COLLATE "C" NOT NULL
);

CREATE TABLE users (
  id text COLLATE "C" PRIMARY KEY,
  email text COLLATE "C" NOT NULL,
  password_hash text COLLATE "C" NOT NULL,
  email_verified_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX users_email ON users (lower(email));

CREATE TABLE projects (
  id text COLLATE "C" PRIMARY KEY,
  name text COLLATE "C" NOT NULL,
  public_key text COLLATE "C" NOT NULL,
  secret_key text COLLATE "C" NOT NULL,
  disabled bigint NOT NULL DEFAULT 0,
  disabled_reason text COLLATE "C",
  tracking text COLLATE "C" NOT NULL DEFAULT 'ENABLED',
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE UNIQUE INDEX projects_public_key ON projects (public_key);
CREATE UNIQUE INDEX projects_secret_key ON projects (secret_key);

CREATE TABLE project_members (
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id text COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user ON project_members (user_id);

-- Single-use, expiring tokens for email verification and password reset (only the hash is stored).
CREATE TABLE account_tokens (
  token_hash text COLLATE "C" PRIMARY KEY,
  user_id text COLLATE "C" NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  kind text COLLATE "C" NOT NULL,
  expires_at bigint NOT NULL,
  used_at bigint,
  created_at bigint NOT NULL
);
CREATE INDEX account_tokens_user ON account_tokens (user_id, kind);

-- One row per (project, Idempotency-Key). Inserted before the work runs, so a concurrent duplicate loses the insert.
CREATE TABLE idempotency_keys (
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  key text COLLATE "C" NOT NULL,
  method text COLLATE "C" NOT NULL,
  path text COLLATE "C" NOT NULL,
  status_code bigint,
  created_at bigint NOT NULL,
  PRIMARY KEY (project_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- The durable job loop. state: waiting | active | completed | failed.
CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  type text COLLATE "C" NOT NULL,
  project_id text COLLATE "C" REFERENCES projects(id) ON DELETE CASCADE,
  state text COLLATE "C" NOT NULL DEFAULT 'waiting',
  payload text COLLATE "C" NOT NULL DEFAULT '{}',
  checkpoint text COLLATE "C",
  progress bigint NOT NULL DEFAULT 0,
  result text COLLATE "C",
  error text COLLATE "C",
  attempts bigint NOT NULL DEFAULT 0,
  max_attempts bigint NOT NULL DEFAULT 5,
  run_at bigint NOT NULL,
  lease_until bigint,
  dedupe_key text COLLATE "C",
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  finished_at bigint
);
CREATE INDEX jobs_due ON jobs (state, run_at);
CREATE INDEX jobs_project ON jobs (project_id, type, created_at);
CREATE UNIQUE INDEX jobs_dedupe ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL AND state = 'waiting';

-- Epoch milliseconds of a stored date string, or NULL: the condition compiler's dateMs (src/db/dialect/postgres.ts).
-- The same reading as the in-memory evaluator (src/audience/conditions/values.ts dateText) and SQLite's
-- julianday(): YYYY-MM-DD, optionally THH:MM[:SS[.fff]] and Z or +-HH:MM (UTC without a zone); a day past
-- the month's end rolls over; never raises.
CREATE FUNCTION mailsvc_date_ms(t text) RETURNS double precision LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  m text[];
  y bigint; mo int; d int; h int; mi int; s int;
  yy bigint; era bigint; yoe bigint; mp int; doy bigint; days bigint;
  ms double precision; th int; tm int; sign int;
BEGIN
  m := regexp_match(t, '^([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[T ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]+))?)?)?(?:\s*(Z|[+-][0-9]{2}:[0-9]{2}))?$', 'i');
  IF m IS NULL THEN RETURN NULL; END IF;
  y := m[1]::bigint; mo := m[2]::int; d := m[3]::int;
  h := coalesce(m[4], '0')::int; mi := coalesce(m[5], '0')::int; s := coalesce(m[6], '0')::int;
  IF mo < 1 OR mo > 12 OR d < 1 OR d > 31 OR h > 24 OR mi > 59 OR s > 59 THEN RETURN NULL; END IF;
  -- Days from 1970-01-01 to the first of the month (proleptic Gregorian), then the day's offset.
  yy := y - CASE WHEN mo <= 2 THEN 1 ELSE 0 END;
  era := floor(yy / 400.0);
  yoe := yy - era * 400;
  mp := (mo + 9) % 12;
  doy := (153 * mp + 2) / 5;
  days := era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468 + (d - 1);
  ms := days * 86400000.0 + h * 3600000.0 + mi * 60000.0 + s * 1000.0;
  IF m[7] IS NOT NULL THEN ms := ms + round(('0.' || m[7])::numeric * 1000); END IF;
  IF m[8] IS NOT NULL AND upper(m[8]) <> 'Z' THEN
    sign := CASE WHEN left(m[8], 1) = '-' THEN -1 ELSE 1 END;
    th := substr(m[8], 2, 2)::int; tm := substr(m[8], 5, 2)::int;
    IF th > 14 OR tm > 59 THEN RETURN NULL; END IF;
    ms := ms - sign * (th * 60 + tm) * 60000.0;
  END IF;
  RETURN ms;
END
$$;

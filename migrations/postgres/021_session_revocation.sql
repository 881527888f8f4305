-- Ending sessions (the session is a signed JWT, so it is refused by a lookup): GET /auth/logout stores the
-- digest of the session token it ends until the token would have expired anyway; a password reset sets
-- users.sessions_valid_after and every session issued before it (claim `ia`, service-clock ms) is refused.
CREATE TABLE revoked_sessions (
  token_hash text COLLATE "C" PRIMARY KEY,
  expires_at bigint NOT NULL
);
CREATE INDEX revoked_sessions_expires ON revoked_sessions (expires_at);
ALTER TABLE users ADD COLUMN sessions_valid_after bigint;

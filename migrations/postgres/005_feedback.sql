-- Feedback loop (opens, clicks, subscription pages, bounces, complaints, inbound mail).
-- It writes to emails, suppressions, contacts and events; its own state is the tracked links.

-- Every URL a tracked message links to, stored once per project: a click token names the email
-- and the link's hash (8 bytes of SHA-256 of the URL), which keeps tracked links short.
CREATE TABLE tracked_links (
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  hash text COLLATE "C" NOT NULL,
  url text COLLATE "C" NOT NULL,
  created_at bigint NOT NULL,
  PRIMARY KEY (project_id, hash)
) ;

-- The inbound listener looks sender domains up by name at RCPT time (any project): index that.
CREATE INDEX domains_domain_status ON domains (domain, status);

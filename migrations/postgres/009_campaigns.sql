-- Campaigns: one row per campaign; its emails are ordinary outbox rows (emails.campaign_id) that
-- share one email_contents row (content_id), written by the fan-out job in id-ordered batches.
CREATE TABLE campaigns (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name text COLLATE "C" NOT NULL,
  description text COLLATE "C",
  subject text COLLATE "C" NOT NULL,
  body text COLLATE "C" NOT NULL,
  from_email text COLLATE "C" NOT NULL,
  from_name text COLLATE "C",
  reply_to text COLLATE "C",
  type text COLLATE "C" NOT NULL DEFAULT 'MARKETING',       -- TRANSACTIONAL | MARKETING | HEADLESS
  status text COLLATE "C" NOT NULL DEFAULT 'DRAFT',         -- DRAFT | SCHEDULED | SENDING | SENT | CANCELLED
  audience_type text COLLATE "C" NOT NULL,                  -- ALL | SEGMENT | FILTERED
  segment_id text COLLATE "C",
  audience_condition text COLLATE "C",                      -- JSON condition tree (FILTERED)
  template_id text COLLATE "C",                             -- the template the campaign was made from, if any
  scheduled_for bigint,
  content_id text COLLATE "C",                              -- email_contents row prepared once when sending starts
  fanout_last_id text COLLATE "C",                          -- keyset checkpoint: last contact id written (moved with each batch)
  fanout_done bigint NOT NULL DEFAULT 0,
  total_recipients bigint NOT NULL DEFAULT 0,
  sent_at bigint,
  completed_at bigint,
  cancelled_at bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX campaigns_project_created ON campaigns (project_id, created_at, id);
CREATE INDEX campaigns_project_status ON campaigns (project_id, status);
CREATE INDEX campaigns_segment ON campaigns (segment_id) WHERE segment_id IS NOT NULL;

-- Each contact gets at most one email per campaign, whatever happens (restart, kill -9).
CREATE UNIQUE INDEX emails_campaign_contact ON emails (campaign_id, contact_id) WHERE campaign_id IS NOT NULL;

-- Outbox priority: 0 transactional/workflow/system, 1 campaign mail (claimed after every due 0).
ALTER TABLE emails ADD COLUMN priority bigint NOT NULL DEFAULT 0;
CREATE INDEX emails_due_priority ON emails (priority, next_attempt_at) WHERE status IN ('PENDING', 'DEFERRED');
-- The claim now seeks (priority, next_attempt_at); the old due index would only cost every insert.
DROP INDEX emails_due;

-- A campaign's test send is never tracked (no pixel, no rewritten links), whatever the project's mode.
ALTER TABLE email_contents ADD COLUMN no_tracking bigint NOT NULL DEFAULT 0;

-- The fan-out walks a project's contacts in id order.
CREATE INDEX contacts_project_id ON contacts (project_id, id);

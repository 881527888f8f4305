-- Campaigns: one row per campaign; its emails are ordinary outbox rows (emails.campaign_id) that
-- share one email_contents row (content_id), written by the fan-out job in id-ordered batches.
CREATE TABLE campaigns (
  id TEXT PRIMARY KEY,
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  description TEXT,
  subject TEXT NOT NULL,
  body TEXT NOT NULL,
  from_email TEXT NOT NULL,
  from_name TEXT,
  reply_to TEXT,
  type TEXT NOT NULL DEFAULT 'MARKETING',       -- TRANSACTIONAL | MARKETING | HEADLESS
  status TEXT NOT NULL DEFAULT 'DRAFT',         -- DRAFT | SCHEDULED | SENDING | SENT | CANCELLED
  audience_type TEXT NOT NULL,                  -- ALL | SEGMENT | FILTERED
  segment_id TEXT,
  audience_condition TEXT,                      -- JSON condition tree (FILTERED)
  template_id TEXT,                             -- the template the campaign was made from, if any
  scheduled_for INTEGER,
  content_id TEXT,                              -- email_contents row prepared once when sending starts
  fanout_last_id TEXT,                          -- keyset checkpoint: last contact id written (moved with each batch)
  fanout_done INTEGER NOT NULL DEFAULT 0,
  total_recipients INTEGER NOT NULL DEFAULT 0,
  sent_at INTEGER,
  completed_at INTEGER,
  cancelled_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX campaigns_project_created ON campaigns (project_id, created_at, id);
CREATE INDEX campaigns_project_status ON campaigns (project_id, status);
CREATE INDEX campaigns_segment ON campaigns (segment_id) WHERE segment_id IS NOT NULL;

-- Each contact gets at most one email per campaign, whatever happens (restart, kill -9).
CREATE UNIQUE INDEX emails_campaign_contact ON emails (campaign_id, contact_id) WHERE campaign_id IS NOT NULL;

-- Outbox priority: 0 transactional/workflow/system, 1 campaign mail (claimed after every due 0).
ALTER TABLE emails ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
CREATE INDEX emails_due_priority ON emails (priority, next_attempt_at) WHERE status IN ('PENDING', 'DEFERRED');
-- The claim now seeks (priority, next_attempt_at); the old due index would only cost every insert.
DROP INDEX emails_due;

-- A campaign's test send is never tracked (no pixel, no rewritten links), whatever the project's mode.
ALTER TABLE email_contents ADD COLUMN no_tracking INTEGER NOT NULL DEFAULT 0;

-- The fan-out walks a project's contacts in id order.
CREATE INDEX contacts_project_id ON contacts (project_id, id);

-- Delivery: the outbox. Email rows ARE the queue (status + next_attempt_at + lease).
-- Content is stored once per send/campaign (email_contents) and rendered per recipient at delivery
-- time from the email's own vars, so a 100k-recipient campaign is 100k small rows, not 100k bodies.
-- project_id is NULL only for the server's own account emails (source_type SYSTEM: verification,
-- password reset), which belong to no tenant.

CREATE TABLE email_contents (
  id TEXT PRIMARY KEY,
  project_id TEXT REFERENCES projects(id) ON DELETE CASCADE,
  subject TEXT NOT NULL,            -- template source
  html TEXT NOT NULL,               -- template source
  text TEXT,                        -- template source of the plain-text part (NULL: derived from the rendered HTML)
  from_email TEXT NOT NULL,
  from_name TEXT,
  reply_to TEXT,
  type TEXT NOT NULL DEFAULT 'TRANSACTIONAL',   -- TRANSACTIONAL | MARKETING | HEADLESS
  headers TEXT,                     -- JSON object of custom headers
  attachments TEXT,                 -- JSON array [{ filename, content (base64), contentType, contentId?, disposition? }]
  created_at INTEGER NOT NULL
);
CREATE INDEX email_contents_project ON email_contents (project_id);

CREATE TABLE emails (
  id TEXT PRIMARY KEY,
  project_id TEXT REFERENCES projects(id) ON DELETE CASCADE,
  content_id TEXT NOT NULL REFERENCES email_contents(id) ON DELETE CASCADE,
  contact_id TEXT,
  to_email TEXT NOT NULL,
  to_name TEXT,
  vars TEXT,                        -- JSON: render variables of this recipient (incl. non-persistent data)
  status TEXT NOT NULL,             -- PENDING SENDING SENT DELIVERED DEFERRED OPENED CLICKED BOUNCED COMPLAINED FAILED SUPPRESSED CANCELLED
  source_type TEXT NOT NULL,        -- TRANSACTIONAL | CAMPAIGN | WORKFLOW | SYSTEM
  campaign_id TEXT,
  template_id TEXT,
  workflow_execution_id TEXT,
  message_id TEXT,                  -- RFC 5322 Message-ID we assigned, with angle brackets: <emailId@MAILSVC_HOSTNAME>
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER,          -- due time while PENDING/DEFERRED
  lease_until INTEGER,              -- set while SENDING
  last_reply TEXT,                  -- last remote SMTP reply (or network error)
  mx_host TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  sent_at INTEGER,
  delivered_at INTEGER,
  opened_at INTEGER,
  clicked_at INTEGER,
  bounced_at INTEGER,
  complained_at INTEGER,
  failed_at INTEGER
);
-- The outbox claim: due PENDING/DEFERRED rows in time order.
CREATE INDEX emails_due ON emails (next_attempt_at) WHERE status IN ('PENDING', 'DEFERRED');
-- Rows in flight (lease sweeper, restart requeue).
CREATE INDEX emails_sending ON emails (lease_until) WHERE status = 'SENDING';
CREATE INDEX emails_content ON emails (content_id);
CREATE INDEX emails_project ON emails (project_id, id);
CREATE INDEX emails_project_status ON emails (project_id, status, id);
CREATE INDEX emails_contact ON emails (contact_id, id);
CREATE INDEX emails_campaign ON emails (campaign_id, status) WHERE campaign_id IS NOT NULL;
CREATE INDEX emails_project_to ON emails (project_id, to_email, id);
CREATE INDEX emails_message_id ON emails (message_id);

-- Addresses that hard-bounced (or complained): later sends of any type are recorded SUPPRESSED.
CREATE TABLE suppressions (
  project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email TEXT NOT NULL,
  reason TEXT NOT NULL,             -- bounce | complaint | manual
  detail TEXT,
  email_id TEXT,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (project_id, email)
);

-- Delivery: the outbox. Email rows ARE the queue (status + next_attempt_at + lease).
-- Content is stored once per send/campaign (email_contents) and rendered per recipient at delivery
-- time from the email's own vars, so a 100k-recipient campaign is 100k small rows, not 100k bodies.
-- project_id is NULL only for the server's own account emails (source_type SYSTEM: verification,
-- password reset), which belong to no tenant.

CREATE TABLE email_contents (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" REFERENCES projects(id) ON DELETE CASCADE,
  subject text COLLATE "C" NOT NULL,            -- template source
  html text COLLATE "C" NOT NULL,               -- template source
  text text COLLATE "C",                        -- template source of the plain-text part (NULL: derived from the rendered HTML)
  from_email text COLLATE "C" NOT NULL,
  from_name text COLLATE "C",
  reply_to text COLLATE "C",
  type text COLLATE "C" NOT NULL DEFAULT 'TRANSACTIONAL',   -- TRANSACTIONAL | MARKETING | HEADLESS
  headers text COLLATE "C",                     -- JSON object of custom headers
  attachments text COLLATE "C",                 -- JSON array [{ filename, content (base64), contentType, contentId?, disposition? }]
  created_at bigint NOT NULL
);
CREATE INDEX email_contents_project ON email_contents (project_id);

CREATE TABLE emails (
  id text COLLATE "C" PRIMARY KEY,
  project_id text COLLATE "C" REFERENCES projects(id) ON DELETE CASCADE,
  content_id text COLLATE "C" NOT NULL REFERENCES email_contents(id) ON DELETE CASCADE,
  contact_id text COLLATE "C",
  to_email text COLLATE "C" NOT NULL,
  to_name text COLLATE "C",
  vars text COLLATE "C",                        -- JSON: render variables of this recipient (incl. non-persistent data)
  status text COLLATE "C" NOT NULL,             -- PENDING SENDING SENT DELIVERED DEFERRED OPENED CLICKED BOUNCED COMPLAINED FAILED SUPPRESSED CANCELLED
  source_type text COLLATE "C" NOT NULL,        -- TRANSACTIONAL | CAMPAIGN | WORKFLOW | SYSTEM
  campaign_id text COLLATE "C",
  template_id text COLLATE "C",
  workflow_execution_id text COLLATE "C",
  message_id text COLLATE "C",                  -- RFC 5322 Message-ID we assigned, with angle brackets: <emailId@MAILSVC_HOSTNAME>
  attempts bigint NOT NULL DEFAULT 0,
  next_attempt_at bigint,          -- due time while PENDING/DEFERRED
  lease_until bigint,              -- set while SENDING
  last_reply text COLLATE "C",                  -- last remote SMTP reply (or network error)
  mx_host text COLLATE "C",
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  sent_at bigint,
  delivered_at bigint,
  opened_at bigint,
  clicked_at bigint,
  bounced_at bigint,
  complained_at bigint,
  failed_at bigint
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
  project_id text COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  email text COLLATE "C" NOT NULL,
  reason text COLLATE "C" NOT NULL,             -- bounce | complaint | manual
  detail text COLLATE "C",
  email_id text COLLATE "C",
  created_at bigint NOT NULL,
  PRIMARY KEY (project_id, email)
);

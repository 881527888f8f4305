-- Deliverability (issue 19): Ed25519 dual signing, DKIM key rotation, DMARC aggregate reports,
-- and the MTA-STS policy cache of outbound delivery.

-- Optional second DKIM key (RFC 8463), signed with only once its record is published.
ALTER TABLE domains ADD COLUMN dkim_ed25519_selector TEXT;
ALTER TABLE domains ADD COLUMN dkim_ed25519_private_key TEXT;
ALTER TABLE domains ADD COLUMN dkim_ed25519_public_key TEXT;
-- A rotation in progress: the next RSA key, published beside the current one, takes over once verified.
ALTER TABLE domains ADD COLUMN dkim_next_selector TEXT;
ALTER TABLE domains ADD COLUMN dkim_next_private_key TEXT;
ALTER TABLE domains ADD COLUMN dkim_next_public_key TEXT;

-- One DMARC aggregate report (RFC 7489 appendix C) received for a domain.
CREATE TABLE dmarc_reports (
  id TEXT PRIMARY KEY,
  domain_id TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  org_name TEXT NOT NULL,
  report_id TEXT NOT NULL,
  begin_at INTEGER NOT NULL,
  end_at INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  UNIQUE (domain_id, org_name, report_id)
);

-- Its rows: messages from one source IP with one outcome.
CREATE TABLE dmarc_report_rows (
  report_id TEXT NOT NULL REFERENCES dmarc_reports(id) ON DELETE CASCADE,
  domain_id TEXT NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  source_ip TEXT NOT NULL,
  count INTEGER NOT NULL,
  disposition TEXT NOT NULL,
  dkim TEXT NOT NULL,
  spf TEXT NOT NULL
);
CREATE INDEX dmarc_report_rows_domain ON dmarc_report_rows (domain_id, source_ip);

-- MTA-STS policies of destination domains (RFC 8461 5.1: cached for max_age, refreshed when the id changes).
CREATE TABLE mta_sts_policies (
  domain TEXT PRIMARY KEY,
  policy_id TEXT NOT NULL,
  mode TEXT NOT NULL,
  mx TEXT NOT NULL,
  max_age INTEGER NOT NULL,
  fetched_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

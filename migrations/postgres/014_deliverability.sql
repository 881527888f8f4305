-- Deliverability (issue 19): Ed25519 dual signing, DKIM key rotation, DMARC aggregate reports,
-- and the MTA-STS policy cache of outbound delivery.

-- Optional second DKIM key (RFC 8463), signed with only once its record is published.
ALTER TABLE domains ADD COLUMN dkim_ed25519_selector text COLLATE "C";
ALTER TABLE domains ADD COLUMN dkim_ed25519_private_key text COLLATE "C";
ALTER TABLE domains ADD COLUMN dkim_ed25519_public_key text COLLATE "C";
-- A rotation in progress: the next RSA key, published beside the current one, takes over once verified.
ALTER TABLE domains ADD COLUMN dkim_next_selector text COLLATE "C";
ALTER TABLE domains ADD COLUMN dkim_next_private_key text COLLATE "C";
ALTER TABLE domains ADD COLUMN dkim_next_public_key text COLLATE "C";

-- One DMARC aggregate report (RFC 7489 appendix C) received for a domain.
CREATE TABLE dmarc_reports (
  id text COLLATE "C" PRIMARY KEY,
  domain_id text COLLATE "C" NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  org_name text COLLATE "C" NOT NULL,
  report_id text COLLATE "C" NOT NULL,
  begin_at bigint NOT NULL,
  end_at bigint NOT NULL,
  received_at bigint NOT NULL,
  UNIQUE (domain_id, org_name, report_id)
);

-- Its rows: messages from one source IP with one outcome.
CREATE TABLE dmarc_report_rows (
  report_id text COLLATE "C" NOT NULL REFERENCES dmarc_reports(id) ON DELETE CASCADE,
  domain_id text COLLATE "C" NOT NULL REFERENCES domains(id) ON DELETE CASCADE,
  source_ip text COLLATE "C" NOT NULL,
  count bigint NOT NULL,
  disposition text COLLATE "C" NOT NULL,
  dkim text COLLATE "C" NOT NULL,
  spf text COLLATE "C" NOT NULL
);
CREATE INDEX dmarc_report_rows_domain ON dmarc_report_rows (domain_id, source_ip);

-- MTA-STS policies of destination domains (RFC 8461 5.1: cached for max_age, refreshed when the id changes).
CREATE TABLE mta_sts_policies (
  domain text COLLATE "C" PRIMARY KEY,
  policy_id text COLLATE "C" NOT NULL,
  mode text COLLATE "C" NOT NULL,
  mx text COLLATE "C" NOT NULL,
  max_age bigint NOT NULL,
  fetched_at bigint NOT NULL,
  expires_at bigint NOT NULL
);

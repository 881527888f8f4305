// Table types for migrations/014_deliverability.sql (the domains columns live in senders.ts).
export interface DmarcReportsTable {
  id: string;
  domain_id: string;
  org_name: string;
  report_id: string;
  begin_at: number;
  end_at: number;
  received_at: number;
}

export interface DmarcReportRowsTable {
  report_id: string;
  domain_id: string;
  source_ip: string;
  count: number;
  disposition: string;
  /** pass | fail: the DMARC-aligned DKIM result the reporter evaluated. */
  dkim: string;
  spf: string;
}

export interface MtaStsPoliciesTable {
  domain: string;
  policy_id: string;
  mode: string;
  /** JSON array of mx patterns. */
  mx: string;
  max_age: number;
  fetched_at: number;
  expires_at: number;
}

export interface DeliverabilityTables {
  dmarc_reports: DmarcReportsTable;
  dmarc_report_rows: DmarcReportRowsTable;
  mta_sts_policies: MtaStsPoliciesTable;
}

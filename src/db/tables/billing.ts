export type BillingCategory = "transactional" | "campaigns" | "workflows" | "inbound";

export interface BillingLimitsTable {
  project_id: string;
  transactional: number | null;
  campaigns: number | null;
  workflows: number | null;
  inbound: number | null;
  updated_at: number;
}

export interface BillingUsageTable {
  project_id: string;
  /** Epoch ms of the first instant of the calendar month (UTC). */
  period_start: number;
  category: BillingCategory;
  used: number;
  dropped: number;
}

export interface BillingSubscriptionsTable {
  project_id: string;
  customer_id: string | null;
  subscription_id: string | null;
  status: string | null;
  price_id: string | null;
  current_period_end: number | null;
  updated_at: number;
}

export interface BillingInvoicesTable {
  id: string;
  project_id: string;
  number: string | null;
  status: string | null;
  currency: string | null;
  amount_due: number;
  amount_paid: number;
  hosted_invoice_url: string | null;
  invoice_pdf: string | null;
  period_start: number | null;
  period_end: number | null;
  created_at: number;
  updated_at: number;
}

export interface BillingEventsTable {
  id: string;
  type: string;
  received_at: number;
}

export interface UploadsTable {
  id: string;
  project_id: string;
  filename: string | null;
  content_type: string;
  ext: string;
  size: number;
  data: Uint8Array;
  created_at: number;
}

export interface BillingTables {
  billing_limits: BillingLimitsTable;
  billing_usage: BillingUsageTable;
  billing_subscriptions: BillingSubscriptionsTable;
  billing_invoices: BillingInvoicesTable;
  billing_events: BillingEventsTable;
  uploads: UploadsTable;
}

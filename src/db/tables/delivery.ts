import type { Generated } from "kysely";

export interface EmailContentsTable {
  id: string;
  /** NULL only for SYSTEM (account) emails. */
  project_id: string | null;
  subject: string;
  html: string;
  text: string | null;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  type: Generated<string>;
  headers: string | null;
  attachments: string | null;
  created_at: number;
  /** 1: never tracked (a campaign's test send). */
  no_tracking: Generated<number>;
  /** The open pixel: NULL = as the project's tracking mode says, 0 = never, 1 = unless tracking is DISABLED (024). */
  track_opens: Generated<number | null>;
}

export type EmailStatus =
  | "PENDING"
  | "SENDING"
  | "SENT"
  | "DELIVERED"
  | "DEFERRED"
  | "OPENED"
  | "CLICKED"
  | "BOUNCED"
  | "COMPLAINED"
  | "FAILED"
  | "SUPPRESSED"
  | "CANCELLED";

/** SMTP: a transactional email submitted over SMTP (modules/submission). */
export type EmailSourceType = "TRANSACTIONAL" | "CAMPAIGN" | "WORKFLOW" | "SYSTEM" | "SMTP";

export interface EmailsTable {
  id: string;
  /** NULL only for SYSTEM (account) emails, which belong to no project. */
  project_id: string | null;
  content_id: string;
  contact_id: string | null;
  to_email: string;
  to_name: string | null;
  vars: string | null;
  status: EmailStatus;
  source_type: EmailSourceType;
  campaign_id: string | null;
  template_id: string | null;
  workflow_execution_id: string | null;
  message_id: string | null;
  attempts: Generated<number>;
  next_attempt_at: number | null;
  lease_until: number | null;
  /** The instance holding the SENDING lease (MAILSVC_INSTANCE_ID). */
  locked_by: Generated<string | null>;
  last_reply: string | null;
  mx_host: string | null;
  created_at: number;
  updated_at: number;
  sent_at: number | null;
  delivered_at: number | null;
  opened_at: number | null;
  clicked_at: number | null;
  bounced_at: number | null;
  complained_at: number | null;
  failed_at: number | null;
  /** Outbox claim order: 0 first (transactional), 1 campaign mail. */
  priority: Generated<number>;
  /** Migration 023: 1 when the sandbox captured the email (never sent). */
  sandbox: Generated<number>;
}

export type SuppressionReason = "HARD_BOUNCE" | "COMPLAINT" | "MANUAL" | "UNSUBSCRIBE";
export type SuppressionSource = "EMAIL" | "API" | "IMPORT";

export interface SuppressionsTable {
  /** Migration 022. */
  id: string;
  project_id: string;
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  /** Where it came from: EMAIL (email_id: the bounce or complaint), API (POST /suppressions), IMPORT (job_id). */
  source: SuppressionSource;
  email_id: string | null;
  job_id: string | null;
  created_at: number;
}

export interface DeliveryTables {
  email_contents: EmailContentsTable;
  emails: EmailsTable;
  suppressions: SuppressionsTable;
}

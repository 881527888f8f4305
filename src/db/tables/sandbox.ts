// Migration 023 (the sandbox). projects.sandbox and emails.sandbox are declared with their tables
// (foundation.ts, delivery.ts).

/** The exact message as handed to SMTP (GET /emails/:id/raw): sandbox mail always, other mail with MAILSVC_KEEP_RAW. */
export interface EmailRawTable {
  email_id: string;
  project_id: string | null;
  /** The message bytes (SMTP dot-stuffing undone). */
  raw: Uint8Array;
  created_at: number;
}

export interface SandboxTables {
  email_raw: EmailRawTable;
}

// Table types for the audience part of the schema (migrations/002_audience.sql, 007_event_feed.sql).
import type { Generated } from "kysely";

export interface ContactsTable {
  id: string;
  project_id: string;
  /** Lower-case. */
  email: string;
  /** 0 | 1 */
  subscribed: number;
  /** JSON object text. */
  data: string;
  created_at: number;
  updated_at: number;
  /** 0 | 1: a public-key subscribe waits for its confirmation link (double opt-in, migration 022). */
  pending_confirmation?: number;
  /** When the last confirmation email was queued (at most one per 10 minutes). */
  confirmation_sent_at?: number | null;
}

/** Confirmation links of double opt-in (migration 022): single use, 7 days. */
export interface ContactConfirmationsTable {
  id: string;
  project_id: string;
  contact_id: string;
  email_id: string | null;
  created_at: number;
  expires_at: number;
  confirmed_at: number | null;
}

export interface ContactCountsTable {
  project_id: string;
  total: number;
  subscribed: number;
}

export interface EventsTable {
  /** Monotonic, never reused: the event feed's cursor (see src/jobs/event-feed.ts). */
  seq: Generated<number>;
  id: string;
  project_id: string;
  contact_id: string;
  name: string;
  /** JSON object text or null. */
  data: string | null;
  email_id: string | null;
  created_at: number;
}

export interface EventCursorsTable {
  consumer: string;
  last_seq: number;
  updated_at: number;
}

export interface ContactImportsTable {
  job_id: string;
  project_id: string;
  filename: string | null;
  size: number;
  content: string;
  created_at: number;
}

export interface AudienceTables {
  contacts: ContactsTable;
  contact_counts: ContactCountsTable;
  events: EventsTable;
  event_cursors: EventCursorsTable;
  contact_imports: ContactImportsTable;
  contact_confirmations: ContactConfirmationsTable;
}

import type { Generated } from "kysely";

export interface SettingsTable {
  key: string;
  value: string;
}
export interface UsersTable {
  id: string;
  email: string;
  password_hash: string;
  email_verified_at: number | null;
  created_at: number;
  updated_at: number;
  /** Migration 021: sessions issued before this time (service-clock ms) are refused (set by a password reset). */
  sessions_valid_after?: number | null;
}
/** Migration 021: session tokens ended by logout (sha256 hex), kept until they would have expired. */
export interface RevokedSessionsTable {
  token_hash: string;
  expires_at: number;
}
export interface ProjectsTable {
  id: string;
  name: string;
  public_key: string;
  secret_key: string;
  disabled: number;
  disabled_reason: string | null;
  tracking: string;
  /** whsec_… (migration 010); NULL until first needed on projects created before it. */
  webhook_secret?: string | null;
  /** Migration 023: 1 for a sandbox project (mail captured, never sent). */
  sandbox: Generated<number>;
  /** Double opt-in (migration 022): 0 | 1, the confirmation template (null: the plain default), where the link lands. */
  double_opt_in?: number;
  double_opt_in_template_id?: string | null;
  double_opt_in_redirect_url?: string | null;
  /** Shown in the footer of MARKETING mail (024); NULL = none. */
  postal_address?: string | null;
  created_at: number;
  updated_at: number;
}
export interface ProjectMembersTable {
  project_id: string;
  user_id: string;
  role: string;
  created_at: number;
}
export interface AccountTokensTable {
  token_hash: string;
  user_id: string;
  kind: string;
  expires_at: number;
  used_at: number | null;
  created_at: number;
}
export interface IdempotencyKeysTable {
  project_id: string;
  key: string;
  method: string;
  path: string;
  status_code: number | null;
  created_at: number;
  /** The instance whose request holds the key (MAILSVC_INSTANCE_ID; null in rows written before 027). */
  locked_by: Generated<string | null>;
}
export interface JobsTable {
  id: string;
  type: string;
  project_id: string | null;
  state: string;
  payload: string;
  checkpoint: Generated<string | null>;
  progress: Generated<number>;
  result: Generated<string | null>;
  error: Generated<string | null>;
  attempts: Generated<number>;
  max_attempts: number;
  run_at: number;
  lease_until: Generated<number | null>;
  /** The instance holding the lease (MAILSVC_INSTANCE_ID) while active. */
  locked_by: Generated<string | null>;
  dedupe_key: string | null;
  created_at: number;
  updated_at: number;
  finished_at: Generated<number | null>;
}

/** A periodic task (Schedules.cron): its next due time and who ran the last one (migration 026). */
export interface PeriodicTasksTable {
  name: string;
  due_at: number;
  run_by: string | null;
  run_at: number | null;
}

export interface FoundationTables {
  settings: SettingsTable;
  users: UsersTable;
  projects: ProjectsTable;
  project_members: ProjectMembersTable;
  account_tokens: AccountTokensTable;
  revoked_sessions: RevokedSessionsTable;
  idempotency_keys: IdempotencyKeysTable;
  jobs: JobsTable;
  periodic_tasks: PeriodicTasksTable;
}

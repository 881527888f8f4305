// Migrations are embedded in the binary as text. Forward-only; add new files at the end.
import m001 from "../../migrations/001_foundation.sql" with { type: "text" };
import m002 from "../../migrations/002_audience.sql" with { type: "text" };
import m003 from "../../migrations/003_senders_templates.sql" with { type: "text" };
import m004 from "../../migrations/004_delivery.sql" with { type: "text" };
import m005 from "../../migrations/005_feedback.sql" with { type: "text" };
import m006 from "../../migrations/006_observability.sql" with { type: "text" };
import m007 from "../../migrations/007_event_feed.sql" with { type: "text" };
import m008 from "../../migrations/008_segments.sql" with { type: "text" };
import m009 from "../../migrations/009_campaigns.sql" with { type: "text" };
import m010 from "../../migrations/010_workflows.sql" with { type: "text" };
import m011 from "../../migrations/011_analytics.sql" with { type: "text" };
import m012 from "../../migrations/012_billing_uploads.sql" with { type: "text" };
import m013 from "../../migrations/013_webhooks.sql" with { type: "text" };
import m014 from "../../migrations/014_deliverability.sql" with { type: "text" };
import m017 from "../../migrations/017_field_stats_guard.sql" with { type: "text" };
import m018 from "../../migrations/018_executions_by_contact.sql" with { type: "text" };
import m019 from "../../migrations/019_executions_unstarted.sql" with { type: "text" };
import m020 from "../../migrations/020_segment_members_synced.sql" with { type: "text" };
import m021 from "../../migrations/021_session_revocation.sql" with { type: "text" };
import m022 from "../../migrations/022_suppressions_double_opt_in.sql" with { type: "text" };
import m023 from "../../migrations/023_sandbox.sql" with { type: "text" };
import m024 from "../../migrations/024_track_opens.sql" with { type: "text" };
import m025 from "../../migrations/025_campaign_version.sql" with { type: "text" };
import m026 from "../../migrations/026_leases.sql" with { type: "text" };
import m027 from "../../migrations/027_idempotency_instance.sql" with { type: "text" };

/**
 * Every migration's name, in the order both engines apply them; migrations/ and migrations/postgres/
 * hold one file of each name (src/db/migrations-postgres.ts lists the PostgreSQL twins).
 */
export const MIGRATION_NAMES = [
  "001_foundation",
  "002_audience",
  "003_senders_templates",
  "004_delivery",
  "005_feedback",
  "006_observability",
  "007_event_feed",
  "008_segments",
  "009_campaigns",
  "010_workflows",
  "011_analytics",
  "012_billing_uploads",
  "013_webhooks",
  "014_deliverability",
  "017_field_stats_guard",
  "018_executions_by_contact",
  "019_executions_unstarted",
  "020_segment_members_synced",
  "021_session_revocation",
  "022_suppressions_double_opt_in",
  "023_sandbox",
  "024_track_opens",
  "025_campaign_version",
  "026_leases",
  "027_idempotency_instance",
] as const;

/** The SQLite history, in MIGRATION_NAMES order. */
export const MIGRATIONS: { name: string; sql: string }[] = withNames([m001, m002, m003, m004, m005, m006, m007, m008, m009, m010, m011, m012, m013, m014, m017, m018, m019, m020, m021, m022, m023, m024, m025, m026, m027]);

/** Pairs each name of MIGRATION_NAMES with its file's text (the same count, in order). */
export function withNames(sqls: string[]): { name: string; sql: string }[] {
  if (sqls.length !== MIGRATION_NAMES.length) throw new Error(`${sqls.length} migration files for ${MIGRATION_NAMES.length} names`);
  return MIGRATION_NAMES.map((name, i) => ({ name, sql: sqls[i]! }));
}


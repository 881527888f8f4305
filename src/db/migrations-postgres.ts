// The PostgreSQL twins of migrations/: the same names in the same order (migrations/postgres/), embedded as text.
// Loaded only when the engine is PostgreSQL.
import p001 from "../../migrations/postgres/001_foundation.sql" with { type: "text" };
import p002 from "../../migrations/postgres/002_audience.sql" with { type: "text" };
import p003 from "../../migrations/postgres/003_senders_templates.sql" with { type: "text" };
import p004 from "../../migrations/postgres/004_delivery.sql" with { type: "text" };
import p005 from "../../migrations/postgres/005_feedback.sql" with { type: "text" };
import p006 from "../../migrations/postgres/006_observability.sql" with { type: "text" };
import p007 from "../../migrations/postgres/007_event_feed.sql" with { type: "text" };
import p008 from "../../migrations/postgres/008_segments.sql" with { type: "text" };
import p009 from "../../migrations/postgres/009_campaigns.sql" with { type: "text" };
import p010 from "../../migrations/postgres/010_workflows.sql" with { type: "text" };
import p011 from "../../migrations/postgres/011_analytics.sql" with { type: "text" };
import p012 from "../../migrations/postgres/012_billing_uploads.sql" with { type: "text" };
import p013 from "../../migrations/postgres/013_webhooks.sql" with { type: "text" };
import p014 from "../../migrations/postgres/014_deliverability.sql" with { type: "text" };
import p017 from "../../migrations/postgres/017_field_stats_guard.sql" with { type: "text" };
import p018 from "../../migrations/postgres/018_executions_by_contact.sql" with { type: "text" };
import p019 from "../../migrations/postgres/019_executions_unstarted.sql" with { type: "text" };
import p020 from "../../migrations/postgres/020_segment_members_synced.sql" with { type: "text" };
import p021 from "../../migrations/postgres/021_session_revocation.sql" with { type: "text" };
import p022 from "../../migrations/postgres/022_suppressions_double_opt_in.sql" with { type: "text" };
import p023 from "../../migrations/postgres/023_sandbox.sql" with { type: "text" };
import p024 from "../../migrations/postgres/024_track_opens.sql" with { type: "text" };
import p026 from "../../migrations/postgres/026_leases.sql" with { type: "text" };

/** The PostgreSQL history: one twin per SQLite migration, the same name, applied in the same order. */
export const POSTGRES_MIGRATIONS: { name: string; sql: string }[] = [
  { name: "001_foundation", sql: p001 },
  { name: "002_audience", sql: p002 },
  { name: "003_senders_templates", sql: p003 },
  { name: "004_delivery", sql: p004 },
  { name: "005_feedback", sql: p005 },
  { name: "006_observability", sql: p006 },
  { name: "007_event_feed", sql: p007 },
  { name: "008_segments", sql: p008 },
  { name: "009_campaigns", sql: p009 },
  { name: "010_workflows", sql: p010 },
  { name: "011_analytics", sql: p011 },
  { name: "012_billing_uploads", sql: p012 },
  { name: "013_webhooks", sql: p013 },
  { name: "014_deliverability", sql: p014 },
  { name: "017_field_stats_guard", sql: p017 },
  { name: "018_executions_by_contact", sql: p018 },
  { name: "019_executions_unstarted", sql: p019 },
  { name: "020_segment_members_synced", sql: p020 },
  { name: "021_session_revocation", sql: p021 },
  { name: "022_suppressions_double_opt_in", sql: p022 },
  { name: "023_sandbox", sql: p023 },
  { name: "024_track_opens", sql: p024 },
  { name: "026_leases", sql: p026 },
];

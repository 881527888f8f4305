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
import m026 from "../../migrations/026_leases.sql" with { type: "text" };

export const MIGRATIONS: { name: string; sql: string }[] = [
  { name: "001_foundation", sql: m001 },
  { name: "002_audience", sql: m002 },
  { name: "003_senders_templates", sql: m003 },
  { name: "004_delivery", sql: m004 },
  { name: "005_feedback", sql: m005 },
  { name: "006_observability", sql: m006 },
  { name: "007_event_feed", sql: m007 },
  { name: "008_segments", sql: m008 },
  { name: "009_campaigns", sql: m009 },
  { name: "010_workflows", sql: m010 },
  { name: "011_analytics", sql: m011 },
  { name: "012_billing_uploads", sql: m012 },
  { name: "013_webhooks", sql: m013 },
  { name: "014_deliverability", sql: m014 },
  { name: "017_field_stats_guard", sql: m017 },
  { name: "018_executions_by_contact", sql: m018 },
  { name: "019_executions_unstarted", sql: m019 },
  { name: "020_segment_members_synced", sql: m020 },
  { name: "021_session_revocation", sql: m021 },
  { name: "022_suppressions_double_opt_in", sql: m022 },
  { name: "023_sandbox", sql: m023 },
  { name: "024_track_opens", sql: m024 },
  { name: "026_leases", sql: m026 },
];


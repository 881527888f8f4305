// The PostgreSQL twins of migrations/: the same names in the same order (migrations/postgres/), embedded as text.
// Loaded only when the engine is PostgreSQL.
import { withNames } from "./migrations";
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
import p025 from "../../migrations/postgres/025_campaign_version.sql" with { type: "text" };
import p026 from "../../migrations/postgres/026_leases.sql" with { type: "text" };
import p027 from "../../migrations/postgres/027_idempotency_instance.sql" with { type: "text" };

/** The PostgreSQL history: one twin per SQLite migration, the same name, applied in the same order. */
export const POSTGRES_MIGRATIONS = withNames([p001, p002, p003, p004, p005, p006, p007, p008, p009, p010, p011, p012, p013, p014, p017, p018, p019, p020, p021, p022, p023, p024, p025, p026, p027]);

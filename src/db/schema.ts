import type { FoundationTables } from "./tables/foundation";
import type { AudienceTables } from "./tables/audience";
import type { SenderTables } from "./tables/senders";
import type { DeliveryTables } from "./tables/delivery";
import type { FeedbackTables } from "./tables/feedback";
import type { ObservabilityTables } from "./tables/observability";
import type { CampaignTables } from "./tables/campaigns";
import type { DeliverabilityTables } from "./tables/deliverability";
import type { SegmentTables } from "./tables/segments";
import type { WorkflowTables } from "./tables/workflows";
import type { BillingTables } from "./tables/billing";
import type { AnalyticsTables } from "./tables/analytics";
import type { WebhookTables } from "./tables/webhooks";
import type { SandboxTables } from "./tables/sandbox";

/** The whole database as Kysely sees it; each part lives beside its migration's owner. */
export interface DB extends FoundationTables, AudienceTables, SenderTables, DeliveryTables, FeedbackTables, ObservabilityTables, CampaignTables, DeliverabilityTables, SegmentTables, WorkflowTables, BillingTables, AnalyticsTables, WebhookTables, SandboxTables {}

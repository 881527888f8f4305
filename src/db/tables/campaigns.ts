import type { Generated } from "kysely";
import type { MessageColumns } from "./senders";

export type CampaignStatus = "DRAFT" | "SCHEDULED" | "SENDING" | "SENT" | "CANCELLED";
export type AudienceType = "ALL" | "SEGMENT" | "FILTERED";

export interface CampaignsTable extends MessageColumns {
  type: string;
  status: CampaignStatus;
  audience_type: AudienceType;
  segment_id: string | null;
  /** JSON condition tree (FILTERED). */
  audience_condition: string | null;
  template_id: string | null;
  /** The open pixel: NULL = the project's tracking mode, 0 = never, 1 = unless tracking is DISABLED (024). */
  track_opens: Generated<number | null>;
  scheduled_for: number | null;
  content_id: string | null;
  fanout_last_id: string | null;
  fanout_done: Generated<number>;
  total_recipients: Generated<number>;
  sent_at: number | null;
  completed_at: number | null;
  cancelled_at: number | null;
  created_at: number;
  updated_at: number;
  /** Bumped by every write of the campaign store (migration 025): the stale check of a send. */
  version: Generated<number>;
}

export interface CampaignTables {
  campaigns: CampaignsTable;
}

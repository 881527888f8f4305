/** Rollups of migration 011, kept by triggers on events and contacts (read-only for the application). */
export interface EventRollupTable {
  project_id: string;
  /** Start of the UTC hour (hourly) or day (daily), epoch ms. */
  bucket: number;
  name: string;
  count: number;
}

export interface EventNameTotalsTable {
  project_id: string;
  name: string;
  count: number;
  last_at: number;
}

export interface ContactFieldStatsTable {
  project_id: string;
  key: string;
  /** json_each type (text, integer, real, true, false, object, array, null) or 'date' for ISO-looking text. */
  kind: string;
  n: number;
}

/** How many of a campaign's emails reached each engagement step (rollups, counters, reports). */
export interface EngagementCounts {
  sent: number;
  delivered: number;
  opened: number;
  clicked: number;
  bounced: number;
  complained: number;
}

export interface CampaignRollupTable extends EngagementCounts {
  project_id: string;
  campaign_id: string;
}

export interface AnalyticsTables {
  campaign_rollup: CampaignRollupTable;
  event_rollup_hourly: EventRollupTable;
  event_rollup_daily: EventRollupTable;
  event_name_totals: EventNameTotalsTable;
  contact_field_stats: ContactFieldStatsTable;
}

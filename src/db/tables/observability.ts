export interface EventCountsTable {
  project_id: string;
  total: number;
}

export interface ObservabilityTables {
  event_counts: EventCountsTable;
}

// Table types for this part of the schema (see migrations/).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ObservabilityTables {}

// Table types for the feedback loop's part of the schema (migrations/005_feedback.sql).
export interface TrackedLinksTable {
  project_id: string;
  /** base64url of the first 8 bytes of SHA-256(url). */
  hash: string;
  url: string;
  created_at: number;
}

export interface FeedbackTables {
  tracked_links: TrackedLinksTable;
}

// Table types of migrations/008_segments.sql.

export type SegmentType = "DYNAMIC" | "STATIC";

export interface SegmentsTable {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  description: string | null;
  type: SegmentType;
  /** JSON condition tree or null. */
  condition: string | null;
  /** 0 | 1 */
  track_membership: number;
  member_count: number;
  /** 0 | 1 (migration 020): member_count equals the stored member rows, so entries and exits may add to it. */
  members_synced: number;
  created_at: number;
  updated_at: number;
}

export interface SegmentMembersTable {
  segment_id: string;
  contact_id: string;
  created_at: number;
}

export interface SegmentTables {
  segments: SegmentsTable;
  segment_members: SegmentMembersTable;
}

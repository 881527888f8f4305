import type { ConditionTree } from "../conditions";

/** A tracked DYNAMIC segment as contact writes follow it (membership.ts plans, follow.ts, membership-raw.ts). */
export interface TrackedSegment {
  id: string;
  slug: string;
  name: string;
  tree: ConditionTree;
}

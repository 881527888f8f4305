/** Durable job types of campaigns (src/jobs/queue.ts). */
export const JOBS = {
  /** At scheduledFor: SCHEDULED -> SENDING (payload { campaignId, scheduledFor }). */
  start: "campaign:start",
  /** Writes one email row per recipient in id-ordered batches (payload { campaignId }). */
  fanout: "campaign:fanout",
} as const;

import type { Kysely } from "kysely";
import type { Clock } from "./clock";
import type { Config } from "./config";
import type { DB, Store } from "./db";
import type { Logger } from "./http/logger";
import type { KeyCache } from "./http/keys";
import type { RateLimiter } from "./http/rate-limit";
import type { EventFeed } from "./jobs/event-feed";
import type { JobQueue } from "./jobs/queue";
import type { Schedules } from "./jobs/schedules";
import type { Metrics } from "./observability/metrics";

/**
 * Everything a service needs, built once per running instance by server.ts and passed down
 * explicitly (tests run several instances in one process, each with its own file and clock).
 */
export interface AppContext {
  config: Config;
  store: Store;
  db: Kysely<DB>;
  clock: Clock;
  log: Logger;
  jobs: JobQueue;
  /** The events table as a durable log with a cursor per consumer (workflow triggers, webhooks). */
  feed: EventFeed;
  schedules: Schedules;
  keys: KeyCache;
  rateLimiter: RateLimiter;
  metrics: Metrics;
  jwtSecret: string;
  /** Late-bound services that lower layers call into without importing modules (set by server.ts). */
  hooks: Hooks;
}

/**
 * Explicit call-outs between modules that would otherwise import upward. Each is set once, at
 * assembly, by the module that implements it; callers treat a missing one as "feature not present".
 */
export interface Hooks {
  /** Called after a client or system event is recorded for a contact (workflows start here). */
  onEvent?: (ctx: AppContext, ev: { projectId: string; contactId: string; eventId: string; name: string; data: Record<string, unknown> }) => Promise<void>;
  /** Sends an account email (verification, reset) through the delivery engine; absent until it exists. */
  sendAccountEmail?: (ctx: AppContext, msg: { to: string; subject: string; html: string; text: string }) => Promise<void>;
  /** Where a custom contact field is referenced, per module (segments, campaigns, workflows). */
  fieldUsage: Array<(ctx: AppContext, projectId: string, field: string) => Promise<Record<string, unknown[]>>>;
  /** Where an event name is referenced, per module. */
  eventUsage: Array<(ctx: AppContext, projectId: string, name: string) => Promise<Record<string, unknown[]>>>;
  /** Where a template is referenced, per module. */
  templateUsage: Array<(ctx: AppContext, projectId: string, templateId: string) => Promise<Record<string, unknown[]>>>;
  /** Counts for /projects/:id/setup-state, per module. */
  setupState: Array<(ctx: AppContext, projectId: string) => Promise<Record<string, unknown>>>;
  /** Upcoming work for /activity/upcoming, per module (scheduled campaigns, waiting workflow executions). */
  upcoming: Array<(ctx: AppContext, projectId: string, limit: number) => Promise<UpcomingItem[]>>;
  /** Job types /activity/upcoming leaves out: internal work, or work another item already shows (a scheduled campaign's start job). */
  hiddenJobTypes: string[];
  /** Bounce and complaint rates for /security (delivery engine). */
  security?: (ctx: AppContext, projectId: string) => Promise<Record<string, unknown>>;
  /** After contact writes commit (send, PATCH/POST contacts, import, bulk jobs): re-evaluates tracked segments. Batched per request. /v1/track follows them in its own transaction (audience/segments/follow.ts). */
  contactsChanged: Array<(ctx: AppContext, projectId: string, contactIds: readonly string[]) => Promise<void>>;
  /**
   * Charges n emails of a billing category inside the caller's transaction (billing module's
   * consumeQuota); throws the 402 BILLING_LIMIT_EXCEEDED AppError over the monthly cap. Absent: no caps.
   */
  consumeQuota?: (trx: Kysely<DB>, ctx: AppContext, projectId: string, category: "transactional" | "campaigns" | "workflows" | "inbound", n: number) => Promise<void>;
  /** Whether something (an active campaign) uses a segment: a non-null answer names it and refuses DELETE /segments/:id (409). */
  segmentInUse: Array<(ctx: AppContext, projectId: string, segmentId: string) => Promise<string | null>>;
  /** Deletes a project's data beyond the foundation tables (project reset), per module. */
  resetProject: Array<(ctx: AppContext, projectId: string) => Promise<void>>;
  /**
   * Called by the outbox after it committed the delivery of a captured email to a simulated recipient
   * (complaint@, open@, click@…): the sandbox module makes the recipient react through the feedback loop.
   */
  sandboxDelivered?: (ctx: AppContext, email: { emailId: string; toEmail: string; raw: Buffer }) => Promise<void>;
  /** Called by the outbox after it committed outcomes of campaign emails (campaigns move to SENT). */
  campaignOutcomes?: (ctx: AppContext, campaignIds: string[]) => void;
}

export interface UpcomingItem {
  type: string;
  id: string;
  /** ISO time the work is due. */
  at: string | null;
  details: Record<string, unknown>;
}

export const emptyHooks = (): Hooks => ({ fieldUsage: [], eventUsage: [], templateUsage: [], setupState: [], resetProject: [], upcoming: [], hiddenJobTypes: [], contactsChanged: [], segmentInUse: [] });

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
  /** What modules contribute to each other (gathered from every ModuleDef's `provides` by server.ts). */
  contributions: Contributions;
  /** The few late-bound calls from the delivery engine up to modules (see Hooks). */
  hooks: Hooks;
  /**
   * The instance's long-lived services and caches, each built once by src/services.ts (the one place
   * that lists them all). Each owner declares its field's type next to its code (a `declare module`
   * augmentation of `Services` or `Caches`), so this file imports nothing from the rooms above it.
   */
  services: Services;
}

/** Filled by augmentation: see `buildServices` in src/services.ts for every member. */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Services {
  /** In-memory caches of database rows, per instance; each is dropped by its owner's named `forget…` function. */
  caches: Caches;
}

/** Filled by augmentation: see `buildServices` in src/services.ts for every member. */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface Caches {}

/**
 * What modules contribute to one another's answers, declared in each module's `provides`
 * (src/http/module.ts ModuleDef) and gathered in install order by server.ts. A reader finds every
 * contributor of, say, `setupState` by searching the module index files for `setupState:`.
 */
export interface Contributions {
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
  /** After contact writes commit (send, PATCH/POST contacts, import, bulk jobs): re-evaluates tracked segments. Batched per request. /v1/track follows them in its own transaction (audience/segments/follow.ts). */
  contactsChanged: Array<(ctx: AppContext, projectId: string, contactIds: readonly string[]) => Promise<void>>;
  /** Whether something (an active campaign) uses a segment: a non-null answer names it and refuses DELETE /segments/:id (409). */
  segmentInUse: Array<(ctx: AppContext, projectId: string, segmentId: string) => Promise<string | null>>;
  /** Deletes a project's data beyond the foundation tables (project reset), per module. */
  resetProject: Array<(ctx: AppContext, projectId: string) => Promise<void>>;
}

export const emptyContributions = (): Contributions => ({ fieldUsage: [], eventUsage: [], templateUsage: [], setupState: [], upcoming: [], hiddenJobTypes: [], contactsChanged: [], segmentInUse: [], resetProject: [] });

/**
 * The late-bound calls left: the delivery engine (src/mail, below the modules) reporting what it
 * committed up to the modules that act on it. Each is set once by that module's install; the outbox
 * treats a missing one as "nothing to do".
 */
export interface Hooks {
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

export const emptyHooks = (): Hooks => ({});

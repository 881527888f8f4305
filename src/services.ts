// Every long-lived service and cache of one running instance, built once here (createContext in
// server.ts calls buildServices). Nothing else keeps per-instance state: no module-level singleton
// keyed by the context. Each member's type is declared by its owner (a `declare module` augmentation
// of `Services`/`Caches` in src/context.ts), next to the code that uses it; a member missing here is
// a type error.
import type { AppContext, Services } from "./context";
import { SegmentRecounts } from "./audience/segments/recount";
import { TrackBatcher } from "./audience/track";
import { WorkflowEngineState } from "./modules/workflows/engine/executor";
import { buildAuthPlugin } from "./http/auth";
import { Outbox } from "./mail/outbox/outbox";
import { SnsClient } from "./modules/feedback/sns";
import { AccountLimiters } from "./modules/users/service";
import { WebhookDispatcher } from "./webhooks/dispatcher";

/** Builds the instance's services (nothing starts: modules start what they own after the HTTP server is up). */
export function buildServices(ctx: AppContext): Services {
  return {
    // Background engines (started and stopped by their modules: delivery, webhooks, events).
    outbox: new Outbox(ctx),
    webhookDispatcher: new WebhookDispatcher(ctx),
    trackBatcher: new TrackBatcher(ctx),
    workflowEngine: new WorkflowEngineState(),
    segmentRecounts: new SegmentRecounts(),
    // The edge.
    auth: buildAuthPlugin(ctx),
    accountLimiters: new AccountLimiters(ctx.clock),
    // Listeners while they run, and clients made on first use.
    inbound: { server: null },
    submission: {},
    sns: new SnsClient(),
    stripe: { client: null },
    // Caches of rows: each has one `forget…`/invalidate function next to its owner's code (the place a
    // change made by a peer instance must reach, issue 32).
    caches: {
      signingKeys: new Map(), // mail/dkim/signing-keys.ts forgetSigningKeys
      sandbox: new Map(), // mail/outbox/sandbox.ts forgetSandbox
      reputationChecks: new Map(), // mail/deliverability/reputation.ts (a throttle, not a copy of a row)
      linkGeneration: { value: 0 }, // mail/tracking/tracked-links.ts deleteProjectLinks bumps it
      tokenSecret: { value: null }, // mail/tracking/tokens.ts loadTokenSecret (never changes)
      trackedSegments: new Map(), // audience/segments/membership.ts forgetTrackedSegments
      domains: { verified: new Map(), server: null }, // modules/domains/service.ts invalidateDomainCaches
      doubleOptIn: new Map(), // modules/double-opt-in/service.ts forgetDoubleOptIn
    },
  };
}

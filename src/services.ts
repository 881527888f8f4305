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
import { PeerBus, type PeerTopics } from "./jobs/peers";
import { trackedSegmentsTopic } from "./audience/segments/membership";
import { sandboxTopic } from "./mail/outbox/sandbox";
import { linksTopic } from "./mail/tracking/tracked-links";
import { domainsTopic } from "./modules/domains/service";
import { doubleOptInTopic } from "./modules/double-opt-in/service";

/**
 * Every cache of rows and every wake-up that must reach peer instances (issue 32, src/jobs/peers.ts):
 * topic -> the owner's local clear. A change calls `invalidate(ctx, topic, id)` once it committed; the
 * same clear then runs here and on every peer. Not listed: `reputationChecks` (a throttle of this
 * instance's own checks, not a copy of a row) and `tokenSecret` (never changes once created).
 */
export const TOPICS: PeerTopics = {
  caches: {
    keys: { one: (ctx, projectId) => ctx.keys.invalidate(projectId), all: (ctx) => ctx.keys.clear() }, // src/http/keys.ts KeyCache
    sandbox: sandboxTopic,
    doubleOptIn: doubleOptInTopic,
    domains: domainsTopic, // verified domains and DKIM signing keys
    trackedSegments: trackedSegmentsTopic,
    links: linksTopic,
  },
  wakes: {
    // A peer enqueued mail / committed events: start now instead of at the next poll (never sent on again).
    "wake.outbox": (ctx) => ctx.services.outbox.wake(),
    "wake.feed": (ctx) => ctx.feed.wakeHere(),
  },
};

/** Builds the instance's services (nothing starts: modules start what they own after the HTTP server is up). */
export function buildServices(ctx: AppContext): Services {
  const peers = new PeerBus(ctx, TOPICS);
  // Events committed here wake this feed and, throttled, the peers' feeds.
  ctx.feed.onWake = () => peers.wakePeers("wake.feed");
  return {
    peers,
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
    // Caches of rows: each has its local clear next to its owner's code, listed in TOPICS above; a
    // change reaches it through `invalidate(ctx, topic, id)`, here and on every peer (issue 32).
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

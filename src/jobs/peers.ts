// Caches and wake-ups across instances (issue 32; docs/operations.md "Several instances").
//
// Every per-process cache of rows has one local clear next to its owner's code (forgetSandbox,
// invalidateDomainCaches, KeyCache.invalidate…); src/services.ts gathers them in one table, TOPICS
// (topic -> clear one id, clear everything). A change calls `invalidate(ctx, topic, id)` after it
// committed: the local cache is cleared at once, exactly as with one instance, and the peers are told
// over the channel (src/db/peers.ts: LISTEN/NOTIFY on PostgreSQL, nothing on SQLite), where the same
// clear runs. Wake-ups (`wakePeers`) tell the peers new work is due (the outbox, the event feed),
// at most one message per topic per WAKE_THROTTLE_MS from this instance.
//
// The bound: a peer clears within the NOTIFY latency (milliseconds). A read a peer started before the
// change committed could put the old row back after the message cleared it, so a peer clears once more
// SECOND_CLEAR_MS later. While the listener is down (and when it is back) every cache is dropped, at
// each reconnect attempt (at most 5 s apart): a missed message never leaves a cache stale.
import type { AppContext } from "../context";
import { openPeerChannel, type PeerChannel, type PeerMessage } from "../db/peers";

/** A cache's local clears: one id (a project) and everything (after messages may have been missed). */
export interface TopicClear {
  one(ctx: AppContext, id: string, sub?: string): void;
  all(ctx: AppContext): void;
}

/** A wake-up's local action (new work is due). */
export type WakeHandler = (ctx: AppContext) => void;

export interface PeerTopics {
  caches: Record<string, TopicClear>;
  wakes: Record<string, WakeHandler>;
}

/** At most one wake-up message per topic in this time, per instance. */
export const WAKE_THROTTLE_MS = 50;
/** A peer clears again this long after a message (a read begun before the change committed). */
export const SECOND_CLEAR_MS = 1_000;

declare module "../context" {
  interface Services {
    /** The instance's link to its peers (caches and wake-ups); see src/jobs/peers.ts. */
    peers: PeerBus;
  }
}

export class PeerBus {
  private channel: PeerChannel | null = null;
  private readonly lastWake = new Map<string, number>();
  private readonly pendingWake = new Map<string, ReturnType<typeof setTimeout>>();
  private readonly secondClears = new Map<string, ReturnType<typeof setTimeout>>();
  /** Messages received from peers, per topic (tests and /metrics-free diagnostics). */
  readonly received = new Map<string, number>();
  /** Times every cache was dropped because messages may have been missed. */
  fullClears = 0;

  constructor(
    private readonly ctx: AppContext,
    readonly topics: PeerTopics,
  ) {}

  /** Starts listening (PostgreSQL). Called once the caches exist. */
  start(): void {
    if (this.channel) return;
    this.channel = openPeerChannel(this.ctx.store, this.ctx.config.databaseUrl, {
      onMessage: (m) => this.receive(m),
      onGap: () => this.clearAll(),
      onError: (what, error) => this.ctx.log.warn(what, { error: String((error as Error)?.message ?? error) }),
    });
  }

  async stop(): Promise<void> {
    for (const t of this.pendingWake.values()) clearTimeout(t);
    this.pendingWake.clear();
    for (const t of this.secondClears.values()) clearTimeout(t);
    this.secondClears.clear();
    const c = this.channel;
    this.channel = null;
    await c?.close();
  }

  /** Whether messages from peers arrive now (true on SQLite). */
  get listening(): boolean {
    return this.channel?.listening ?? false;
  }

  /** Clears a cache here, then tells the peers (call after the change committed). */
  invalidate(topic: string, id: string, sub?: string): void {
    const t = this.topics.caches[topic];
    if (!t) throw new Error(`no cache topic "${topic}" (src/services.ts TOPICS)`);
    t.one(this.ctx, id, sub);
    this.send({ from: this.ctx.config.instanceId, topic, id, ...(sub !== undefined ? { sub } : {}) });
  }

  /** Tells the peers new work of `topic` is due (throttled: one message per topic per WAKE_THROTTLE_MS). */
  wakePeers(topic: string): void {
    if (!this.channel || this.ctx.store.engine !== "postgres") return;
    if (this.pendingWake.has(topic)) return;
    const now = performance.now();
    const wait = (this.lastWake.get(topic) ?? -Infinity) + WAKE_THROTTLE_MS - now;
    const go = () => {
      this.pendingWake.delete(topic);
      this.lastWake.set(topic, performance.now());
      this.send({ from: this.ctx.config.instanceId, topic, id: "" });
    };
    if (wait <= 0) return go();
    // The trailing message carries every wake-up of the gap.
    this.pendingWake.set(topic, setTimeout(go, Math.ceil(wait)));
  }

  /** Drops every cache (the listener was down: messages may have been missed). */
  clearAll(): void {
    this.fullClears++;
    for (const t of Object.values(this.topics.caches)) t.all(this.ctx);
  }

  private send(m: PeerMessage): void {
    if (!this.channel || this.ctx.store.engine !== "postgres") return;
    this.channel.send(m).catch((e) => {
      // The change itself committed; a peer that misses this message keeps its cache until its next
      // full clear. Logged so an operator sees it.
      this.ctx.log.warn("peer channel: a message could not be sent", { topic: m.topic, error: String((e as Error)?.message ?? e) });
    });
  }

  private receive(m: PeerMessage): void {
    if (m.from === this.ctx.config.instanceId) return; // our own
    this.received.set(m.topic, (this.received.get(m.topic) ?? 0) + 1);
    const wake = this.topics.wakes[m.topic];
    if (wake) return wake(this.ctx);
    const t = this.topics.caches[m.topic];
    if (!t) return; // a newer peer's topic: nothing cached here
    t.one(this.ctx, m.id, m.sub);
    const key = `${m.topic}\n${m.id}\n${m.sub ?? ""}`;
    if (this.secondClears.has(key)) return;
    const timer = setTimeout(() => {
      this.secondClears.delete(key);
      t.one(this.ctx, m.id, m.sub);
    }, SECOND_CLEAR_MS);
    (timer as { unref?: () => void }).unref?.();
    this.secondClears.set(key, timer);
  }
}

/** Clears a cache here and on every peer (call after the change committed). */
export function invalidate(ctx: AppContext, topic: string, id: string, sub?: string): void {
  ctx.services.peers.invalidate(topic, id, sub);
}

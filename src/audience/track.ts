/**
 * /v1/track's write path: a micro-batcher. Requests validated at the edge are queued; one flush
 * per event-loop turn commits every pending track in ONE sqlite transaction (raw prepared
 * statements inside ctx.store.exclusive) and only then resolves each request, so a 200 still
 * means "persisted". If a batch fails as a whole it is replayed one track per transaction, so a
 * bad item only fails its own request. Events are handed to ctx.hooks.onEvent after the commit.
 */
import type { Database } from "bun:sqlite";
import type { AppContext } from "../context";
import type { Data } from "./data-rules";
import { contactsChangedMany } from "./changes";
import { notifyEvents, type RecordedEvent } from "./events";
import { insertEventRaw, upsertContactRaw } from "./raw";

export interface TrackInput {
  projectId: string;
  /** Validated; any case. */
  email: string;
  /** Validated and not reserved. */
  event: string;
  subscribed?: boolean;
  data?: Data | null;
}

export interface TrackResult {
  contactId: string;
  eventId: string;
  createdAt: number;
  /** The tracked event plus a subscription event when the track flipped `subscribed`. */
  events: RecordedEvent[];
}

/** One track inside an open transaction: upsert the contact (new contacts subscribed by default), insert the event. */
export function applyTrack(sqlite: Database, now: number, input: TrackInput): TrackResult {
  const r = upsertContactRaw(sqlite, now, {
    projectId: input.projectId,
    email: input.email,
    subscribed: input.subscribed,
    defaultSubscribed: true,
    data: input.data,
    source: "track",
  });
  const eventId = insertEventRaw(sqlite, now, { projectId: input.projectId, contactId: r.contact.id, name: input.event, data: r.provided });
  const events = r.events;
  events.push({ projectId: input.projectId, contactId: r.contact.id, eventId, name: input.event, data: r.provided });
  return { contactId: r.contact.id, eventId, createdAt: now, events };
}

interface Pending {
  input: TrackInput;
  resolve: (r: TrackResult) => void;
  reject: (e: unknown) => void;
}

/** Upper bound of one transaction (keeps the lock short for other writers). */
const MAX_BATCH = 1000;

export class TrackBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private flushing: Promise<void> | null = null;
  private notifying = new Set<Promise<void>>();

  constructor(private readonly ctx: AppContext) {}

  track(input: TrackInput): Promise<TrackResult> {
    return new Promise<TrackResult>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.scheduled && !this.flushing) {
        this.scheduled = true;
        setImmediate(() => this.startFlush());
      }
    });
  }

  /** Waits until everything queued so far is committed (module stop). */
  async drain(): Promise<void> {
    while (this.queue.length || this.flushing || this.scheduled) {
      if (this.flushing) await this.flushing;
      else if (this.queue.length) this.startFlush();
      else await new Promise((r) => setImmediate(r));
    }
    await Promise.allSettled([...this.notifying]);
  }

  private startFlush() {
    this.scheduled = false;
    if (this.flushing) return;
    this.flushing = this.flushAll().finally(() => {
      this.flushing = null;
    });
  }

  private async flushAll(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, MAX_BATCH);
      const done: Array<[Pending, TrackResult]> = [];
      try {
        const now = this.ctx.clock.now();
        const results = await this.ctx.store.exclusive((sqlite) =>
          sqlite.transaction(() => batch.map((p) => applyTrack(sqlite, now, p.input)))(),
        );
        batch.forEach((p, i) => done.push([p, results[i]!]));
      } catch {
        // Replay one by one so only the failing track fails.
        for (const p of batch) {
          try {
            const now = this.ctx.clock.now();
            const r = await this.ctx.store.exclusive((sqlite) => sqlite.transaction(() => applyTrack(sqlite, now, p.input))());
            done.push([p, r]);
          } catch (e) {
            p.reject(e);
          }
        }
      }
      for (const [p, r] of done) p.resolve(r);
      if (done.length) this.ctx.feed.wake();
      if (done.length && this.ctx.hooks.contactsChanged.length) {
        // Tracked segments follow the written contacts after the commit, one pass per project and batch.
        const n = contactsChangedMany(this.ctx, done.map(([p, r]) => ({ projectId: p.input.projectId, contactId: r.contactId }))).finally(() =>
          this.notifying.delete(n),
        );
        this.notifying.add(n);
      }
      if (this.ctx.hooks.onEvent) {
        // Workflows start after the commit, without holding up the next batch.
        const n = notifyEvents(this.ctx, done.flatMap(([, r]) => r.events)).finally(() => this.notifying.delete(n));
        this.notifying.add(n);
      }
    }
  }
}

const batchers = new WeakMap<AppContext, TrackBatcher>();

/** The batcher of one running instance. */
export function trackBatcher(ctx: AppContext): TrackBatcher {
  let b = batchers.get(ctx);
  if (!b) batchers.set(ctx, (b = new TrackBatcher(ctx)));
  return b;
}

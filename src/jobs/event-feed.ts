/**
 * The event feed: the one `events` table read as a durable log. Each consumer (workflow triggers and
 * waits, outbound webhooks, …) has a cursor (`event_cursors.last_seq`); the feed hands it the events
 * after its cursor, in `seq` order, in batches, inside ONE transaction that also moves the cursor. So
 * what a handler writes in that transaction (an execution row, a job, a delivery row) happens exactly
 * once per event, and a kill -9 loses nothing: the next start resumes from the cursor.
 *
 * Handlers only write to the database (no network, no long work: enqueue a job for that). Writers of
 * events call `notifyEvents` after their commit, which wakes the feed; a slow poll is the safety net.
 * While events keep coming, rounds start at least minGapMs apart and each reads about roundBudgetMs
 * worth of events, yielding to the event loop between rounds (fewer, larger, still short transactions).
 * A consumer seen for the first time starts at the current end of the log (history is not replayed).
 * While every cursor stands at the same place (the usual case) one transaction reads a batch once,
 * hands it to every consumer and moves all cursors; otherwise each consumer steps on its own.
 * A batch whose handler throws is retried one event at a time; an event that still fails alone is
 * logged and skipped, so one poisoned event never stops a consumer.
 */
import type { Kysely, Transaction } from "kysely";
import type { Clock } from "../clock";
import type { DB } from "../db";
import type { Logger } from "../http/logger";

export interface FeedEvent {
  seq: number;
  id: string;
  projectId: string;
  contactId: string;
  name: string;
  data: Record<string, unknown> | null;
  emailId: string | null;
  createdAt: number;
}

export type FeedHandler = (trx: Transaction<DB>, events: FeedEvent[]) => Promise<void>;

export interface SubscribeOptions {
  /** Only events whose name passes are handed over (the cursor still moves past the others). */
  names?: (name: string) => boolean;
}

interface Consumer {
  name: string;
  handler: FeedHandler;
  names?: (name: string) => boolean;
}

export interface EventFeedOptions {
  batchSize?: number;
  pollMs?: number;
  /**
   * Rounds start at least this far apart while events keep coming: one round takes what several
   * would have (each round pays a transaction, its commit and every consumer's look-ups). Default 25 ms:
   * against 10 ms, /v1/track with a workflow on every event kept 69-82.5% of its rate without workflows
   * (four runs, three at 73% or more) instead of 67-73% (scripts/bench/workflows.ts), and the tail case of
   * scripts/bench/track.ts had p99 22.7-23.2 ms instead of 26 ms. An event reaches its consumers up to
   * ~25 ms later under load.
   */
  minGapMs?: number;
  /**
   * A round reads about as many events as its consumers handle in this time (never fewer than
   * MIN_BATCH): a round is one synchronous stretch of the event loop, which requests wait behind. Default 5 ms.
   */
  roundBudgetMs?: number;
  /**
   * Lock the cursor rows in each round's transaction (PostgreSQL): an instance that wants the same
   * consumer's round waits, then reads the moved cursor, so a batch is handled once across instances.
   */
  lockCursors?: boolean;
}

/** The fewest events a round may read when the time budget would allow less. */
const MIN_BATCH = 25;

export class EventFeed {
  private consumers = new Map<string, Consumer>();
  private stopped = true;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private wakeQueued = false;
  /** The pump while one runs; a wake during it asks for one more round. */
  private pumping: Promise<void> | null = null;
  private again = false;
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly minGapMs: number;
  private readonly roundBudgetMs: number;
  /** When the last round started, and the wake waiting for the gap to pass. */
  private lastRoundAt = -Infinity;
  private gapTimer: ReturnType<typeof setTimeout> | null = null;
  /** Milliseconds per event the consumers took lately (moving average): sizes the next read. */
  private msPerEvent = 0;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: EventFeedOptions = {},
  ) {
    this.batchSize = opts.batchSize ?? 500;
    this.pollMs = opts.pollMs ?? 1000;
    this.minGapMs = opts.minGapMs ?? 25;
    this.roundBudgetMs = opts.roundBudgetMs ?? 5;
    this.lockCursors = opts.lockCursors ?? false;
  }
  private readonly lockCursors: boolean;

  /** Registers a consumer (at install time, before start). The name is its durable identity. */
  subscribe(name: string, handler: FeedHandler, opts: SubscribeOptions = {}): void {
    if (this.consumers.has(name)) throw new Error(`event feed consumer "${name}" registered twice`);
    this.consumers.set(name, { name, handler, names: opts.names });
  }

  /** Creates missing cursors at the end of the log, then starts following it. */
  async start(): Promise<void> {
    if (this.consumers.size) {
      const now = this.clock.now();
      const end = await this.db.selectFrom("events").select((eb) => eb.fn.max("seq").as("max")).executeTakeFirst();
      const last = Number(end?.max ?? 0);
      await this.db
        .insertInto("event_cursors")
        .values([...this.consumers.keys()].map((consumer) => ({ consumer, last_seq: last, updated_at: now })))
        .onConflict((oc) => oc.column("consumer").doNothing())
        .execute();
    }
    this.stopped = false;
    this.wakeHere();
    this.poll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.gapTimer) clearTimeout(this.gapTimer);
    this.gapTimer = null;
    await this.pumping?.catch(() => {});
  }

  /**
   * New events were committed: let every consumer catch up (coalesced to one round, run in the next
   * turn of the event loop; while events keep coming, rounds start at least minGapMs apart, so one
   * round takes what several would).
   */
  wake(): void {
    this.onWake?.();
    this.wakeHere();
  }

  /** Told after events committed here (the peer bus sends it on to the other instances). */
  onWake: (() => void) | null = null;

  /** wake() for this instance only (the poll, a peer's message). */
  wakeHere(): void {
    if (this.stopped || this.wakeQueued || this.gapTimer || !this.consumers.size) return;
    const wait = this.lastRoundAt + this.minGapMs - performance.now();
    if (wait > 0) {
      this.gapTimer = setTimeout(() => {
        this.gapTimer = null;
        this.wakeHere();
      }, Math.ceil(wait));
      return;
    }
    this.wakeQueued = true;
    // A later turn, not a microtask: the responses of the requests whose commit woke the feed go out
    // before its round runs (workflows.ts: /v1/track p50 6 ms with workflows, was 7-9).
    setImmediate(() => {
      this.wakeQueued = false;
      void this.pump();
    });
  }

  /** Runs every consumer until it has reached the end of the log (tests). */
  async drain(): Promise<void> {
    if (this.pumping) await this.pumping;
    // Until a round reads nothing (a round that only brings cursors together reads less than a batch).
    while ((await this.stepAll()) > 0) {}
  }

  private poll(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wakeHere();
      this.poll();
    }, this.pollMs);
  }

  private pump(): Promise<void> {
    if (this.pumping) {
      this.again = true;
      return this.pumping;
    }
    this.pumping = (async () => {
      try {
        do {
          this.again = false;
          for (;;) {
            if (this.stopped) break;
            this.lastRoundAt = performance.now();
            const limit = this.roundLimit();
            const read = await this.stepAll(limit);
            this.measure(read, performance.now() - this.lastRoundAt);
            if (read < limit) break;
            // More are waiting: let requests and timers run between two rounds (each round is one
            // synchronous stretch of the event loop).
            await new Promise((r) => setImmediate(r));
          }
        } while (this.again && !this.stopped);
      } catch (e) {
        this.log.error("event feed failed", { error: String((e as Error)?.stack ?? e) });
      } finally {
        this.pumping = null;
      }
    })();
    return this.pumping;
  }

  /** How many events the next round reads: about roundBudgetMs worth, between MIN_BATCH and batchSize. */
  private roundLimit(): number {
    if (!(this.msPerEvent > 0) || this.roundBudgetMs === Infinity) return this.batchSize;
    return Math.max(Math.min(MIN_BATCH, this.batchSize), Math.min(this.batchSize, Math.floor(this.roundBudgetMs / this.msPerEvent)));
  }

  private measure(read: number, ms: number): void {
    if (read < 5) return; // the fixed cost of a round would dominate
    const sample = ms / read;
    this.msPerEvent = this.msPerEvent > 0 ? this.msPerEvent * 0.8 + sample * 0.2 : sample;
  }

  /**
   * One batch for every consumer: read once and handed to each in one transaction when their cursors
   * agree; each on its own (step) when they do not, or when a handler failed. Returns the most log
   * rows any consumer read (== limit: more may follow).
   */
  private async stepAll(limit = this.batchSize): Promise<number> {
    const consumers = [...this.consumers.values()];
    if (!consumers.length) return 0;
    const names = consumers.map((c) => c.name);
    try {
      return await this.db.transaction().execute(async (trx) => {
        let read = trx.selectFrom("event_cursors").select("last_seq").where("consumer", "in", names);
        if (this.lockCursors) read = read.orderBy("consumer").forUpdate();
        const cursors = await read.execute();
        if (cursors.length !== consumers.length || cursors.some((c) => c.last_seq !== cursors[0]!.last_seq)) {
          throw new Diverged(Math.max(...cursors.map((c) => c.last_seq)));
        }
        const rows = await this.readAfter(trx, cursors[0]!.last_seq, undefined, limit);
        if (!rows.length) return 0;
        const events = rows.map(toFeedEvent);
        for (const c of consumers) {
          const mine = c.names ? events.filter((e) => c.names!(e.name)) : events;
          if (!mine.length) continue;
          try {
            await c.handler(trx, mine);
          } catch (e) {
            throw new BatchFailed(e);
          }
        }
        await trx.updateTable("event_cursors").set({ last_seq: rows[rows.length - 1]!.seq, updated_at: this.clock.now() }).where("consumer", "in", names).execute();
        return rows.length;
      });
    } catch (e) {
      if (!(e instanceof Diverged) && !(e instanceof BatchFailed)) throw e;
      // Diverged: the ones behind catch up to the furthest cursor, no further, so that the next
      // round finds them together even while events keep coming. Failed: each takes the batch alone.
      const upTo = e instanceof Diverged ? e.furthest : undefined;
      let most = 0;
      for (const c of consumers) most = Math.max(most, await this.step(c, upTo));
      return most;
    }
  }

  /** The next batch after `seq` (no further than `upTo`). */
  private readAfter(db: Kysely<DB> | Transaction<DB>, seq: number, upTo?: number, limit = this.batchSize) {
    let q = db
      .selectFrom("events")
      .select(["seq", "id", "project_id", "contact_id", "name", "data", "email_id", "created_at"])
      .where("seq", ">", seq);
    if (upTo !== undefined) q = q.where("seq", "<=", upTo);
    return q.orderBy("seq").limit(limit).execute();
  }

  /** One batch for one consumer. Returns how many log rows it read (== batchSize: more may follow). */
  private async step(c: Consumer, upTo?: number): Promise<number> {
    const rows = await this.db.transaction().execute(async (trx) => {
      let read = trx.selectFrom("event_cursors").select("last_seq").where("consumer", "=", c.name);
      if (this.lockCursors) read = read.forUpdate();
      const cursor = await read.executeTakeFirst();
      if (!cursor) return [];
      const rows = await this.readAfter(trx, cursor.last_seq, upTo);
      if (!rows.length) return rows;
      const events = rows.filter((r) => !c.names || c.names(r.name)).map(toFeedEvent);
      if (events.length) {
        try {
          await c.handler(trx, events);
        } catch (e) {
          throw new BatchFailed(e);
        }
      }
      await this.moveCursor(trx, c, rows[rows.length - 1]!.seq);
      return rows;
    }).catch(async (e) => {
      if (!(e instanceof BatchFailed)) throw e;
      return this.stepOneByOne(c, upTo);
    });
    return rows.length;
  }

  /** After a failed batch: the same events one per transaction; one that fails alone is skipped. */
  private async stepOneByOne(c: Consumer, upTo?: number): Promise<unknown[]> {
    const cursor = await this.db.selectFrom("event_cursors").select("last_seq").where("consumer", "=", c.name).executeTakeFirst();
    if (!cursor) return [];
    const rows = await this.readAfter(this.db, cursor.last_seq, upTo);
    for (const row of rows) {
      const ev = toFeedEvent(row);
      const wanted = !c.names || c.names(ev.name);
      try {
        await this.db.transaction().execute(async (trx) => {
          if (wanted) await c.handler(trx, [ev]);
          await this.moveCursor(trx, c, ev.seq);
        });
      } catch (e) {
        this.log.error("event feed: event skipped after its handler failed", { consumer: c.name, event: ev.id, name: ev.name, error: String((e as Error)?.stack ?? e) });
        await this.moveCursor(this.db, c, ev.seq);
      }
    }
    return rows;
  }

  private async moveCursor(db: Kysely<DB> | Transaction<DB>, c: Consumer, seq: number) {
    await db.updateTable("event_cursors").set({ last_seq: seq, updated_at: this.clock.now() }).where("consumer", "=", c.name).execute();
  }
}

/** The consumers' cursors stand at different places: the ones behind catch up to `furthest`. */
class Diverged extends Error {
  constructor(readonly furthest: number) {
    super("event feed cursors diverged");
  }
}

class BatchFailed extends Error {
  constructor(readonly cause: unknown) {
    super(String((cause as Error)?.message ?? cause));
  }
}

function toFeedEvent(r: { seq: number; id: string; project_id: string; contact_id: string; name: string; data: string | null; email_id: string | null; created_at: number }): FeedEvent {
  let data: Record<string, unknown> | null = null;
  if (r.data) {
    try {
      data = JSON.parse(r.data);
    } catch {
      data = null;
    }
  }
  return { seq: r.seq, id: r.id, projectId: r.project_id, contactId: r.contact_id, name: r.name, data, emailId: r.email_id, createdAt: r.created_at };
}

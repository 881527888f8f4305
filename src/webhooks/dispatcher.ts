import { PollTimer } from "../jobs/poll-timer";
import { atomic, qOf } from "../db/raw";
import type { AppContext } from "../context";
import { safeFetch, type SafeFetchOutcome } from "../net/safe-fetch";
import { signWebhook } from "./sign";
import { GroupCommit } from "../db/group-commit";
import { claimDelivery, releaseOwnDeliveries, dueDeliveries, endpointsWithDue, recordAttemptsRaw, type AttemptRecord } from "./store";

/**
 * Sends the PENDING webhook_deliveries rows. The rows are the durable queue (written in the event
 * feed's transaction), so a restart, even after kill -9, finds every delivery that was not yet
 * recorded as done and sends it again (at least once, same webhook-id).
 *
 * Why not one job per delivery in the shared job loop: that loop has a few slots shared by
 * campaign fan-out, imports and workflows, and a dead endpoint holds a slot for its whole timeout.
 * Here each endpoint has its own small concurrency cap, and the whole dispatcher a global one, so
 * a slow or dead endpoint only delays its own deliveries.
 *
 * Webhooks yield to bulk mail: while the delivery engine makes over 100 attempts/s (a campaign, a
 * large send), a delivery waits until that slows down or until it has waited
 * `MAILSVC_WEBHOOK_MAX_DEFER` (30 s by default; 0: never). Each POST costs about as much CPU as a
 * sixth of a message, two per message; without the wait a bulk send on a small machine loses a
 * quarter of its rate (scripts/bench/send.ts --webhooks). Under sustained bulk load the deliveries
 * flow with that lag; nothing is dropped, the rows are the queue.
 */
export interface DispatcherOptions {
  perEndpoint?: number;
  global?: number;
  pollMs?: number;
  timeoutMs?: number;
}

interface SendTarget {
  id: string;
  url: string;
  secret: string;
}

interface Row {
  id: string;
  payload: string;
  attempts: number;
  next_attempt_at: number | null;
}

/** One endpoint as the dispatcher sees it: its due rows read ahead in one query, and what is in flight. */
interface Lane {
  ep: SendTarget;
  queue: Row[];
  /** Started and not yet recorded (a read meanwhile must not queue them again). */
  inflight: Set<string>;
  /** Requests on the wire (the per-endpoint cap); a request's slot frees when its response is in. */
  sending: number;
  refilling: boolean;
  /** Set by forget(): nothing more starts from this lane (its in-flight attempts finish). */
  dead: boolean;
}

/** How many due rows of one endpoint are read at once. */
const READ_AHEAD = 100;
/**
 * The latest due time a delivery may have to be sent now: `now`, or while mail goes out in bulk,
 * `now - maxDeferMs` (deliveries wait for the mail, at most that long).
 */
export function dueCutoff(now: number, mailBusy: boolean, maxDeferMs: number): number {
  return mailBusy && maxDeferMs > 0 ? now - maxDeferMs : now;
}

/** How long a finished delivery id is remembered (a read that began before it finished must not send it again). */
const RECENT_MS = 60_000;

interface Finished {
  seq: number;
  at: number;
}

export class WebhookDispatcher {
  private readonly perEndpoint: number;
  private readonly global: number;
  private readonly loop: PollTimer;
  /** PostgreSQL: the release of this instance's own claims before the first tick (stop waits for it). */
  private starting: Promise<void> = Promise.resolve();
  readonly timeoutMs: number;
  private lanes = new Map<string, Lane>();
  /** Recently finished attempts, numbered: a read that began before one finished may still see its row as due. */
  private recent = new Map<string, Finished>();
  private finishedSeq = 0;
  private running = 0;
  private ticking = false;
  private again = false;
  private tasks = new Set<Promise<void>>();
  /** Attempt outcomes finishing within a few milliseconds of each other commit together. */
  private readonly commits: GroupCommit<{ id: string; record: AttemptRecord }>;

  constructor(private readonly ctx: AppContext, opts: DispatcherOptions = {}) {
    this.perEndpoint = opts.perEndpoint ?? 8;
    this.global = opts.global ?? 64;
    this.loop = new PollTimer(opts.pollMs ?? 500, () => this.tick());
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.commits = new GroupCommit(
      (items) => atomic(this.ctx.db, this.ctx.store.engine, (q) => recordAttemptsRaw(q, items)),
      5,
      () => this.running > 0, // another request on the wire will have an outcome to record soon
      (count, e) => this.ctx.log.error("webhook attempts failed to record", { count, error: String(e) }),
    );
  }

  start(): void {
    if (this.ctx.store.engine !== "postgres") return this.loop.start();
    // PostgreSQL: what this instance id was sending when it died is due again at once (before the first tick).
    this.starting = releaseOwnDeliveries(qOf(this.ctx.db, "postgres"), this.ctx.config.instanceId, this.ctx.clock.now())
      .catch((e) => this.ctx.log.error("webhook dispatcher: releasing this instance's deliveries failed", { error: String(e) }))
      .then(() => this.loop.start());
  }

  async stop(): Promise<void> {
    await this.starting;
    this.loop.stop();
    await Promise.allSettled([...this.tasks]);
    await this.commits.flush();
  }

  /** New deliveries may be due (called after the feed's transaction commits, or soon after). */
  wake(delayMs = 0): void {
    this.loop.schedule(delayMs);
  }

  /**
   * The endpoint was disabled, deleted or changed: drop what was read ahead for it, so nothing
   * more is sent from the old state (called by the service after its transaction commits).
   */
  forget(endpointId: string): void {
    const lane = this.lanes.get(endpointId);
    if (!lane) return;
    lane.dead = true;
    lane.queue = [];
    this.lanes.delete(endpointId);
  }


  private async tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    try {
      do {
        this.again = false;
        await this.claim();
      } while (this.again && !this.loop.stopped);
    } catch (e) {
      this.ctx.log.error("webhook dispatcher tick failed", { error: String(e) });
    } finally {
      this.ticking = false;
    }
  }

  /** Reads the endpoints with due rows, tops up their lanes and starts what the caps allow. */
  private async claim(): Promise<void> {
    if (this.loop.stopped || this.running >= this.global) return;
    const now = this.ctx.clock.now();
    const cutoff = Date.now() - RECENT_MS;
    // Oldest first (launch() re-inserts on finish): stop at the first one still recent.
    for (const [id, f] of this.recent) {
      if (f.at >= cutoff) break;
      this.recent.delete(id);
    }
    const due = this.cutoff(now);
    for (const ep of await endpointsWithDue(this.ctx.db, due)) {
      let lane = this.lanes.get(ep.id);
      if (!lane) this.lanes.set(ep.id, (lane = { ep, queue: [], inflight: new Set(), sending: 0, refilling: false, dead: false }));
      lane.ep = ep;
      if (!lane.queue.length && !lane.refilling && lane.sending < this.perEndpoint) await this.refill(lane, due);
      this.launch(lane);
      if (this.running >= this.global) return;
    }
  }

  private cutoff(now = this.ctx.clock.now()): number {
    return dueCutoff(now, this.ctx.metrics.mailLoad.busy(), this.ctx.config.webhookMaxDeferMs);
  }

  private async refill(lane: Lane, due: number): Promise<void> {
    lane.refilling = true;
    const readFrom = this.finishedSeq;
    try {
      const rows = await dueDeliveries(this.ctx.db, lane.ep.id, due, READ_AHEAD + lane.inflight.size);
      if (lane.dead) return; // forgotten while reading: what was read may be stale
      const queued = new Set(lane.queue.map((r) => r.id));
      const staleRead = (id: string) => (this.recent.get(id)?.seq ?? 0) > readFrom; // finished while this read ran
      for (const r of rows) if (!lane.inflight.has(r.id) && !staleRead(r.id) && !queued.has(r.id)) lane.queue.push(r);
    } finally {
      lane.refilling = false;
    }
  }

  /** Starts queued rows of one lane up to the per-endpoint and global caps (due ones: the queue is in due order). */
  private launch(lane: Lane): void {
    const due = lane.queue.length ? this.cutoff() : 0;
    while (!lane.dead && lane.queue.length && lane.sending < this.perEndpoint && this.running < this.global && !this.loop.stopped) {
      if ((lane.queue[0]!.next_attempt_at ?? 0) > due) break; // waiting for bulk mail (read before it began)
      const row = lane.queue.shift()!;
      lane.inflight.add(row.id);
      lane.sending++;
      this.running++;
      let slotHeld = true;
      const freeSlot = () => {
        if (!slotHeld) return;
        slotHeld = false;
        lane.sending--;
        this.running--;
        this.launch(lane); // the next request need not wait for this one's commit
      };
      const task = this.deliver(lane, row, freeSlot).finally(() => {
        freeSlot();
        lane.inflight.delete(row.id);
        this.recent.delete(row.id);
        this.recent.set(row.id, { seq: ++this.finishedSeq, at: Date.now() });
        this.tasks.delete(task);
        if (!lane.queue.length) {
          if (!lane.inflight.size && this.lanes.get(lane.ep.id) === lane) this.lanes.delete(lane.ep.id);
          this.wake();
        }
      });
      this.tasks.add(task);
    }
  }

  /** One attempt of one delivery (its slot freed once the response is in), then its outcome recorded (retry, delivered or failed). */
  private async deliver(lane: Lane, row: Row, responded: () => void): Promise<void> {
    try {
      // Nothing is sent once the endpoint is disabled, deleted or changed (forget() killed its lane).
      if (lane.dead) return;
      // PostgreSQL: instances share the deliveries; the one whose claim wins sends (SQLite: one instance per file).
      if (this.ctx.store.engine === "postgres" && row.next_attempt_at !== null) {
        const q = qOf(this.ctx.db, "postgres");
        if (!(await claimDelivery(q, row.id, Number(row.next_attempt_at), this.ctx.clock.now() + this.ctx.config.leaseMs, this.ctx.config.instanceId))) return;
      }
      const outcome = await this.send(lane.ep, row.id, row.payload);
      responded();
      await this.commits.add({ id: row.id, record: this.decide(outcome, row.attempts + 1) });
    } catch {
      // logged by the group commit; the row stays PENDING and is sent again (at least once)
    }
  }

  /** Signs and POSTs one body (also used by the test ping). */
  send(ep: SendTarget, webhookId: string, body: string): Promise<SafeFetchOutcome> {
    // The service's clock, like the body's timestamp and the workflow WEBHOOK step's signature.
    const headers = { "content-type": "application/json", ...signWebhook(ep.secret, webhookId, new Date(this.ctx.clock.now()), body) };
    return safeFetch(this.ctx.config, { url: ep.url, method: "POST", headers, body, timeoutMs: this.timeoutMs, maxBodyBytes: 1024 });
  }

  /** Retry after the schedule's next wait on non-2xx or network failure; refused addresses fail at once. */
  decide(o: SafeFetchOutcome, attempts: number) {
    const now = this.ctx.clock.now();
    const base = { attempts, responseStatus: o.status ?? null, responseBody: o.body ?? null, now };
    if (o.ok) return { ...base, status: "DELIVERED" as const, nextAttemptAt: null, error: null, deliveredAt: now };
    const error = o.error ?? `HTTP ${o.status}`;
    const permanent = o.errorKind === "refused" || o.errorKind === "invalid_url";
    const wait = this.ctx.config.webhookRetryScheduleMs[attempts - 1];
    if (permanent || wait === undefined) return { ...base, status: "FAILED" as const, nextAttemptAt: null, error, deliveredAt: null };
    return { ...base, status: "PENDING" as const, nextAttemptAt: now + wait, error, deliveredAt: null };
  }
}

declare module "../context" {
  interface Services {
    /** Outbound webhook deliveries (started and stopped by modules/webhooks). */
    webhookDispatcher: WebhookDispatcher;
  }
}

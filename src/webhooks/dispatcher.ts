import type { AppContext } from "../context";
import { safeFetch, type SafeFetchOutcome } from "../net/safe-fetch";
import { signWebhook } from "./sign";
import { dueDeliveries, endpointForSend, endpointsWithDue, recordAttempt } from "./store";

/**
 * Sends the PENDING webhook_deliveries rows. The rows are the durable queue (written in the event
 * feed's transaction), so a restart, even after kill -9, finds every delivery that was not yet
 * recorded as done and sends it again (at least once, same webhook-id).
 *
 * Why not one job per delivery in the shared job loop: that loop has a few slots shared by
 * campaign fan-out, imports and workflows, and a dead endpoint holds a slot for its whole timeout.
 * Here each endpoint has its own small concurrency cap, and the whole dispatcher a global one, so
 * a slow or dead endpoint only delays its own deliveries.
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

export class WebhookDispatcher {
  private readonly perEndpoint: number;
  private readonly global: number;
  private readonly pollMs: number;
  readonly timeoutMs: number;
  private inflight = new Map<string, Set<string>>(); // endpoint id -> delivery ids
  private running = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private ticking = false;
  private again = false;
  private stopped = true;
  private tasks = new Set<Promise<void>>();

  constructor(private readonly ctx: AppContext, opts: DispatcherOptions = {}) {
    this.perEndpoint = opts.perEndpoint ?? 8;
    this.global = opts.global ?? 64;
    this.pollMs = opts.pollMs ?? 500;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([...this.tasks]);
  }

  /** New deliveries may be due (called after the feed's transaction commits, or soon after). */
  wake(delayMs = 0): void {
    if (!this.stopped) this.schedule(delayMs);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.tick().finally(() => {
        if (!this.stopped && !this.timer) this.schedule(this.pollMs);
      });
    }, ms);
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
      } while (this.again && !this.stopped);
    } catch (e) {
      this.ctx.log.error("webhook dispatcher tick failed", { error: String(e) });
    } finally {
      this.ticking = false;
    }
  }

  private async claim(): Promise<void> {
    if (this.stopped || this.running >= this.global) return;
    const now = this.ctx.clock.now();
    const endpoints = await endpointsWithDue(this.ctx.db, now);
    for (const ep of endpoints) {
      const busy = this.inflight.get(ep.id) ?? new Set<string>();
      const free = Math.min(this.perEndpoint - busy.size, this.global - this.running);
      if (free <= 0) continue;
      const rows = await dueDeliveries(this.ctx.db, ep.id, now, free + busy.size);
      for (const row of rows) {
        if (busy.has(row.id) || busy.size >= this.perEndpoint || this.running >= this.global) continue;
        busy.add(row.id);
        this.inflight.set(ep.id, busy);
        this.running++;
        const task = this.deliver(ep, row).finally(() => {
          busy.delete(row.id);
          if (!busy.size) this.inflight.delete(ep.id);
          this.running--;
          this.tasks.delete(task);
          this.wake();
        });
        this.tasks.add(task);
      }
      if (this.running >= this.global) return;
    }
  }

  /** One attempt of one delivery, then its outcome recorded (retry, delivered or failed). */
  private async deliver(ep: SendTarget, row: { id: string; payload: string; attempts: number }): Promise<void> {
    try {
      // Re-read: nothing is sent once the endpoint is disabled or deleted (or its URL changed).
      const fresh = await endpointForSend(this.ctx.db, ep.id);
      if (!fresh || !fresh.enabled) return;
      const outcome = await this.send(fresh, row.id, row.payload);
      await recordAttempt(this.ctx.db, row.id, this.decide(outcome, row.attempts + 1));
    } catch (e) {
      this.ctx.log.error("webhook delivery failed to record", { delivery: row.id, error: String(e) });
    }
  }

  /** Signs and POSTs one body (also used by the test ping). */
  send(ep: SendTarget, webhookId: string, body: string): Promise<SafeFetchOutcome> {
    const headers = { "content-type": "application/json", ...signWebhook(ep.secret, webhookId, new Date(), body) };
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

const instances = new WeakMap<AppContext, WebhookDispatcher>();

/** The dispatcher of one running instance (created on first use). */
export function dispatcherOf(ctx: AppContext): WebhookDispatcher {
  let d = instances.get(ctx);
  if (!d) instances.set(ctx, (d = new WebhookDispatcher(ctx)));
  return d;
}

// The outbox loop. Email rows are the queue: due PENDING/DEFERRED rows are claimed with a lease
// (SENDING), built and signed, handed to the dispatcher (grouped per destination), and each
// outcome is committed before that connection carries its next message. Outcomes are group-
// committed: one transaction per batch of outcomes that arrived together.
import type { Resolver } from "node:dns/promises";
import type { AppContext } from "../context";
import { domainOf } from "./address";
import { InlineBuilder, WorkerBuilder, type MessageBuilder } from "./builder";
import { envelopeFromFor, planMessage, SigningKeys } from "./plan";
import { createResolver } from "./dns";
import { recordBounces, type BounceWrite } from "./bounces";
import { notifyEvents } from "./deps";
import { RouteCache } from "./mx";
import {
  claimDue,
  expiredLeases,
  loadContents,
  requeue,
  suppressedAmong,
  trackingModes,
  writeOutcomes,
  type ClaimedEmail,
  type ContentRow,
  type EventRow,
  type OutcomeWrite,
} from "./outbox-store";
import { Dispatcher, parseRelayUrl, type DeliveryInfo } from "./pool";
import { sharedSigner } from "./signer";
import { secretOf } from "./tokens";
import { storeLinks, type FreshLinks } from "./tracked-links";
import type { DeliveryResult } from "./smtp-result";
import type { SmtpTimeouts } from "./smtp-client";

export interface OutboxOptions {
  /** Rows claimed per round. */
  batchSize: number;
  /** Claimed rows not yet finished (bounds memory: each holds a built message). */
  maxInflight: number;
  /** How often due rows (retries) are looked for when nothing wakes the loop. */
  pollMs: number;
  leaseMs: number;
  /** Messages per second per project (token bucket, burst of one second). */
  projectRatePerSecond: number;
  maxConnectionsPerDestination: number;
  idleMs: number;
  maxMessagesPerConnection: number;
  /** How long the first outcome of a group commit waits for others. */
  groupCommitMs: number;
  /** Build messages in a worker thread (see builder.ts); false builds them on the main thread. */
  buildInWorker: boolean;
  timeouts?: Partial<SmtpTimeouts>;
}

export const DEFAULT_OUTBOX_OPTIONS: OutboxOptions = {
  batchSize: 50,
  maxInflight: 60,
  pollMs: 500,
  leaseMs: 15 * 60_000,
  projectRatePerSecond: 2000,
  maxConnectionsPerDestination: 20,
  idleMs: 10_000,
  maxMessagesPerConnection: 1000,
  groupCommitMs: 5,
  buildInWorker: true,
};

/** Token bucket per project. */
class ProjectBuckets {
  private buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly rate: number) {}
  available(project: string, now: number): number {
    const b = this.buckets.get(project);
    if (!b) return this.rate;
    return Math.min(this.rate, b.tokens + ((now - b.at) * this.rate) / 1000);
  }
  take(project: string, n: number, now: number) {
    this.buckets.set(project, { tokens: this.available(project, now) - n, at: now });
    if (this.buckets.size > 10_000) this.buckets.clear();
  }
}

/** Email contents by id, bounded by size (contents with attachments can be megabytes). */
class ContentCache {
  private map = new Map<string, { row: ContentRow; size: number }>();
  private size = 0;
  // Small: the main thread only plans with a content and sends it to the build worker once.
  constructor(private readonly maxBytes = 2 * 1024 * 1024) {}
  get(id: string): ContentRow | undefined {
    const e = this.map.get(id);
    if (!e) return undefined;
    this.map.delete(id);
    this.map.set(id, e);
    return e.row;
  }
  set(row: ContentRow) {
    const size = row.html.length + row.subject.length + (row.text?.length ?? 0) + (row.attachments?.length ?? 0) + (row.headers?.length ?? 0);
    if (this.map.has(row.id)) return;
    this.map.set(row.id, { row, size });
    this.size += size;
    for (const [k, v] of this.map) {
      if (this.size <= this.maxBytes || this.map.size <= 1) break;
      this.map.delete(k);
      this.size -= v.size;
    }
  }
}

interface PendingOutcome {
  /** The email's campaign: told to ctx.hooks.campaignOutcomes once this outcome is committed. */
  campaignId?: string | null;
  write?: OutcomeWrite;
  bounce?: BounceWrite;
  events: EventRow[];
  resolve: () => void;
  reject: (e: unknown) => void;
}

const yieldToEventLoop = () => new Promise<void>((r) => setImmediate(r));

export class Outbox {
  readonly opts: OutboxOptions;
  private readonly inflight = new Map<string, ClaimedEmail>();
  private readonly contents = new ContentCache();
  private readonly buckets: ProjectBuckets;
  private readonly keys: SigningKeys;
  private builderInstance: MessageBuilder | null = null;
  /** Settles when every click-tracked link reported so far is stored (see storeLinksFirst). */
  private linksStored: Promise<void> = Promise.resolve();
  private readonly dispatcher: Dispatcher;
  private readonly relay: boolean;
  private readonly resolver: Resolver;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = true;
  private ticking: Promise<void> | null = null;
  private more = false;
  private lastSweep = 0;
  private pending: PendingOutcome[] = [];
  private flushing: Promise<void> | null = null;
  private flushTimer: ReturnType<typeof setTimeout> | null = null;
  private processing = new Set<Promise<void>>();

  constructor(
    private readonly ctx: AppContext,
    opts: Partial<OutboxOptions> = {},
  ) {
    // MAILSVC_SEND_RATE (IP warm-up) replaces the default per-project rate; explicit options win.
    this.opts = { ...DEFAULT_OUTBOX_OPTIONS, ...(ctx.config.sendRate ? { projectRatePerSecond: ctx.config.sendRate } : {}), ...opts };
    this.buckets = new ProjectBuckets(this.opts.projectRatePerSecond);
    this.keys = new SigningKeys(ctx);
    this.resolver = createResolver(ctx.config);
    const relay = ctx.config.smtpRelay ? parseRelayUrl(ctx.config.smtpRelay) : null;
    this.relay = !!relay;
    this.dispatcher = new Dispatcher({
      clientName: ctx.config.hostname,
      mxPort: ctx.config.mxPort,
      relay,
      routes: new RouteCache(() => this.resolver, () => ctx.clock.now()),
      log: ctx.log,
      maxConnectionsPerDestination: this.opts.maxConnectionsPerDestination,
      idleMs: this.opts.idleMs,
      maxMessagesPerConnection: this.opts.maxMessagesPerConnection,
      timeouts: this.opts.timeouts,
    });
  }

  /** Requeues rows a dead process left in SENDING, then starts the loop. */
  async start(): Promise<void> {
    const n = await this.ctx.store.exclusive((sqlite) => requeue(sqlite, this.ctx.clock.now(), "all-sending"));
    if (n) this.ctx.log.info("outbox: requeued emails left in SENDING by the previous run", { count: n });
    this.stopped = false;
    this.schedule(0);
  }

  /** Claims due emails now (after a send request committed). */
  wake(): void {
    if (!this.stopped) this.schedule(0);
  }

  /** Emails claimed and not yet finished. */
  get inFlight(): number {
    return this.inflight.size;
  }

  /** Stops claiming, lets messages on the wire finish, and puts everything else back in the queue. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
    await Promise.allSettled([...this.processing]);
    await this.dispatcher.close();
    await this.builderInstance?.close();
    this.builderInstance = null;
    await this.flush();
    const left = [...this.inflight.keys()];
    this.inflight.clear();
    if (left.length) await this.ctx.store.exclusive((sqlite) => requeue(sqlite, this.ctx.clock.now(), left));
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    if (this.timer) {
      if (ms > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.ticking) {
        this.more = true;
        return;
      }
      this.ticking = this.tick()
        .catch((e) => this.ctx.log.error("outbox tick failed", { error: String(e) }))
        .finally(() => {
          this.ticking = null;
          if (this.stopped) return;
          if (this.more) {
            this.more = false;
            this.schedule(0);
          } else this.schedule(this.opts.pollMs);
        });
    }, ms);
  }

  private async tick(): Promise<void> {
    const now = this.ctx.clock.now();
    if (now - this.lastSweep > 60_000) {
      this.lastSweep = now;
      await this.sweepLeases(now);
    }
    const free = this.opts.maxInflight - this.inflight.size;
    if (free < this.claimThreshold()) return; // finishing rows wake us
    const limit = Math.min(free, this.opts.batchSize);
    const rows = await this.ctx.store.exclusive((sqlite) =>
      claimDue(sqlite, now, now + this.opts.leaseMs, limit * 3, (cands) => this.choose(cands, limit, now)),
    );
    if (!rows.length) return;
    for (const r of rows) this.inflight.set(r.id, r);
    const p = this.process(rows)
      .catch((e) => this.ctx.log.error("outbox batch failed", { error: String(e) }))
      .finally(() => this.processing.delete(p));
    this.processing.add(p);
    if (rows.length >= limit) this.more = true;
  }

  /** Round-robin over projects in due order, each within its send rate. */
  private choose(cands: { id: string; project_id: string | null }[], limit: number, now: number): string[] {
    const byProject = new Map<string, string[]>();
    for (const c of cands) {
      const k = c.project_id ?? "";
      let l = byProject.get(k);
      if (!l) byProject.set(k, (l = []));
      l.push(c.id);
    }
    const budget = new Map<string, number>();
    for (const k of byProject.keys()) budget.set(k, Math.floor(this.buckets.available(k, now)));
    const out: string[] = [];
    const taken = new Map<string, number>();
    let progress = true;
    while (out.length < limit && progress) {
      progress = false;
      for (const [k, ids] of byProject) {
        if (out.length >= limit) break;
        const t = taken.get(k) ?? 0;
        if (t >= ids.length || t >= budget.get(k)!) continue;
        out.push(ids[t]!);
        taken.set(k, t + 1);
        progress = true;
      }
    }
    for (const [k, n] of taken) this.buckets.take(k, n, now);
    if (out.length < Math.min(limit, cands.length)) this.more = true; // rate-limited: look again soon
    return out;
  }

  private async sweepLeases(now: number) {
    const expired = await this.ctx.store.exclusive((sqlite) => expiredLeases(sqlite, now));
    const lost = expired.filter((id) => !this.inflight.has(id));
    if (lost.length) {
      await this.ctx.store.exclusive((sqlite) => requeue(sqlite, now, lost));
      this.ctx.log.warn("outbox: requeued emails whose lease expired", { count: lost.length });
    }
  }

  private async process(rows: ClaimedEmail[]): Promise<void> {
    const missing = [...new Set(rows.map((r) => r.content_id))].filter((id) => !this.contents.get(id));
    if (missing.length) {
      const loaded = await this.ctx.store.exclusive((sqlite) => loadContents(sqlite, missing));
      for (const c of loaded) this.contents.set(c);
    }
    const suppressed = new Set<string>();
    const byProject = new Map<string, string[]>();
    for (const r of rows) {
      if (!r.project_id) continue;
      let l = byProject.get(r.project_id);
      if (!l) byProject.set(r.project_id, (l = []));
      l.push(r.to_email);
    }
    for (const [pid, emails] of byProject) {
      const s = await this.ctx.store.exclusive((sqlite) => suppressedAmong(sqlite, pid, emails));
      for (const e of s) suppressed.add(`${pid}|${e}`);
    }
    const modes = byProject.size ? await this.ctx.store.exclusive((sqlite) => trackingModes(sqlite, [...byProject.keys()])) : new Map<string, string>();
    const builds: Promise<void>[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (this.stopped) break; // left in `inflight`: stop() puts them back
      if (row.project_id && suppressed.has(`${row.project_id}|${row.to_email}`)) {
        builds.push(this.settle(row, { write: { kind: "SUPPRESSED", id: row.id, reply: "address is suppressed (earlier hard bounce or complaint)" }, events: [] }));
        continue;
      }
      const content = this.contents.get(row.content_id);
      if (!content) {
        builds.push(this.settle(row, { write: { kind: "FAILED", id: row.id, reply: "local error: email content missing", host: null }, events: [] }));
        continue;
      }
      // Content marked no_tracking (a campaign's test send) is never tracked.
      const mode = row.project_id ? (content.no_tracking ? "DISABLED" : (modes.get(row.project_id) ?? "ENABLED")) : undefined;
      builds.push(this.deliver(row, content, mode));
      if (i % 8 === 7) await yieldToEventLoop();
    }
    await Promise.all(builds);
  }

  /** Built lazily: the token secret is loaded by the tracking module's install, after the outbox exists. */
  private get builder(): MessageBuilder {
    if (!this.builderInstance) {
      const secret = secretOf(this.ctx);
      this.builderInstance = this.opts.buildInWorker ? new WorkerBuilder(secret, sharedSigner(), this.ctx.log) : new InlineBuilder(secret, sharedSigner());
    }
    return this.builderInstance;
  }

  /**
   * The links must be stored before a message can leave (a click may come at once). A builder
   * reports a link once, with the first message that has it; messages built after that one wait for
   * its store too, so none leaves before its links are stored. A failed store fails (defers) the
   * messages waiting on it and makes the builder report its links again.
   */
  private storeLinksFirst(builder: MessageBuilder, projectId: string, links: FreshLinks): Promise<void> {
    if (!links.length) return this.linksStored;
    const mine = storeLinks(this.ctx, projectId, links).catch((e) => {
      builder.forgetLinks();
      throw e;
    });
    const all = Promise.all([this.linksStored, mine]).then(() => {});
    this.linksStored = all;
    all.catch(() => {
      if (this.linksStored === all) this.linksStored = Promise.resolve();
    });
    return all;
  }

  private async deliver(row: ClaimedEmail, content: ContentRow, trackingMode: string | undefined): Promise<void> {
    let built;
    const builder = this.builder;
    try {
      const plan = await planMessage(this.ctx, row, content, this.keys, trackingMode);
      built = await builder.build(plan, content);
      if (plan.decoration) {
        const raw = built.raw;
        await this.storeLinksFirst(builder, plan.decoration.projectId, built.links).catch((e) => {
          builder.release(raw);
          throw e;
        });
      }
      if (built.signed) this.ctx.metrics.dkimSignSeconds.observe(built.signMs / 1000);
    } catch (e) {
      this.ctx.log.error("outbox: building the message failed", { email: row.id, error: String(e) });
      return this.finish(row, { kind: "deferred", code: 0, reply: `local error: ${String((e as Error)?.message ?? e)}`.slice(0, 500), stage: "local" }, { host: null, secure: false, ms: 0 });
    }
    if (this.stopped) return builder.release(built.raw);
    const raw = built.raw;
    // Not awaited: the dispatcher calls done() when the message has an outcome.
    void this.dispatcher.submit({
      id: row.id,
      domain: domainOf(row.to_email),
      from: envelopeFromFor(row.id, content.from_email),
      to: row.to_email,
      raw,
      urgent: row.source_type !== "CAMPAIGN",
      done: (result, info) => this.finish(row, result, info).finally(() => builder.release(raw)),
    });
  }

  /** Turns a delivery result into the row's next state and records it. */
  private finish(row: ClaimedEmail, result: DeliveryResult, info: DeliveryInfo): Promise<void> {
    const now = this.ctx.clock.now();
    const events: EventRow[] = [];
    const contact = row.project_id && row.contact_id ? { projectId: row.project_id, contactId: row.contact_id } : null;
    const ev = (name: string, data: Record<string, unknown>) => {
      if (contact) events.push({ ...contact, name, data, emailId: row.id });
    };
    if (row.attempts === 0) ev("email.sent", { emailId: row.id, to: row.to_email, sourceType: row.source_type, ...(row.campaign_id ? { campaignId: row.campaign_id } : {}), ...(row.template_id ? { templateId: row.template_id } : {}) });
    const reply = result.reply.slice(0, 1000);
    const label = result.kind === "delivered" && this.relay ? "sent" : result.kind;
    this.ctx.metrics.deliveryAttempts.inc({ result: label });
    this.ctx.log.json({ msg: "delivery", email: row.id, to: row.to_email, destination: domainOf(row.to_email), result: label, code: result.code, stage: result.stage, host: info.host, tls: info.secure, ms: info.ms, attempt: row.attempts + 1, reply });
    let out: Omit<PendingOutcome, "resolve" | "reject">;
    if (result.kind === "delivered") {
      if (!this.relay) ev("email.delivery", { emailId: row.id, to: row.to_email, mxHost: info.host, reply });
      out = { write: { kind: this.relay ? "SENT" : "DELIVERED", id: row.id, reply, host: info.host }, events };
    } else if (result.kind === "bounced") {
      ev("email.bounce", { emailId: row.id, to: row.to_email, code: result.code, reply, type: "hard" });
      out = { bounce: { id: row.id, projectId: row.project_id, contactId: row.contact_id, email: row.to_email, reply, host: info.host }, events };
    } else {
      const wait = this.ctx.config.retryScheduleMs[row.attempts];
      out =
        wait === undefined
          ? { write: { kind: "FAILED", id: row.id, reply, host: info.host }, events }
          : { write: { kind: "DEFERRED", id: row.id, reply, host: info.host, nextAttemptAt: now + wait }, events };
    }
    return this.settle(row, out);
  }

  /** Queues an outcome for the next group commit; resolves once it is committed. */
  private settle(row: ClaimedEmail, o: Omit<PendingOutcome, "resolve" | "reject">): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ ...o, campaignId: row.campaign_id, resolve, reject });
      if (this.flushTimer && this.dispatcher.onWire === 0) {
        // Every connection is waiting for this commit: no further outcome will come, commit now.
        clearTimeout(this.flushTimer);
        this.flushTimer = null;
        void this.flush();
      } else if (!this.flushTimer) {
        // Group commit: outcomes arriving within a few milliseconds share one transaction (each
        // connection waits for its own, so this is also each connection's pause per message).
        this.flushTimer = setTimeout(() => {
          this.flushTimer = null;
          void this.flush();
        }, this.dispatcher.onWire === 0 ? 0 : this.opts.groupCommitMs);
      }
    }).finally(() => {
      this.inflight.delete(row.id);
      if (this.opts.maxInflight - this.inflight.size >= this.claimThreshold()) this.wake();
    });
  }

  /** Claim again once this many in-flight places are free (half a batch): the claim and the wake-up agree. */
  private claimThreshold(): number {
    return Math.max(1, Math.min(this.opts.batchSize, this.opts.maxInflight) / 2);
  }

  private flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    this.flushing = (async () => {
      while (this.pending.length) {
        const batch = this.pending.splice(0);
        try {
          await this.write(batch);
          for (const p of batch) p.resolve();
        } catch (e) {
          this.ctx.log.error("outbox: recording outcomes failed", { count: batch.length, error: String(e) });
          for (const p of batch) p.reject(e);
        }
      }
    })().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async write(batch: PendingOutcome[]) {
    const now = this.ctx.clock.now();
    const writes: OutcomeWrite[] = [];
    const events: EventRow[] = [];
    const bounces: { bounce: BounceWrite; events: EventRow[] }[] = [];
    for (const p of batch) {
      if (p.bounce) bounces.push({ bounce: p.bounce, events: p.events });
      else {
        writes.push(p.write!);
        events.push(...p.events);
      }
    }
    const recorded = writes.length ? await this.ctx.store.exclusive((sqlite) => writeOutcomes(sqlite, now, writes, events)) : [];
    if (bounces.length) await recordBounces(this.ctx, now, bounces);
    // Workflows start from these (ctx.hooks.onEvent); not awaited, so a slow hook never holds a connection.
    if (recorded.length) void notifyEvents(this.ctx, recorded);
    const campaigns = new Set(batch.map((p) => p.campaignId).filter((id): id is string => !!id));
    if (campaigns.size) this.ctx.hooks.campaignOutcomes?.(this.ctx, [...campaigns]);
  }
}

const outboxes = new WeakMap<AppContext, Outbox>();

/** The outbox of a running service instance (created on first use). */
export function outboxFor(ctx: AppContext, opts?: Partial<OutboxOptions>): Outbox {
  let o = outboxes.get(ctx);
  if (!o) outboxes.set(ctx, (o = new Outbox(ctx, opts)));
  return o;
}

/** Tells the outbox new emails are due (call after the inserting transaction committed). */
export function wakeOutbox(ctx: AppContext): void {
  outboxes.get(ctx)?.wake();
}

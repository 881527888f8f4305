// The outbox: email rows are the queue, and this loop delivers them. One round claims due rows
// with a lease (SENDING) and hands them to the pipeline, where each email goes through named steps:
//
//   claim -> guard -> plan -> build -> send -> settle
//
// guard stops an email that must not be attempted (cancelled campaign, suppressed address, missing
// content, a MARKETING/HEADLESS recipient who unsubscribed since it was queued); plan
// gathers what needs the database or secrets (plan.ts); build renders and signs (build.ts, in the
// build worker); send hands the bytes to the dispatcher (pool.ts, connections grouped per
// destination); settle turns the result into the row's next state (next-state.ts, pure) and
// records it by group commit, before that connection carries its next message. The database is
// reached only through the outbox store (outbox-store.ts).
import type { Resolver } from "node:dns/promises";
import type { AppContext } from "../../context";
import { notifyEvents } from "../../audience/events";
import { afterHardBounces } from "./bounces";
import { domainOf } from "../../net/email-address";
import type { BuiltMessage } from "../message/build";
import { InlineBuilder, WorkerBuilder, type MessageBuilder } from "../message/builder";
import { ContentCache } from "../message/content-cache";
import { createResolver } from "../../net/dns";
import { GroupCommit } from "../../db/group-commit";
import { createMtaSts } from "../smtp/mta-sts";
import { RouteCache } from "../smtp/mx";
import { attemptLabel, nextState, type AttemptResult } from "./next-state";
import { outboxStore, type ClaimedEmail, type ContentRow, type OutboxStore, type Settled } from "./outbox-store";
import { envelopeFromFor, planMessage, SigningKeys } from "./plan";
import { Dispatcher, parseRelayUrl, type DeliveryInfo } from "../smtp/pool";
import { chooseFairly, ProjectBuckets } from "./send-rate";
import { SharedSendRate } from "./shared-rate";
import { sharedSigner } from "../dkim/signer";
import type { SmtpTimeouts } from "../smtp/smtp-client";
import { capturedResult, fromSmtpData, isSandbox, keepRaw, simulationOf } from "./sandbox";
import { SUPPRESSED_REPLY } from "./suppressions";
import { secretOf } from "../tracking/tokens";
import type { FreshLinks } from "../tracking/tracked-links";

export interface OutboxOptions {
  /** Rows claimed per round. */
  batchSize: number;
  /** Claimed rows not yet finished (bounds memory: each holds a built message). */
  maxInflight: number;
  /** How often due rows (retries) are looked for when nothing wakes the loop. */
  pollMs: number;
  leaseMs: number;
  /** Messages per second per project (token bucket, burst of one second); Infinity: unlimited (projects still take turns). */
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
  maxInflight: 120,
  pollMs: 500,
  // MAILSVC_LEASE replaces it (renewed while in flight, so a long SMTP conversation keeps its claim).
  leaseMs: 15 * 60_000,
  // MAILSVC_SEND_RATE sets it; unset, a project sends as fast as the engine goes.
  projectRatePerSecond: Infinity,
  maxConnectionsPerDestination: 20,
  idleMs: 10_000,
  maxMessagesPerConnection: 1000,
  groupCommitMs: 5,
  buildInWorker: true,
};

const yieldToEventLoop = () => new Promise<void>((r) => setImmediate(r));

/** What a claimed batch needs, looked up once for all its rows. */
interface BatchLookups {
  contents: (id: string) => ContentRow | undefined;
  /** Whether the email's campaign was cancelled after the email was claimed. */
  withdrawn: (row: ClaimedEmail) => boolean;
  /** `projectId|address` of the suppressed recipients. */
  suppressed: Set<string>;
  /** Contacts of the batch's MARKETING/HEADLESS emails that have unsubscribed since their email was queued. */
  unsubscribed: Set<string>;
  trackingModes: Map<string, string>;
  /** Projects of the batch that are sandboxes: their messages are captured instead of sent (sandbox.ts). */
  sandbox: Set<string>;
  postalAddresses: Map<string, string>;
}

/** A guard stops an email before any attempt, with the outcome it gets instead. */
type Guard = (row: ClaimedEmail, batch: BatchLookups) => AttemptResult | null;

/** An email of a campaign cancelled while it was in flight: settled CANCELLED, never sent. */
const WITHDRAWN: AttemptResult = { kind: "cancelled", reply: "campaign cancelled before this email was sent" };
/** MARKETING/HEADLESS mail to a contact who unsubscribed after it was queued: settled CANCELLED, never sent. */
const UNSUBSCRIBED: AttemptResult = { kind: "cancelled", reply: "recipient unsubscribed before this email was sent" };
/** Simulated recipients that do something after their delivery (src/modules/sandbox). */
const REACTING = new Set<string | null>(["complaint", "open", "click"]);
/** Content types that only subscribed contacts receive (docs/api.md "Campaigns": MARKETING and HEADLESS skip unsubscribed contacts). */
const NEEDS_SUBSCRIPTION = new Set(["MARKETING", "HEADLESS"]);

const GUARDS: { name: string; check: Guard }[] = [
  {
    name: "campaign not cancelled",
    check: (row, b) => (b.withdrawn(row) ? WITHDRAWN : null),
  },
  {
    name: "suppressed address",
    check: (row, b) => (row.project_id && b.suppressed.has(`${row.project_id}|${row.to_email}`) ? { kind: "suppressed", reply: SUPPRESSED_REPLY } : null),
  },
  {
    name: "content present",
    check: (row, b) => (b.contents(row.content_id) ? null : { kind: "unsendable", reply: "local error: email content missing" }),
  },
  {
    name: "recipient still subscribed",
    check: (row, b) => (row.contact_id && b.unsubscribed.has(row.contact_id) && NEEDS_SUBSCRIPTION.has(b.contents(row.content_id)?.type ?? "") ? UNSUBSCRIBED : null),
  },
];

export class Outbox {
  readonly opts: OutboxOptions;
  private readonly store: OutboxStore;
  /** Claimed rows not yet settled, by id. */
  private readonly inflight = new Map<string, ClaimedEmail>();
  /** Campaigns cancelled lately (id -> when): their claimed emails not yet on the wire are withdrawn. */
  private readonly cancelledCampaigns = new Map<string, number>();
  private readonly contents = new ContentCache(2 * 1024 * 1024);
  private readonly buckets: ProjectBuckets;
  /** MAILSVC_SEND_RATE shared by every instance (PostgreSQL), charged at hand-off (shared-rate.ts). */
  private readonly sharedRate: SharedSendRate | null;
  private readonly keys: SigningKeys;
  private readonly dispatcher: Dispatcher;
  private readonly relay: boolean;
  private readonly resolver: Resolver;
  private readonly commits: GroupCommit<Settled>;
  private builderInstance: MessageBuilder | null = null;
  /** Settles when every click-tracked link reported so far is stored (see storeLinksFirst). */
  private linksStored: Promise<void> = Promise.resolve();
  private stopped = true;
  /** The next round's timer. */
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The round running now, if any (rounds never overlap). */
  private round: Promise<void> | null = null;
  /** Start another round as soon as this one ends (a full claim, a rate limit, a wake-up meanwhile). */
  private claimAgain = false;
  private lastLeaseSweep = 0;
  private lastLeaseRenewal = 0;
  /** The pipelines of claimed batches still running (stop() waits for them). */
  private readonly batches = new Set<Promise<void>>();

  constructor(
    private readonly ctx: AppContext,
    opts: Partial<OutboxOptions> = {},
  ) {
    // MAILSVC_SEND_RATE (IP warm-up) replaces the default per-project rate; explicit options win.
    // MAILSVC_LEASE: a claim's lease, renewed every third of it while the email is in flight.
    this.opts = {
      ...DEFAULT_OUTBOX_OPTIONS,
      ...(ctx.config.leaseMs ? { leaseMs: ctx.config.leaseMs } : {}),
      ...(ctx.config.sendRate ? { projectRatePerSecond: ctx.config.sendRate } : {}),
      ...opts,
    };
    this.store = outboxStore(ctx);
    this.buckets = new ProjectBuckets(this.opts.projectRatePerSecond);
    const rate = this.opts.projectRatePerSecond;
    this.sharedRate =
      ctx.store.engine === "postgres" && Number.isFinite(rate)
        ? new SharedSendRate(rate, (p, w, n) => this.store.takeSendBudget(p, w, n, Math.max(1, Math.floor(rate))), (e) =>
            ctx.log.warn("outbox: the shared send rate could not be read", { error: String(e) }),
          )
        : null;
    this.keys = new SigningKeys(ctx, (domain) => this.store.systemSigningProject(domain));
    this.resolver = createResolver(ctx.config);
    const relay = ctx.config.smtpRelay ? parseRelayUrl(ctx.config.smtpRelay) : null;
    this.relay = !!relay;
    this.dispatcher = new Dispatcher({
      clientName: ctx.config.hostname,
      mxPort: ctx.config.mxPort,
      relay,
      routes: new RouteCache(() => this.resolver, () => ctx.clock.now()),
      mtaSts: relay || !ctx.config.mtaSts ? undefined : createMtaSts(ctx, () => this.resolver),
      log: ctx.log,
      maxConnectionsPerDestination: this.opts.maxConnectionsPerDestination,
      idleMs: this.opts.idleMs,
      maxMessagesPerConnection: this.opts.maxMessagesPerConnection,
      timeouts: this.opts.timeouts,
    });
    this.commits = new GroupCommit<Settled>(
      (items) => this.record(items),
      this.opts.groupCommitMs,
      // While any message is on the wire another outcome may come; otherwise every connection waits for this commit.
      () => this.dispatcher.onWire > 0,
      (count, e) => this.ctx.log.error("outbox: recording outcomes failed", { count, error: String(e) }),
    );
  }

  /** Requeues rows a dead process left in SENDING, then starts the loop. */
  async start(): Promise<void> {
    // Only what a dead run left: on PostgreSQL, rows whose lease ended or that this instance id holds
    // (a live peer's SENDING emails stay its own).
    const n = await this.store.requeue(this.ctx.clock.now(), "all-sending", "start-up");
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
    await this.round;
    await Promise.allSettled([...this.batches]);
    await this.dispatcher.close();
    await this.builderInstance?.close();
    this.builderInstance = null;
    await this.commits.flush();
    const left = [...this.inflight.keys()];
    this.inflight.clear();
    if (left.length) await this.store.requeue(this.ctx.clock.now(), left);
  }

  // ---- the loop ---------------------------------------------------------------------------------

  /** Runs a round in `ms` (0: now, replacing a later one; a later one never replaces a sooner one). */
  private schedule(ms: number) {
    if (this.stopped) return;
    if (this.timer) {
      if (ms > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.round) {
        this.claimAgain = true;
        return;
      }
      this.round = this.runRound()
        .catch((e) => this.ctx.log.error("outbox round failed", { error: String(e) }))
        .finally(() => {
          this.round = null;
          if (this.stopped) return;
          if (this.claimAgain) {
            this.claimAgain = false;
            this.schedule(0);
          } else this.schedule(this.opts.pollMs);
        });
    }, ms);
  }

  /** One round: sweeps lost leases (once a minute, or once a lease when it is shorter), claims what fits, starts its pipeline. */
  private async runRound(): Promise<void> {
    const now = this.ctx.clock.now();
    if (this.inflight.size && now - this.lastLeaseRenewal >= this.opts.leaseMs / 3) {
      this.lastLeaseRenewal = now;
      await this.store.renew(now, now + this.opts.leaseMs, [...this.inflight.keys()]);
    }
    // A peer's claims are taken over within a lease of their end, not up to a minute after it.
    if (now - this.lastLeaseSweep > Math.min(60_000, this.opts.leaseMs)) {
      this.lastLeaseSweep = now;
      await this.sweepLeases(now);
      if (this.sharedRate) await this.store.pruneRateWindows(Date.now());
    }
    const free = this.opts.maxInflight - this.inflight.size;
    if (free < this.claimThreshold()) return; // settling rows wake us
    const limit = Math.min(free, this.opts.batchSize);
    const rows = await this.claim(now, limit);
    if (!rows.length) return;
    const p = this.pipeline(rows)
      .catch((e) => this.ctx.log.error("outbox batch failed", { error: String(e) }))
      .finally(() => this.batches.delete(p));
    this.batches.add(p);
    if (rows.length >= limit) this.claimAgain = true;
  }

  /** Claim again once this many in-flight places are free (half a batch): the claim and the wake-up agree. */
  private claimThreshold(): number {
    return Math.max(1, Math.min(this.opts.batchSize, this.opts.maxInflight) / 2);
  }

  private async sweepLeases(now: number) {
    const lost = (await this.store.expiredLeases(now)).filter((id) => !this.inflight.has(id));
    if (!lost.length) return;
    const n = await this.store.requeue(now, lost, "expired");
    if (n) this.ctx.log.warn("outbox: requeued emails whose lease expired", { count: n });
  }

  // ---- the pipeline -----------------------------------------------------------------------------

  /** claim: due rows, round-robin over projects within their send rates, leased as SENDING. */
  private async claim(now: number, limit: number): Promise<ClaimedEmail[]> {
    const rows = await this.store.claim(now, now + this.opts.leaseMs, limit * 3, (candidates) => {
      const chosen = chooseFairly(candidates, limit, this.buckets, now);
      if (chosen.limited) this.claimAgain = true; // rate-limited: look again soon
      return chosen.ids;
    });
    for (const r of rows) this.inflight.set(r.id, r);
    return rows;
  }

  /** Every row of a claimed batch through guard, plan, build and send (settle follows each outcome). */
  private async pipeline(rows: ClaimedEmail[]): Promise<void> {
    const batch = await this.lookups(rows);
    const started: Promise<void>[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      if (this.stopped) break; // left in `inflight`: stop() puts them back
      const stop = this.guard(row, batch);
      if (stop) {
        started.push(this.settle(row, stop));
        continue;
      }
      const content = batch.contents(row.content_id)!;
      // Content marked no_tracking (a campaign's test send) is never tracked.
      const mode = row.project_id ? (content.no_tracking ? "DISABLED" : (batch.trackingModes.get(row.project_id) ?? "ENABLED")) : undefined;
      // Captured: the project is a sandbox now, or the email is sandbox mail (captured before, or queued while it was one).
      const sandbox = row.sandbox === 1 || (!!row.project_id && batch.sandbox.has(row.project_id));
      started.push(this.attempt(row, content, mode, sandbox, row.project_id ? (batch.postalAddresses.get(row.project_id) ?? null) : null));
      if (i % 8 === 7) await yieldToEventLoop();
    }
    await Promise.all(started);
  }

  /** The batch's contents (cached), suppressed recipients and projects' tracking modes. */
  private async lookups(rows: ClaimedEmail[]): Promise<BatchLookups> {
    const missing = [...new Set(rows.map((r) => r.content_id))].filter((id) => !this.contents.get(id));
    if (missing.length) for (const c of await this.store.loadContents(missing)) this.contents.set(c);
    const byProject = new Map<string, string[]>();
    for (const r of rows) {
      if (!r.project_id) continue;
      let l = byProject.get(r.project_id);
      if (!l) byProject.set(r.project_id, (l = []));
      l.push(r.to_email);
    }
    const projects = [...byProject.keys()];
    // Subscription is checked when the email is queued and again here: a contact may unsubscribe
    // while a campaign's emails wait in the queue (or between retries).
    const needSubscription = rows.filter((r) => r.contact_id && NEEDS_SUBSCRIPTION.has(this.contents.get(r.content_id)?.type ?? "")).map((r) => r.contact_id!);
    // A campaign cancelled in another process, or before a restart that requeued its claimed emails.
    const campaigns = [...new Set(rows.map((r) => r.campaign_id).filter((id): id is string => id !== null))];
    // Independent reads, issued together: on PostgreSQL each is a round trip, and the pool runs them at once.
    const [suppressedLists, trackingModes, postalAddresses, unsubscribed, cancelled, sandboxed] = await Promise.all([
      Promise.all([...byProject].map(([pid, emails]) => this.store.suppressedAmong(pid, emails))),
      projects.length ? this.store.trackingModes(projects) : new Map<string, string>(),
      projects.length ? this.store.postalAddresses(projects) : new Map<string, string>(),
      this.store.unsubscribedAmong(needSubscription),
      campaigns.length ? this.store.cancelledAmong(campaigns) : [],
      Promise.all(projects.map((pid) => isSandbox(this.ctx, pid))),
    ]);
    const suppressed = new Set<string>();
    suppressedLists.forEach((list, i) => {
      for (const e of list) suppressed.add(`${projects[i]}|${e}`);
    });
    for (const id of cancelled) this.cancelCampaign(id);
    const sandbox = new Set(projects.filter((_, i) => sandboxed[i]));
    return { contents: (id) => this.contents.get(id), withdrawn: (row) => this.withdrawn(row), suppressed, unsubscribed, trackingModes, sandbox, postalAddresses };
  }

  /** guard: the first guard that stops the email gives its outcome. */
  private guard(row: ClaimedEmail, batch: BatchLookups): AttemptResult | null {
    for (const g of GUARDS) {
      const stop = g.check(row, batch);
      if (stop) return stop;
    }
    return null;
  }

  /** plan, build, send. A failure before the wire is a local error: the email is deferred. */
  private async attempt(row: ClaimedEmail, content: ContentRow, trackingMode: string | undefined, sandbox: boolean, postalAddress: string | null): Promise<void> {
    const builder = this.builder;
    let built: BuiltMessage;
    try {
      built = await this.build(builder, row, content, trackingMode, postalAddress);
    } catch (e) {
      this.ctx.log.error("outbox: building the message failed", { email: row.id, error: String(e) });
      const reply = `local error: ${String((e as Error)?.message ?? e)}`.slice(0, 500);
      return this.settle(row, { kind: "deferred", code: 0, reply, stage: "local", host: null }, { host: null, secure: false, ms: 0 });
    }
    if (this.stopped) return builder.release(built.raw);
    if (this.withdrawn(row)) {
      builder.release(built.raw);
      return this.settle(row, WITHDRAWN);
    }
    if (sandbox) return this.capture(builder, row, built.raw);
    // Several instances: the project's shared rate is charged now, as the message leaves.
    if (this.sharedRate && row.project_id && !(await this.sharedRate.acquire(row.project_id, () => this.stopped))) return builder.release(built.raw);
    this.send(builder, row, content, built.raw);
  }

  /**
   * A campaign was cancelled (its queued emails are CANCELLED in the same transaction): the ones
   * claimed and not yet offered to a server are withdrawn as they reach the next step.
   */
  cancelCampaign(id: string): void {
    const now = Date.now();
    // Its claimed emails leave the pipeline within minutes at most; an hour is plenty.
    for (const [c, at] of this.cancelledCampaigns) if (now - at > 3_600_000) this.cancelledCampaigns.delete(c);
    this.cancelledCampaigns.set(id, now);
  }

  private withdrawn(row: ClaimedEmail): boolean {
    return row.campaign_id !== null && this.cancelledCampaigns.size > 0 && this.cancelledCampaigns.has(row.campaign_id);
  }

  /** plan + build: the message's bytes, signed, its click-tracked links stored. */
  private async build(builder: MessageBuilder, row: ClaimedEmail, content: ContentRow, trackingMode: string | undefined, postalAddress: string | null): Promise<BuiltMessage> {
    const plan = await planMessage(this.ctx, row, content, this.keys, trackingMode, postalAddress);
    const built = await builder.build(plan, content);
    if (plan.decoration) {
      await this.storeLinksFirst(builder, plan.decoration.projectId, built.links).catch((e) => {
        builder.release(built.raw);
        throw e;
      });
    }
    if (built.signed) this.ctx.metrics.dkimSignSeconds.observe(built.signMs / 1000);
    return built;
  }

  /** send: to the dispatcher, which calls back with the SMTP outcome (not awaited here). */
  private send(builder: MessageBuilder, row: ClaimedEmail, content: ContentRow, raw: Buffer): void {
    void this.dispatcher.submit({
      id: row.id,
      domain: domainOf(row.to_email),
      from: envelopeFromFor(row.id, content.from_email),
      to: row.to_email,
      raw,
      urgent: row.source_type !== "CAMPAIGN",
      done: (result, info) => {
        // MAILSVC_KEEP_RAW: the message as handed to SMTP is kept for GET /emails/:id/raw (copied before its buffer is reused).
        const kept = this.ctx.config.keepRaw && row.project_id && info.host !== null ? { raw: fromSmtpData(raw), sandbox: false } : undefined;
        return this.settle(row, { ...result, host: info.host }, info, kept).finally(() => builder.release(raw));
      },
      withdraw: () => (this.withdrawn(row) ? this.settle(row, WITHDRAWN).finally(() => builder.release(raw)) : null),
    });
  }

  /**
   * The sandbox's send: the message, built and signed exactly as for real, is kept instead of being
   * handed to an MX, and settles with the answer the sandbox gives its recipient (sandbox.ts).
   */
  private capture(builder: MessageBuilder, row: ClaimedEmail, raw: Buffer): void {
    if (this.withdrawn(row)) {
      void this.settle(row, WITHDRAWN).finally(() => builder.release(raw));
      return;
    }
    const kept = { raw: fromSmtpData(raw), sandbox: true };
    builder.release(raw);
    void this.settle(row, capturedResult(row.to_email, row.attempts), { host: null, secure: false, ms: 0 }, kept);
  }

  /**
   * settle: the row's next state (nextState), the attempt's metrics and log line, then the group
   * commit; resolves once the outcome is committed, which frees the row's place in flight.
   * `kept`: the message to keep for GET /emails/:id/raw (sandbox: it was captured, not sent).
   */
  private settle(row: ClaimedEmail, result: AttemptResult, info?: DeliveryInfo, kept?: { raw: Buffer; sandbox: boolean }): Promise<void> {
    const state = nextState(row, result, { now: this.ctx.clock.now(), delaysMs: this.ctx.config.retryScheduleMs, relay: this.relay && !kept?.sandbox });
    if (state.attempted && result.kind !== "suppressed" && result.kind !== "unsendable" && result.kind !== "cancelled") {
      const label = attemptLabel(state);
      // Captured mail is counted apart: it is not a delivery attempt (metrics, the mail-load signal).
      if (kept?.sandbox) this.ctx.metrics.sandboxCaptured.inc({ result: label });
      else {
        this.ctx.metrics.deliveryAttempts.inc({ result: label });
        this.ctx.metrics.mailAttempts++;
      }
      this.ctx.log.json({
        msg: "delivery",
        email: row.id,
        to: row.to_email,
        destination: domainOf(row.to_email),
        result: label,
        code: result.code,
        stage: result.stage,
        host: info?.host ?? null,
        tls: info?.secure ?? false,
        ms: info?.ms ?? 0,
        attempt: row.attempts + 1,
        reply: state.reply,
        ...(kept?.sandbox ? { sandbox: true } : {}),
      });
    }
    return this.commits.add({ row, state, ...(kept ? { kept: { emailId: row.id, projectId: row.project_id, ...kept } } : {}) }).finally(() => {
      this.inflight.delete(row.id);
      if (this.opts.maxInflight - this.inflight.size >= this.claimThreshold()) this.wake();
    });
  }

  /** The group commit's write: outcomes through the store, then who waits on them is told. */
  private async record(items: Settled[]): Promise<void> {
    const now = this.ctx.clock.now();
    const kept = items.flatMap((i) => (i.kept && i.state.attempted ? [i.kept] : []));
    // Before the outcome: an email is never seen captured (DELIVERED) without its message.
    if (kept.length) await keepRaw(this.ctx, kept, now);
    const recorded = await this.store.recordOutcomes(now, items);
    const bounced = items.filter((i) => i.state.bounce && i.row.project_id);
    // Workflows and webhooks start from these; not awaited, so a slow consumer never holds a connection.
    if (bounced.length) await afterHardBounces(this.ctx, recorded, bounced.map((i) => i.row.project_id!));
    else if (recorded.length) void notifyEvents(this.ctx, recorded);
    const campaigns = new Set(items.map((i) => i.row.campaign_id).filter((id): id is string => !!id));
    if (campaigns.size) this.ctx.hooks.campaignOutcomes?.(this.ctx, [...campaigns]);
    // Simulated recipients that complain, open or click after the delivery (src/modules/sandbox).
    const followUps = items.filter((i) => i.kept?.sandbox && i.state.status === "DELIVERED" && REACTING.has(simulationOf(i.row.to_email)));
    if (followUps.length && this.ctx.hooks.sandboxDelivered) {
      const hook = this.ctx.hooks.sandboxDelivered;
      for (const i of followUps) {
        void hook(this.ctx, { emailId: i.row.id, toEmail: i.row.to_email, raw: i.kept!.raw }).catch((e) =>
          this.ctx.log.error("sandbox: simulated recipient's reaction failed", { email: i.row.id, error: String(e) }),
        );
      }
    }
  }

  // ---- building ---------------------------------------------------------------------------------

  /** Built lazily: the token secret is loaded by the feedback module's install, after the outbox exists. */
  private get builder(): MessageBuilder {
    if (!this.builderInstance) {
      const secret = secretOf(this.ctx);
      const signer = sharedSigner({ openssl: this.ctx.config.dkimOpenssl });
      this.builderInstance = this.opts.buildInWorker ? new WorkerBuilder(secret, signer, this.ctx.log) : new InlineBuilder(secret, signer);
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
    const mine = this.store.storeLinks(projectId, links).catch((e) => {
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
}

declare module "../../context" {
  interface Services {
    /** The delivery engine (started and stopped by modules/delivery). */
    outbox: Outbox;
  }
}

/** Tells the outbox a campaign was cancelled (after the cancelling transaction committed). */
export function campaignCancelled(ctx: AppContext, campaignId: string): void {
  ctx.services.outbox.cancelCampaign(campaignId);
}

/**
 * Tells the outbox new emails are due (call after the inserting transaction committed), here and,
 * throttled, on every peer instance (src/jobs/peers.ts), so mail enqueued through one instance starts
 * on an idle peer without waiting for its poll.
 */
export function wakeOutbox(ctx: AppContext): void {
  ctx.services.outbox.wake();
  ctx.services.peers.wakePeers("wake.outbox");
}

import type { Logger } from "../http/logger";
import { safeFetch, type SafeFetchConfig, type SafeFetchOutcome } from "../net/safe-fetch";
import { signWebhook } from "./sign";

/**
 * Where webhook attempts are signed and POSTed: a worker thread (send-worker.ts), so the HTTP
 * client's work (a fetch, its request and response objects, the HMAC) leaves the main thread, where
 * the outbox and the API run (scripts/bench/send.ts --webhooks: the client was ~15% of the main
 * thread's CPU). The worker only answers with outcomes; the dispatcher records them in the database
 * as before, so a delivery is still marked done only after its 2xx was recorded.
 *
 * In-process instead when the address policy is a custom function (it cannot cross threads: tests),
 * when no worker can be started, or after the worker failed or hung (its attempts are sent again
 * in-process: at least once, with the same webhook-id).
 */
export interface SendTarget {
  url: string;
  secret: string;
}

export interface SendJob {
  seq: number;
  url: string;
  secret: string;
  webhookId: string;
  body: string;
  timeoutMs: number;
}

export interface SendReply {
  seq: number;
  outcome: SafeFetchOutcome;
}

export type ToSender = { type: "init"; config: SafeFetchConfig } | { type: "send"; jobs: SendJob[] };
export type FromSender = { type: "sent"; replies: SendReply[] };

/** One signed attempt in this thread. */
export function sendInline(config: SafeFetchConfig, target: SendTarget, webhookId: string, body: string, timeoutMs: number): Promise<SafeFetchOutcome> {
  const headers = { "content-type": "application/json", ...signWebhook(target.secret, webhookId, new Date(), body) };
  return safeFetch(config, { url: target.url, method: "POST", headers, body, timeoutMs, maxBodyBytes: 1024 });
}

/**
 * From source the worker sits next to this file. In the compiled binary every module's
 * import.meta.url is the executable's (file:///$bunfs/root/mailsvc) and the worker, another entry
 * point of the build (package.json), sits at webhooks/send-worker under the same root.
 */
function senderWorkerUrl(): URL {
  return import.meta.url.includes("/$bunfs/") ? new URL("./webhooks/send-worker.ts", import.meta.url) : new URL("./send-worker.ts", import.meta.url);
}

/** An attempt the worker leaves unanswered this long after its own timeout: the worker is taken for hung. */
const HUNG_GRACE_MS = 5_000;
/** The worker ends after this long without attempts (its heap is a few MB); the next attempt starts it again. */
const IDLE_MS = 30_000;

interface Pending {
  job: SendJob;
  at: number;
  resolve: (o: SafeFetchOutcome) => void;
}

export class WebhookSender {
  private worker: Worker | null = null;
  /** Every attempt in-process from now on. */
  private inline: boolean;
  private seq = 0;
  private pending = new Map<number, Pending>();
  private queue: SendJob[] = [];
  private posting = false;
  private watchdog: ReturnType<typeof setInterval> | null = null;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  /** The policy the worker was last given (the live config may change: it is compared on every attempt). */
  private given: { dnsServers: string[]; allowPrivateWebhooks: boolean } | null = null;

  constructor(
    /** Read live: an operator or a test may change the policy while running. */
    private readonly config: SafeFetchConfig,
    private readonly log: Logger,
    private readonly workerUrl: URL = senderWorkerUrl(),
  ) {
    this.inline = !!config.classify;
  }

  /** Where the next attempt will be made. */
  get mode(): "worker" | "in-process" {
    return this.inline ? "in-process" : "worker";
  }

  /** Signs and POSTs one body; never rejects (the outcome is a value). */
  send(target: SendTarget, webhookId: string, body: string, timeoutMs: number): Promise<SafeFetchOutcome> {
    if (this.inline || this.config.classify || !this.ensureWorker()) return sendInline(this.config, target, webhookId, body, timeoutMs);
    if (this.idleTimer) clearTimeout(this.idleTimer), (this.idleTimer = null);
    this.givePolicy();
    return new Promise<SafeFetchOutcome>((resolve) => {
      const job: SendJob = { seq: ++this.seq, url: target.url, secret: target.secret, webhookId, body, timeoutMs };
      this.pending.set(job.seq, { job, at: Date.now(), resolve });
      this.watch();
      this.queue.push(job);
      if (this.posting) return;
      // Attempts started in the same turn go to the worker in one message.
      this.posting = true;
      queueMicrotask(() => {
        this.posting = false;
        this.postQueued();
      });
    });
  }

  private postQueued() {
    const jobs = this.queue;
    if (!jobs.length) return;
    this.queue = [];
    if (this.worker) this.worker.postMessage({ type: "send", jobs } satisfies ToSender);
    else for (const j of jobs) this.retryInline(j.seq);
  }

  /** Hands the worker the current address policy when it changed (attempts already queued go first, under the old one). */
  private givePolicy() {
    const c = this.config;
    if (this.given && this.given.dnsServers === c.dnsServers && this.given.allowPrivateWebhooks === c.allowPrivateWebhooks) return;
    this.postQueued();
    this.given = { dnsServers: c.dnsServers, allowPrivateWebhooks: c.allowPrivateWebhooks };
    this.worker?.postMessage({ type: "init", config: { dnsServers: [...c.dnsServers], allowPrivateWebhooks: c.allowPrivateWebhooks } } satisfies ToSender);
  }

  /** Ends the worker (the dispatcher stopped); what it still had is sent in-process. The next attempt starts a new one. */
  close(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer), (this.idleTimer = null);
    this.stopWorker();
    for (const seq of [...this.pending.keys()]) this.retryInline(seq);
  }

  private ensureWorker(): Worker | null {
    if (this.worker) return this.worker;
    try {
      const w = new Worker(this.workerUrl);
      (w as unknown as { unref?: () => void }).unref?.();
      w.onmessage = (e: MessageEvent<FromSender>) => {
        for (const r of e.data.replies) this.settle(r.seq, r.outcome);
      };
      w.onerror = (e) => {
        this.log.error("webhook sender worker failed: sending in-process from now on", { error: String((e as ErrorEvent).message ?? e) });
        this.fallBackInline();
      };
      this.worker = w;
      this.given = null;
      return w;
    } catch (e) {
      this.log.warn("webhook sender worker unavailable: sending in-process", { error: String(e) });
      this.inline = true;
      return null;
    }
  }

  private settle(seq: number, outcome: SafeFetchOutcome) {
    const p = this.pending.get(seq);
    if (!p) return;
    this.pending.delete(seq);
    p.resolve(outcome);
    if (!this.pending.size) this.armIdle();
  }

  private retryInline(seq: number) {
    const p = this.pending.get(seq);
    if (!p) return;
    this.pending.delete(seq);
    const { job } = p;
    void sendInline(this.config, { url: job.url, secret: job.secret }, job.webhookId, job.body, job.timeoutMs).then(p.resolve);
  }

  private fallBackInline() {
    this.inline = true;
    this.stopWorker();
    for (const seq of [...this.pending.keys()]) this.retryInline(seq);
  }

  private stopWorker() {
    if (this.watchdog) clearInterval(this.watchdog), (this.watchdog = null);
    const w = this.worker;
    this.worker = null;
    w?.terminate();
  }

  private watch() {
    if (this.watchdog) return;
    this.watchdog = setInterval(() => {
      const oldest = this.pending.values().next().value;
      if (!oldest) {
        clearInterval(this.watchdog!);
        this.watchdog = null;
        return;
      }
      if (Date.now() - oldest.at > oldest.job.timeoutMs + HUNG_GRACE_MS) {
        this.log.error("webhook sender worker hung: sending in-process from now on", { pending: this.pending.size });
        this.fallBackInline();
      }
    }, 1000);
    (this.watchdog as unknown as { unref?: () => void }).unref?.();
  }

  private armIdle() {
    if (this.idleTimer || !this.worker) return;
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (!this.pending.size) this.stopWorker();
    }, IDLE_MS);
    (this.idleTimer as unknown as { unref?: () => void }).unref?.();
  }
}

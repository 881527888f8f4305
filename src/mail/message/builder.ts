// Where messages are built. Rendering, decoration, MIME and DKIM hashing make tens of KB of
// short-lived strings per message; at a thousand messages a second on the main thread that garbage
// sets the size of the main heap (the server's RSS grew past 200 MB during a 20k send) and costs
// the main thread ~0.4 ms per message that HTTP requests wait behind. A worker thread with its own
// small heap builds them instead: the main thread sends a plan (plain data) and gets the signed
// bytes back as a transferred ArrayBuffer, which it hands back for reuse once the SMTP transaction
// is over. Should the worker not start (or die), messages are built in-process.
import type { Logger } from "../../http/logger";
import { buildPlanned, type BuildPlan, type BuiltMessage } from "./build";
import { exclusive, releaseBuffer } from "./buffers";
import type { ContentRow } from "../outbox/outbox-store";
import type { Signer } from "../dkim/signer";
import { LinkKeys } from "../tracking/tracked-links";

export interface MessageBuilder {
  build(plan: BuildPlan, content: ContentRow): Promise<BuiltMessage>;
  /** Hands a built message's bytes back once nothing reads them any more. */
  release(raw: Buffer): void;
  /** Forget which links were reported (storing them failed: report them again). */
  forgetLinks(): void;
  close(): Promise<void>;
}

// ---- the protocol between the main thread and the worker ---------------------------------------

// Messages travel in batches both ways (a postMessage costs about as much as building a small
// message's plan): what is ready in the same turn of the event loop goes together.

export interface BuildJob {
  seq: number;
  plan: BuildPlan;
  content?: ContentRow;
}

export type ToWorker =
  | { type: "init"; secret: Uint8Array; openssl: boolean }
  | { type: "build"; jobs: BuildJob[] }
  | { type: "release"; buffers: ArrayBuffer[] }
  | { type: "forget-links" };

export type BuildReply =
  | { seq: number; ok: true; buffer: ArrayBuffer; offset: number; length: number; signed: boolean; signMs: number; links: BuiltMessage["links"] }
  | { seq: number; ok: false; needContent: true }
  | { seq: number; ok: false; needContent?: false; error: string };

export type FromWorker = { type: "built"; replies: BuildReply[] };

/** Collects items and hands them over in one call, at the end of the current turn or when `max` are waiting. */
export class Batcher<T> {
  private items: T[] = [];
  private scheduled = false;
  constructor(
    private readonly send: (items: T[]) => void,
    private readonly max = 64,
  ) {}
  push(item: T): void {
    this.items.push(item);
    if (this.items.length >= this.max) return this.flush();
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }
  flush(): void {
    this.scheduled = false;
    if (!this.items.length) return;
    const items = this.items;
    this.items = [];
    this.send(items);
  }
  clear(): void {
    this.items = [];
  }
}

// ---- in-process --------------------------------------------------------------------------------

export class InlineBuilder implements MessageBuilder {
  private readonly links: LinkKeys;
  constructor(
    secret: Buffer,
    private readonly signer: Signer,
  ) {
    this.links = new LinkKeys(secret);
  }
  build(plan: BuildPlan, content: ContentRow): Promise<BuiltMessage> {
    return buildPlanned(plan, content, this.links, this.signer);
  }
  release(raw: Buffer): void {
    releaseBuffer(raw);
  }
  forgetLinks(): void {
    this.links.forget();
  }
  async close(): Promise<void> {}
}

// ---- in a worker thread ------------------------------------------------------------------------

/**
 * From source the worker sits next to this file. In the compiled binary every module's
 * import.meta.url is the executable's (file:///$bunfs/root/mailsvc) and the worker, a second entry
 * point of the build (package.json), sits at mail/message/build-worker under the same root.
 */
function buildWorkerUrl(): URL {
  return import.meta.url.includes("/$bunfs/") ? new URL("./mail/message/build-worker.ts", import.meta.url) : new URL("./build-worker.ts", import.meta.url);
}

interface Pending {
  plan: BuildPlan;
  content: ContentRow;
  resolve: (m: BuiltMessage) => void;
  reject: (e: unknown) => void;
  /** The content was sent along (a second "need content" is an error, not a loop). */
  withContent: boolean;
  at: number;
}

/** A worker that leaves a message unanswered this long is taken for hung: everything moves in-process. */
const HUNG_MS = 60_000;

/** Contents the worker was sent (it keeps them in an LRU of its own and asks again when evicted). */
const SENT_CONTENTS_MAX = 1000;

export class WorkerBuilder implements MessageBuilder {
  private worker: Worker | null = null;
  private seq = 0;
  private pending = new Map<number, Pending>();
  private sentContents = new Set<string>();
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  private watchdog: ReturnType<typeof setInterval> | null = null;
  private inline: InlineBuilder | null = null;
  private closed = false;
  private readonly jobs = new Batcher<BuildJob>((jobs) => this.worker?.postMessage({ type: "build", jobs } satisfies ToWorker));
  private readonly releases = new Batcher<ArrayBuffer>((buffers) => {
    if (this.worker) this.worker.postMessage({ type: "release", buffers } satisfies ToWorker, buffers);
    else for (const b of buffers) releaseBuffer(Buffer.from(b));
  });

  constructor(
    private readonly secret: Buffer,
    private readonly signer: Signer,
    private readonly log: Logger,
    /** The worker ends after this long without work (its heap is ~15 MB); the next message starts it again. */
    private readonly idleMs = 30_000,
    private readonly workerUrl: URL = buildWorkerUrl(),
  ) {}

  /** Where the next message will be built. */
  get mode(): "worker" | "in-process" {
    return this.inline ? "in-process" : "worker";
  }

  build(plan: BuildPlan, content: ContentRow): Promise<BuiltMessage> {
    if (this.inline) return this.inline.build(plan, content);
    const worker = this.ensureWorker();
    if (!worker) return this.inline!.build(plan, content);
    if (this.idleTimer) clearTimeout(this.idleTimer), (this.idleTimer = null);
    return new Promise<BuiltMessage>((resolve, reject) => {
      const seq = ++this.seq;
      const withContent = !this.sentContents.has(content.id);
      this.pending.set(seq, { plan, content, resolve, reject, withContent, at: Date.now() });
      this.watch();
      this.post(seq, plan, withContent ? content : undefined);
    });
  }

  release(raw: Buffer): void {
    const ab = raw.buffer;
    // Buffers go back to the worker's pool; with no worker (in-process builds) to the local one.
    if (this.worker && ab instanceof ArrayBuffer) this.releases.push(ab);
    else releaseBuffer(raw);
  }

  forgetLinks(): void {
    this.worker?.postMessage({ type: "forget-links" } satisfies ToWorker);
    this.inline?.forgetLinks();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopWorker(new Error("message builder closed"));
  }

  private post(seq: number, plan: BuildPlan, content: ContentRow | undefined) {
    if (content) {
      if (this.sentContents.size >= SENT_CONTENTS_MAX) this.sentContents.clear();
      this.sentContents.add(content.id);
    }
    this.jobs.push(content ? { seq, plan, content } : { seq, plan });
  }

  private ensureWorker(): Worker | null {
    if (this.worker) return this.worker;
    if (this.closed) throw new Error("message builder closed");
    try {
      const w = new Worker(this.workerUrl);
      (w as unknown as { unref?: () => void }).unref?.();
      w.onmessage = (e: MessageEvent<FromWorker>) => {
        for (const r of e.data.replies) this.onReply(r);
      };
      w.onerror = (e) => {
        this.log.error("message builder worker failed: building in-process from now on", { error: String((e as ErrorEvent).message ?? e) });
        this.fallBackInline();
      };
      w.postMessage({ type: "init", secret: new Uint8Array(this.secret), openssl: this.signer.rsaBackend === "openssl" } satisfies ToWorker);
      this.worker = w;
      this.sentContents.clear();
      return w;
    } catch (e) {
      this.log.warn("message builder worker unavailable: building in-process", { error: String(e) });
      this.inline = new InlineBuilder(this.secret, this.signer);
      return null;
    }
  }

  private onReply(m: BuildReply) {
    const p = this.pending.get(m.seq);
    if (!p) return;
    if (!m.ok && m.needContent) {
      if (p.withContent) {
        this.pending.delete(m.seq);
        p.reject(new Error("the build worker lost the email content"));
      } else {
        p.withContent = true;
        this.post(m.seq, p.plan, p.content);
      }
      return;
    }
    this.pending.delete(m.seq);
    if (m.ok) p.resolve({ raw: Buffer.from(m.buffer, m.offset, m.length), signed: m.signed, signMs: m.signMs, links: m.links });
    else p.reject(new Error(m.error));
    if (!this.pending.size) this.armIdle();
  }

  private watch() {
    if (this.watchdog) return;
    this.watchdog = setInterval(() => {
      const oldest = this.pending.values().next().value;
      if (!oldest) {
        clearInterval(this.watchdog!);
        this.watchdog = null;
      } else if (Date.now() - oldest.at > HUNG_MS) {
        this.log.error("message builder worker did not answer for 60 s: building in-process from now on", { waiting: this.pending.size });
        this.fallBackInline();
      }
    }, HUNG_MS / 6);
    (this.watchdog as unknown as { unref?: () => void }).unref?.();
  }

  private armIdle() {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (!this.pending.size) this.stopWorker(null);
    }, this.idleMs);
    (this.idleTimer as unknown as { unref?: () => void }).unref?.();
  }

  /** A worker that errored: what it had in hand is built in-process, and so is everything after. */
  private fallBackInline() {
    const left = [...this.pending.values()];
    this.pending.clear();
    this.stopWorker(null);
    this.inline = new InlineBuilder(this.secret, this.signer);
    for (const p of left) this.inline.build(p.plan, p.content).then(p.resolve, p.reject);
  }

  private stopWorker(reason: Error | null) {
    if (this.idleTimer) clearTimeout(this.idleTimer), (this.idleTimer = null);
    if (this.watchdog && reason) clearInterval(this.watchdog), (this.watchdog = null);
    const w = this.worker;
    this.releases.flush();
    this.jobs.clear();
    this.worker = null;
    if (w) {
      w.onmessage = null;
      w.onerror = null;
      w.terminate();
    }
    if (reason) {
      for (const p of this.pending.values()) p.reject(reason);
      this.pending.clear();
    }
  }
}

/** The worker's side of a reply: the message's bytes in an ArrayBuffer that may be transferred. */
export function replyOf(seq: number, built: BuiltMessage): BuildReply & { ok: true } {
  const raw = exclusive(built.raw);
  return { seq, ok: true, buffer: raw.buffer as ArrayBuffer, offset: raw.byteOffset, length: raw.length, signed: built.signed, signMs: built.signMs, links: built.links };
}

/**
 * Builds one unsigned test message in the worker (`mailsvc selfcheck`): proves the binary carries the
 * worker's entry point (package.json's build lists it).
 */
export async function checkWorkerBuild(log: Logger): Promise<{ builtIn: "worker" | "in-process"; bytes: number }> {
  const { randomBytes } = await import("node:crypto");
  const { Signer } = await import("../dkim/signer");
  const builder = new WorkerBuilder(randomBytes(32), new Signer(), log);
  const content: ContentRow = {
    id: "selfcheck",
    project_id: null,
    subject: "selfcheck",
    html: "<p>selfcheck</p>",
    text: null,
    from_email: "selfcheck@localhost",
    from_name: null,
    reply_to: null,
    type: "TRANSACTIONAL",
    headers: null,
    attachments: null,
  };
  const plan: BuildPlan = {
    emailId: "selfcheck",
    contentId: content.id,
    system: true,
    messageId: "selfcheck@localhost",
    toEmail: "selfcheck@localhost",
    toName: null,
    varsJson: null,
    extraVars: null,
    decoration: null,
    dkim: null,
    now: Date.now(),
  };
  // The worker does not keep the process alive (unref): this timer does, and bounds the wait.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("the build worker did not answer in 10 s")), 10_000)));
  try {
    const built = await Promise.race([builder.build(plan, content), timeout]);
    return { builtIn: builder.mode, bytes: built.raw.length };
  } finally {
    clearTimeout(timer);
    await builder.close();
  }
}

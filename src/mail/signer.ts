// RSA signing off the main thread. An RSA-2048 signature costs ~0.6 ms of CPU, the largest single
// cost of a message; the main thread also serves HTTP and drives the SMTP sessions, so signatures
// are computed by a worker (one per spare core). Requests made in the same tick travel in one
// message. Keys are sent to a worker once (as PEM) and kept there as KeyObjects.
// The worker source is inlined (a Blob URL) so the compiled single-file binary needs no extra entry.
import { createPrivateKey, sign as cryptoSign, type KeyObject } from "node:crypto";
import { availableParallelism } from "node:os";

const WORKER_SOURCE = `
const { createPrivateKey, sign } = require("node:crypto");
const keys = new Map();
self.onmessage = (e) => {
  const m = e.data;
  if (m.t === "key") { keys.set(m.id, createPrivateKey(m.pem)); return; }
  const out = new Array(m.items.length);
  for (let i = 0; i < m.items.length; i++) {
    const it = m.items[i];
    try {
      out[i] = sign("sha256", Buffer.from(it.data, "latin1"), keys.get(it.key)).toString("base64");
    } catch (err) {
      out[i] = { error: String(err && err.message || err) };
    }
  }
  postMessage({ id: m.id, out });
};`;

interface Pending {
  key: number;
  data: string;
  resolve: (sig: string) => void;
  reject: (e: Error) => void;
}

interface WorkerSlot {
  worker: Worker;
  keys: Set<number>;
  inflight: Map<number, Pending[]>;
  load: number;
}

export class Signer {
  private slots: WorkerSlot[] = [];
  private keyIds = new Map<string, number>();
  private keyObjects = new Map<number, KeyObject>();
  private pems = new Map<number, string>();
  private queue: Pending[] = [];
  private scheduled = false;
  private batchSeq = 0;
  private failed = false;

  constructor(private readonly workerCount = Math.max(1, Math.min(4, availableParallelism() - 1))) {}

  /** Signs `data` (ASCII) with RSA-SHA256 and the PEM private key; returns base64. */
  sign(pem: string, data: string): Promise<string> {
    const key = this.keyId(pem);
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ key, data, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        queueMicrotask(() => this.flush());
      }
    });
  }

  private keyId(pem: string): number {
    let id = this.keyIds.get(pem);
    if (id === undefined) {
      id = this.keyIds.size + 1;
      this.keyIds.set(pem, id);
      this.keyObjects.set(id, createPrivateKey(pem));
      this.pems.set(id, pem);
    }
    return id;
  }

  private ensureWorkers(): boolean {
    if (this.failed) return false;
    if (this.slots.length) return true;
    try {
      const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
      for (let i = 0; i < this.workerCount; i++) {
        const worker = new Worker(url);
        const slot: WorkerSlot = { worker, keys: new Set(), inflight: new Map(), load: 0 };
        worker.onmessage = (e: MessageEvent) => this.onResult(slot, e.data as { id: number; out: (string | { error: string })[] });
        worker.onerror = () => this.onWorkerFailure(slot);
        (worker as unknown as { unref?: () => void }).unref?.();
        this.slots.push(slot);
      }
      return true;
    } catch {
      this.failed = true;
      return false;
    }
  }

  private flush(): void {
    this.scheduled = false;
    const items = this.queue;
    this.queue = [];
    if (!items.length) return;
    if (!this.ensureWorkers()) return this.signInline(items);
    // Spread the batch over the workers, least loaded first.
    const per = Math.ceil(items.length / this.slots.length);
    const slots = [...this.slots].sort((a, b) => a.load - b.load);
    for (let i = 0, s = 0; i < items.length; i += per, s++) {
      const chunk = items.slice(i, i + per);
      const slot = slots[s % slots.length]!;
      for (const it of chunk) {
        if (!slot.keys.has(it.key)) {
          slot.worker.postMessage({ t: "key", id: it.key, pem: this.pems.get(it.key) });
          slot.keys.add(it.key);
        }
      }
      const id = ++this.batchSeq;
      slot.inflight.set(id, chunk);
      slot.load += chunk.length;
      slot.worker.postMessage({ t: "sign", id, items: chunk.map((c) => ({ key: c.key, data: c.data })) });
    }
  }

  private onResult(slot: WorkerSlot, msg: { id: number; out: (string | { error: string })[] }) {
    const chunk = slot.inflight.get(msg.id);
    if (!chunk) return;
    slot.inflight.delete(msg.id);
    slot.load -= chunk.length;
    chunk.forEach((p, i) => {
      const r = msg.out[i];
      if (typeof r === "string") p.resolve(r);
      else p.reject(new Error(`DKIM signing failed: ${r?.error ?? "unknown error"}`));
    });
  }

  /** A crashed worker: its requests are signed inline and signing continues without workers. */
  private onWorkerFailure(slot: WorkerSlot) {
    this.failed = true;
    const pending = [...slot.inflight.values()].flat();
    slot.inflight.clear();
    for (const s of this.slots) s.worker.terminate();
    const rest = this.slots.filter((s) => s !== slot).flatMap((s) => [...s.inflight.values()].flat());
    this.slots = [];
    this.signInline([...pending, ...rest]);
  }

  private signInline(items: Pending[]) {
    for (const p of items) {
      try {
        p.resolve(cryptoSign("sha256", Buffer.from(p.data, "latin1"), this.keyObjects.get(p.key)!).toString("base64"));
      } catch (e) {
        p.reject(e as Error);
      }
    }
  }

  close(): void {
    for (const s of this.slots) s.worker.terminate();
    this.slots = [];
  }
}

/** One signer per process: tests run several service instances in one process. */
let shared: Signer | null = null;
export function sharedSigner(): Signer {
  return (shared ??= new Signer());
}

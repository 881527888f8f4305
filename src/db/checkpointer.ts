/**
 * WAL checkpoints from a worker thread with its own connection, and the WAL's rewind without a
 * checkpoint on the event loop.
 *
 * A checkpoint copies WAL pages into the database file and fsyncs it (~17 µs per dirty page on our
 * disks: 1,000 pages ~17 ms). Run by the writer's auto-checkpoint it stalls the event loop and every
 * request in flight (the /v1/track p99). So the worker backfills (PASSIVE: never blocks the writer).
 * Short passes matter as much as passes off the event loop: a pass's writes and fsync of the
 * database file hold up the writer's WAL appends, and on a machine where the server shares one core
 * the event loop waits for it besides; so a pass's length is a stall of every request in flight.
 * Every 100 ms a pass took ~13 ms under /v1/track load (p99 20-22 ms in scripts/bench/track.ts's
 * one-core tail case); every 10 ms ~2-3 ms (p99 13-14.6 ms). The wait between passes therefore
 * follows their measured length (aiming at 1 ms, between 10 and 100 ms): random pages (many tracks)
 * bring it down to 10 ms, while a load that rewrites the same few pages (a campaign's settles, a
 * trickle of writes) keeps it long, where frequent passes would copy the same pages again.
 *
 * But under a steady stream of commits the WAL never rewinds by itself: SQLite restarts it from the
 * top only when a write transaction begins while every frame is backfilled, and some commit always
 * lands between the worker's pass and the next transaction.
 *
 * The rewind: when the WAL holds more than rewindFrames, the worker first catches up (passes until
 * little is left, the writer going on meanwhile), then the main thread holds its connection's mutex
 * (no transaction starts; the event loop keeps running, requests that write wait for it) while the
 * worker backfills the last few frames. The next write transaction then restarts the WAL from the
 * top. The pause is one short pass (a few hundred pages at most) instead of a checkpoint of
 * everything since the last pass on the event loop. The main connection keeps a high
 * wal_autocheckpoint as the safety net should this thread ever fall behind.
 */
import type { Mutex } from "./bun-sqlite-dialect";

const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
let db = null;
let timer = null;
let prevLog = -1;
const pass = () => {
  try { return db ? db.query("PRAGMA wal_checkpoint(PASSIVE)").get() : null; } catch { return null; }
};
// How long this thread waited for a CPU, in ms (Linux: /proc/thread-self/schedstat, second field,
// ns). A pass is measured as its wall time minus that wait: its CPU plus the I/O it waited for (its
// writes and fsync of the database file, which also hold up the writer's WAL appends), not the time
// other threads had the CPU. Elsewhere the wall time alone.
let schedstat = true;
const queuedMs = () => {
  if (schedstat) {
    try { return Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ")[1]) / 1e6 || 0; } catch { schedstat = false; }
  }
  return 0;
};
// While commits keep coming, the wait between passes follows their length: a pass is how long the
// event loop, on a shared core, may wait for it, so one that took more than targetMs brings the next
// sooner (down to minMs) and a shorter one lets the wait grow back (up to maxMs; at most 2x a step:
// frequent passes write pages that were about to change again). With nothing new it doubles.
const tick = (m, waitMs) => {
  timer = setTimeout(() => {
    const t0 = performance.now();
    const q0 = queuedMs();
    const r = pass();
    const took = performance.now() - t0 - (queuedMs() - q0);
    const busy = !!r && r.log !== prevLog;
    if (r && busy) postMessage({ type: "frames", log: r.log, checkpointed: r.checkpointed });
    prevLog = r ? r.log : -1;
    const factor = busy ? Math.min(2, Math.max(0.5, m.targetMs / Math.max(took, 0.05))) : 2;
    tick(m, Math.round(Math.min(m.maxMs, Math.max(m.minMs, waitMs * factor))));
  }, waitMs);
};
self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "start") {
    try {
      db = new Database(m.path);
      db.exec("PRAGMA busy_timeout = 0");
    } catch { db = null; }
    tick(m, m.minMs);
  } else if (m.type === "catchup") {
    // Passes until few frames are left (the writer goes on meanwhile), at most 8.
    let r = pass();
    for (let i = 0; r && r.log - r.checkpointed > m.leftFrames && i < 8; i++) r = pass();
    postMessage({ type: "caughtup", id: m.id, log: r ? r.log : -1, checkpointed: r ? r.checkpointed : -1 });
  } else if (m.type === "final") {
    const r = pass();
    postMessage({ type: "final", id: m.id, log: r ? r.log : -1, checkpointed: r ? r.checkpointed : -1 });
  } else if (m.type === "stop") {
    if (timer) clearTimeout(timer);
    try { db && db.close(); } catch {}
    db = null;
    const flag = new Int32Array(m.flag);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  }
};
`;

let workerUrl: string | null = null;

export interface CheckpointerOptions {
  /** The shortest wait between two passes (PASSIVE backfills) while commits keep coming. */
  minIntervalMs?: number;
  /** The longest wait: when passes are short, or nothing was committed since the last one. */
  maxIntervalMs?: number;
  /** The length of a pass the wait aims at (the worker measures each pass). */
  targetPassMs?: number;
  /** WAL size (frames) above which the WAL is rewound; 0: never (the writer's auto-checkpoint does it). */
  rewindFrames?: number;
  /** Frames the catch-up may leave for the final pass, which runs while writes wait. */
  leftFrames?: number;
}

export interface Checkpointer {
  /** Rewinds done (the last pass found every frame backfilled while writes waited). */
  readonly rewinds: number;
  /** Closes the worker's connection (waits up to 2 s, synchronously) and ends the thread. */
  stop(): void;
}

type Reply = { type: string; id?: number; log: number; checkpointed: number };

/** `mutex`: the one the main connection's transactions and raw statements hold (held during the final pass). */
export function startCheckpointer(path: string, mutex: Mutex, opts: CheckpointerOptions = {}): Checkpointer {
  const minMs = opts.minIntervalMs ?? 10;
  const maxMs = opts.maxIntervalMs ?? 100;
  const targetMs = opts.targetPassMs ?? 1;
  const rewindFrames = opts.rewindFrames ?? 2000;
  const leftFrames = opts.leftFrames ?? 100;
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
  const worker = new Worker(workerUrl);
  (worker as unknown as { unref?: () => void }).unref?.();
  let stopped = false;
  let rewinding = false;
  let seq = 0;
  const waiting = new Map<number, (r: Reply) => void>();
  let rewinds = 0;
  const ask = (type: "catchup" | "final") =>
    new Promise<Reply>((resolve) => {
      const id = ++seq;
      waiting.set(id, resolve);
      worker.postMessage({ type, id, leftFrames });
    });

  async function rewind(): Promise<void> {
    rewinding = true;
    try {
      const caught = await ask("catchup");
      if (stopped || caught.log < 0) return;
      await mutex.lock();
      try {
        if (stopped) return;
        const last = await ask("final");
        if (last.log >= 0 && last.log === last.checkpointed) rewinds++;
      } finally {
        mutex.unlock();
      }
    } finally {
      rewinding = false;
    }
  }

  worker.onmessage = (e: MessageEvent<Reply>) => {
    const m = e.data;
    if (m.id !== undefined) {
      const resolve = waiting.get(m.id);
      waiting.delete(m.id);
      resolve?.(m);
    } else if (m.type === "frames" && rewindFrames > 0 && !rewinding && !stopped && m.log > rewindFrames) {
      void rewind();
    }
  };
  worker.postMessage({ type: "start", path, minMs, maxMs, targetMs });
  return {
    get rewinds() {
      return rewinds;
    },
    stop() {
      if (stopped) return;
      stopped = true;
      // A rewind waiting for the worker ends now (the mutex is released).
      for (const resolve of waiting.values()) resolve({ type: "stopped", log: -1, checkpointed: -1 });
      waiting.clear();
      const buf = new SharedArrayBuffer(4);
      worker.postMessage({ type: "stop", flag: buf });
      Atomics.wait(new Int32Array(buf), 0, 0, 2000);
      worker.terminate();
    },
  };
}

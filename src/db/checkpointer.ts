/**
 * WAL checkpoints from a worker thread with its own connection. A checkpoint copies WAL pages into
 * the database file and fsyncs it (~10-20 ms per 1,000 pages on our disks); run by the writer's
 * auto-checkpoint it stalls the event loop and every request in flight (p99). From this thread the
 * main connection only appends to the WAL. The main connection keeps a high wal_autocheckpoint as
 * the safety net should this thread ever fall behind.
 */
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
let db = null;
let timer = null;
self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "start") {
    try {
      db = new Database(m.path);
      db.exec("PRAGMA busy_timeout = 0");
    } catch { db = null; }
    timer = setInterval(() => {
      try { db && db.query("PRAGMA wal_checkpoint(PASSIVE)").get(); } catch {}
    }, m.intervalMs);
  } else if (m.type === "stop") {
    if (timer) clearInterval(timer);
    try { db && db.close(); } catch {}
    db = null;
    const flag = new Int32Array(m.flag);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  }
};
`;

let workerUrl: string | null = null;

export interface Checkpointer {
  /** Closes the worker's connection (waits up to 2 s, synchronously) and ends the thread. */
  stop(): void;
}

export function startCheckpointer(path: string, intervalMs = 100): Checkpointer {
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
  const worker = new Worker(workerUrl);
  (worker as unknown as { unref?: () => void }).unref?.();
  worker.postMessage({ type: "start", path, intervalMs });
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      const buf = new SharedArrayBuffer(4);
      worker.postMessage({ type: "stop", flag: buf });
      Atomics.wait(new Int32Array(buf), 0, 0, 2000);
      worker.terminate();
    },
  };
}

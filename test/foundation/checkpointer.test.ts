import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Mutex } from "../../src/db/bun-sqlite-dialect";
import { startCheckpointer, type Checkpointer } from "../../src/db/checkpointer";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Writes through `mutex` (as the store's transactions do) for `ms`: each transaction dirties ~20 scattered pages. */
async function writeFor(db: Database, mutex: Mutex, ms: number): Promise<number> {
  const ins = db.query("INSERT OR REPLACE INTO t (k, v) VALUES (?, ?)");
  const end = performance.now() + ms;
  let txns = 0;
  while (performance.now() < end) {
    await mutex.lock();
    try {
      db.transaction(() => {
        for (let i = 0; i < 20; i++) ins.run(Math.floor(Math.random() * 200_000), "x".repeat(200));
      })();
      txns++;
    } finally {
      mutex.unlock();
    }
    await new Promise((r) => setImmediate(r));
  }
  return txns;
}

function open(): { db: Database; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-ckpt-"));
  dirs.push(dir);
  const path = join(dir, "t.db");
  const db = new Database(path, { create: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA wal_autocheckpoint = 0"); // only the checkpointer may rewind the WAL here
  db.exec("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)");
  return { db, path };
}

const walFrames = (path: string) => Math.round(statSync(path + "-wal").size / (4096 + 24));

test("under a steady stream of commits the WAL is rewound (bounded), without a checkpoint on the writer's thread", async () => {
  const { db, path } = open();
  const mutex = new Mutex();
  let ck: Checkpointer | null = null;
  try {
    ck = startCheckpointer(path, mutex, { minIntervalMs: 20, rewindFrames: 500, leftFrames: 50 });
    const txns = await writeFor(db, mutex, 1500);
    expect(txns).toBeGreaterThan(100);
    expect(ck.rewinds).toBeGreaterThan(0);
    // Without the rewind the WAL holds every frame written (each transaction ~20 pages: ~160k frames on a quiet
    // machine, the control below); with it, rewindFrames plus what comes in while one rewind waits its turn. How
    // much that is follows the machine's load, so the bound is relative to what was written: under three
    // quarters of it (a quiet run keeps about a sixth; two test workers on two busy cores kept over half once).
    expect(walFrames(path)).toBeLessThan((txns * 20 * 3) / 4);
  } finally {
    ck?.stop();
    db.close();
  }
});

test("without the rewind (rewindFrames 0) the same stream grows the WAL: the control case", async () => {
  const { db, path } = open();
  const mutex = new Mutex();
  const ck = startCheckpointer(path, mutex, { minIntervalMs: 20, rewindFrames: 0 });
  try {
    await writeFor(db, mutex, 1500);
    expect(ck.rewinds).toBe(0);
    expect(walFrames(path)).toBeGreaterThan(50_000);
  } finally {
    ck.stop();
    db.close();
  }
});

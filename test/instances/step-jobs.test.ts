// Workflow batches across instances (PostgreSQL): the due step jobs a batch reads are locked until it
// commits (FOR UPDATE SKIP LOCKED), so a peer's batch or job loop never takes the same job meanwhile.
// On SQLite one instance owns the file and its batches run one at a time: nothing to lock.
import { afterAll, beforeAll, expect, test } from "bun:test";
import pg from "pg";
import { dueStepJobs } from "../../src/modules/workflows/engine/store";
import { TEST_ENGINE } from "../support/postgres";
import { startServer, type TestServer } from "../support/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

test.skipIf(TEST_ENGINE !== "postgres")("a batch skips the due step jobs a peer's batch holds, and takes the others", async () => {
  const type = "test.step-lock";
  const now = srv.clock.now();
  const a = await srv.ctx.jobs.enqueue(type, { n: 1 }, { runAt: now - 2 });
  const b = await srv.ctx.jobs.enqueue(type, { n: 2 }, { runAt: now - 1 });
  const peer = new pg.Client({ connectionString: srv.ctx.config.databaseUrl! });
  await peer.connect();
  try {
    // A peer's batch: its transaction read (and locked) the oldest due job.
    await peer.query("BEGIN");
    const held = await peer.query("SELECT id FROM jobs WHERE type = $1 AND state = 'waiting' ORDER BY run_at LIMIT 1 FOR UPDATE SKIP LOCKED", [type]);
    expect(held.rows.map((r) => r.id)).toEqual([a]);
    const taken = await srv.ctx.db.transaction().execute((trx) => dueStepJobs(trx, type, now, 10));
    expect(taken.map((r) => r.id)).toEqual([b]);
    await peer.query("ROLLBACK");
    // Released: both are due to this instance's next batch.
    const after = await srv.ctx.db.transaction().execute((trx) => dueStepJobs(trx, type, now, 10));
    expect(after.map((r) => r.id)).toEqual([a, b]);
  } finally {
    await peer.end();
    await srv.ctx.db.deleteFrom("jobs").where("type", "=", type).execute();
  }
});

import { afterAll, beforeAll, expect, test } from "bun:test";
import { startServer, type TestServer } from "../support/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

test("a job runs when due, by the injected clock", async () => {
  const seen: unknown[] = [];
  srv.ctx.jobs.register("test.later", async (job) => {
    seen.push(job.payload);
    return { ok: true };
  });
  const id = await srv.ctx.jobs.enqueue("test.later", { n: 1 }, { runAt: srv.clock.now() + 60_000 });
  await srv.drainJobs();
  expect(seen).toEqual([]);
  srv.clock.advance(61_000);
  await srv.drainJobs();
  expect(seen).toEqual([{ n: 1 }]);
  const row = await srv.ctx.jobs.get(id);
  expect(row).toMatchObject({ state: "completed", progress: 100, result: JSON.stringify({ ok: true }) });
});

test("a throwing job is retried with backoff, then fails", async () => {
  let calls = 0;
  srv.ctx.jobs.register("test.flaky", async () => {
    calls++;
    if (calls < 3) throw new Error("flaky");
    return "ok";
  });
  const id = await srv.ctx.jobs.enqueue("test.flaky", {}, { maxAttempts: 5 });
  await srv.drainJobs();
  expect(calls).toBe(1);
  expect((await srv.ctx.jobs.get(id))!.state).toBe("waiting");
  srv.clock.advance(1_000);
  await srv.drainJobs();
  srv.clock.advance(2_000);
  await srv.drainJobs();
  expect(calls).toBe(3);
  expect((await srv.ctx.jobs.get(id))!.state).toBe("completed");

  srv.ctx.jobs.register("test.broken", async () => {
    throw new Error("always");
  });
  const bad = await srv.ctx.jobs.enqueue("test.broken", {}, { maxAttempts: 2 });
  await srv.drainJobs();
  srv.clock.advance(5_000);
  await srv.drainJobs();
  const row = await srv.ctx.jobs.get(bad);
  expect(row).toMatchObject({ state: "failed", attempts: 2, error: "always" });
});

test("a job interrupted by a restart resumes from its checkpoint", async () => {
  const first = await startServer();
  const processed: number[] = [];
  let stopAfterFirstChunk = true;
  const handler = async (job: any) => {
    let next = job.checkpoint?.next ?? 0;
    while (next < 4) {
      processed.push(next);
      next++;
      await job.save(next * 25, { next });
      if (stopAfterFirstChunk && next === 2) throw Object.assign(new Error("simulated crash"), { crash: true });
    }
    return { done: next };
  };
  first.ctx.jobs.register("test.chunks", handler);
  const id = await first.ctx.jobs.enqueue("test.chunks", {}, { maxAttempts: 5 });
  await first.drainJobs();
  // Simulate a crash mid-job: put it back to active, as a killed process would leave it.
  await first.ctx.db.updateTable("jobs").set({ state: "active", run_at: 0 }).where("id", "=", id).execute();
  const dbPath = first.dbPath;
  await first.stop();

  stopAfterFirstChunk = false;
  const { startServer: start } = await import("../support/server");
  const second = await start({ dbPath });
  second.ctx.jobs.register("test.chunks", handler);
  await second.drainJobs();
  const row = await second.ctx.jobs.get(id);
  expect(row!.state).toBe("completed");
  expect(processed).toEqual([0, 1, 2, 3]);
  await second.close();
});

test("durable schedules run every interval of the injected clock", async () => {
  let runs = 0;
  const s = await startServer();
  s.ctx.schedules.every("test.tick", 300_000, async () => {
    runs++;
  });
  await s.ctx.schedules.arm();
  await s.drainJobs();
  expect(runs).toBe(0);
  s.clock.advance(300_001);
  await s.drainJobs();
  expect(runs).toBe(1);
  s.clock.advance(300_001);
  await s.drainJobs();
  expect(runs).toBe(2);
  await s.close();
});

test("a deduplicated job is one waiting row, also when a second queue on the same database enqueues it at the same moment", async () => {
  // A second JobQueue over its own connection to the same database: what another instance is.
  const { openDatabase } = await import("../../src/db");
  const { JobQueue } = await import("../../src/jobs/queue");
  const other = openDatabase(srv.ctx.config);
  try {
    const peer = new JobQueue(other.db, srv.clock, srv.ctx.log);
    const key = `schedule:test:next:${Date.now()}`;
    const ids = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? peer : srv.ctx.jobs).enqueue("test.periodic", {}, { dedupeKey: key, runAt: srv.clock.now() + 60_000 })),
    );
    expect(new Set(ids).size).toBe(1);
    const rows = await srv.ctx.db.selectFrom("jobs").select(["id", "state"]).where("dedupe_key", "=", key).execute();
    expect(rows).toEqual([{ id: ids[0]!, state: "waiting" }]);
  } finally {
    await other.close();
  }
});

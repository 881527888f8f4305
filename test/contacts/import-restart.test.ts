// Its own file: croner schedule names are process-global, so two servers must not run at once.
import { rawGet } from "../../src/db/raw";
import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createAccount, startServer } from "../support/server";
import { waitFor } from "../support/wait";
import { uploadCsv } from "../audience/support";

test("an import interrupted by a shutdown resumes after restart: every row imported exactly once", async () => {
  const first = await startServer();
  const dbPath = first.dbPath;
  const acc = await createAccount(first.api);
  const ROWS = 30_000;
  const lines = ["email,n"];
  for (let i = 0; i < ROWS; i++) lines.push(`row${i}@example.com,${i}`);
  const up = await uploadCsv(first.api, acc.secretKey, lines.join("\n"));
  expect(up.status).toBe(202);
  const jobId = up.body.jobId;
  // Once a first chunk is committed, shut down: the job stops after the chunk it is on and keeps its checkpoint.
  const succeeded = async () => (await first.api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body.result.succeeded as number;
  await waitFor(succeeded, { intervalMs: 5, what: "the first committed chunk" });
  await first.stop();

  const second = await startServer({ dbPath });
  try {
    const mid = (await second.api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body;
    expect(mid.state).not.toBe("completed");
    expect(mid.result.succeeded).toBeGreaterThan(0);
    expect(mid.result.succeeded).toBeLessThan(ROWS);
    second.clock.advance(5_000); // past the retry backoff of the interrupted attempt (not past the job lease)
    await second.drainJobs();
    const done = (await second.api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body;
    expect(done.state).toBe("completed");
    expect(done.result).toMatchObject({ total: ROWS, succeeded: ROWS, created: ROWS, updated: 0, failed: 0 });
    const page = await second.api("/contacts?limit=1", { key: acc.secretKey });
    expect(page.body.total).toBe(ROWS);
    const row = await rawGet(second.ctx.db, second.ctx.store.engine, "SELECT count(*) AS n, count(DISTINCT email) AS d FROM contacts WHERE project_id = ?", [acc.projectId]);
    expect(row).toEqual({ n: ROWS, d: ROWS });
    // The stored file is gone once the import completed.
    expect(await rawGet(second.ctx.db, second.ctx.store.engine, "SELECT count(*) AS n FROM contact_imports")).toEqual({ n: 0 });
  } finally {
    await second.close();
    rmSync(first.dir, { recursive: true, force: true });
  }
});

test("an import whose process is killed (kill -9) mid-way resumes on the next start: every row exactly once", async () => {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { makeApi, spawnServer } = await import("../support/server");
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-crash-"));
  const dbPath = join(dir, "crash.db");
  // One stable instance id across the kill and the restart: on PostgreSQL the restarted instance takes back
  // its own active job at once (another id would wait for the job's lease to end, MAILSVC_LEASE).
  const child = await spawnServer({ MAILSVC_DB: dbPath, MAILSVC_INSTANCE_ID: "import-crash" });
  const api = makeApi(child.url);
  const acc = await createAccount(api);
  const ROWS = 40_000;
  const lines = ["email,n,subscribed"];
  for (let i = 0; i < ROWS; i++) lines.push(`crash${i}@example.com,${i},${i % 2 ? "yes" : "no"}`);
  const up = await uploadCsv(api, acc.secretKey, lines.join("\n"));
  expect(up.status).toBe(202);
  const jobId = up.body.jobId;
  await waitFor(async () => (await api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body.result.succeeded as number, { intervalMs: 2, what: "the first committed chunk" });
  await child.kill("SIGKILL");

  const srv = await startServer({ dbPath, config: { instanceId: "import-crash" } });
  try {
    const before = (await srv.api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body;
    expect(before.result.succeeded).toBeGreaterThan(0);
    expect(before.result.succeeded).toBeLessThan(ROWS);
    await srv.drainJobs();
    const done = (await srv.api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body;
    expect(done.state).toBe("completed");
    expect(done.result).toMatchObject({ total: ROWS, succeeded: ROWS, created: ROWS, updated: 0, failed: 0 });
    const counts = await rawGet(
      srv.ctx.db,
      srv.ctx.store.engine,
      "SELECT count(*) AS n, count(DISTINCT email) AS d, sum(CASE WHEN subscribed = 0 THEN 1 ELSE 0 END) AS unsub FROM contacts WHERE project_id = ?",
      [acc.projectId],
    );
    expect(counts).toEqual({ n: ROWS, d: ROWS, unsub: ROWS / 2 });
    expect((await srv.api("/contacts?subscribed=false&limit=1", { key: acc.secretKey })).body.total).toBe(ROWS / 2);
  } finally {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

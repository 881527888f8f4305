// Its own file: croner schedule names are process-global, so two servers must not run at once.
import { expect, test } from "bun:test";
import { rmSync } from "node:fs";
import { createAccount, startServer } from "../support/server";
import { uploadCsv } from "../audience/helpers";

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
  for (let i = 0; i < 2000; i++) {
    const s = (await first.api(`/contacts/import/${jobId}`, { key: acc.secretKey })).body;
    if (s.result.succeeded > 0) break;
    await Bun.sleep(5);
  }
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
    const row = second.ctx.store.sqlite
      .query<{ n: number; d: number }, [string]>("SELECT count(*) AS n, count(DISTINCT email) AS d FROM contacts WHERE project_id = ?")
      .get(acc.projectId)!;
    expect(row).toEqual({ n: ROWS, d: ROWS });
    // The stored file is gone once the import completed.
    expect(second.ctx.store.sqlite.query("SELECT count(*) AS n FROM contact_imports").get()).toEqual({ n: 0 });
  } finally {
    await second.close();
    rmSync(first.dir, { recursive: true, force: true });
  }
});

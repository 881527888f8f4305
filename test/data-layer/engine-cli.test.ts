// The commands on the PostgreSQL engine (decisions.md "PostgreSQL and many instances"): both engines
// at once are refused; `backup` says pg_dump is the way; `migrate` and `user create` work on a URL;
// GET /ready says which engine and instance answer.
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { postgresBinDir, testDatabaseUrl } from "../support/postgres";
import { startServer } from "../support/server";

const MAIN = join(import.meta.dir, "../../src/main.ts");
async function cli(args: string[], env: Record<string, string>) {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { env: { ...process.env, MAILSVC_DB: "", MAILSVC_DATABASE_URL: "", ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}

describe("the commands and the engine", () => {
  test("MAILSVC_DATABASE_URL beside MAILSVC_DB is refused at start with exit 2, naming both", async () => {
    const r = await cli(["migrate"], { MAILSVC_DB: "/tmp/x.db", MAILSVC_DATABASE_URL: "postgres://u@127.0.0.1:1/db" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("MAILSVC_DATABASE_URL (--database-url) and MAILSVC_DB (--db) are both set");
  });

  test("a database URL that is not postgres:// is refused with exit 2", async () => {
    const r = await cli(["migrate"], { MAILSVC_DATABASE_URL: "mysql://u@127.0.0.1/db" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("must be a postgres:// URL");
  });

  test("backup on PostgreSQL answers that pg_dump is the way, exit 2", async () => {
    const r = await cli(["backup", "/tmp/never.db"], { MAILSVC_DATABASE_URL: "postgres://u@127.0.0.1:1/db" });
    expect(r.code).toBe(2);
    expect(r.err).toContain("pg_dump");
  });

  test.skipIf(!postgresBinDir())("migrate, user create and GET /ready on a PostgreSQL URL", async () => {
    const url = await testDatabaseUrl(`engine-cli-${Date.now()}`);
    const m = await cli(["migrate"], { MAILSVC_DATABASE_URL: url });
    expect(m.code).toBe(0);
    const migrated = JSON.parse(m.out);
    expect(migrated.db.startsWith("postgres://")).toBe(true);
    const u = await cli(["user", "create", "--email", "pg@engine.test", "--password", "a long password", "--project", "PG"], { MAILSVC_DATABASE_URL: url });
    expect(u.code).toBe(0);
    expect(JSON.parse(u.out).project.name).toBe("PG");
    const srv = await startServer({ config: { databaseUrl: url, instanceId: "engine-test-1" } });
    try {
      const ready = await srv.api("/ready");
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ ready: true, instance: "engine-test-1", engine: "postgres" });
      const login = await srv.api("/auth/login", { body: { email: "pg@engine.test", password: "a long password" } });
      expect(login.status).toBe(200);
      const metrics = await srv.api("/metrics");
      expect(metrics.text).toContain('instance="engine-test-1"');
    } finally {
      await srv.close();
    }
  });
});

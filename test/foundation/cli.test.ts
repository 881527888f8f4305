import { Database } from "bun:sqlite";
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { loadConfig, parseArgv, parseDuration } from "../../src/config";
import { TEST_ENGINE } from "../support/postgres";
import { createAccount, makeApi, spawnServer, startServer, type TestServer } from "../support/server";

const MAIN = join(import.meta.dir, "../../src/main.ts");
const run = (args: string[], env: Record<string, string> = {}) => {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { env: { ...process.env, ...env } });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
};

// The in-process test server must keep answering while the command runs: not spawnSync.
const runAsync = async (args: string[], env: Record<string, string> = {}) => {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
};

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

test("--version and --help", () => {
  expect(run(["--version"]).out).toMatch(/^mailsvc \d+\.\d+\.\d+/);
  const help = run(["--help"]).out;
  expect(help).toContain("mailsvc serve");
  expect(help).toContain("MAILSVC_DNS_SERVERS");
});

test("an unknown option is refused (exit 2) before the command runs on the defaults", () => {
  const r = run(["migrate", "--bd", "/tmp/never-created.db"]);
  expect(r.code).toBe(2);
  expect(r.err).toContain('unknown option "--bd"');
  // A command's own flags belong to that command only.
  expect(run(["migrate", "--email", "x@example.com"]).code).toBe(2);
});

test("every setting is an env variable and a flag; flags win", () => {
  const env = { MAILSVC_PORT: "4000", MAILSVC_RETRY_SCHEDULE: "1s,2s", MAILSVC_DNS_SERVERS: "127.0.0.1:5353, 10.0.0.1", MAILSVC_DISABLE_SIGNUPS: "true" };
  const c = loadConfig(env, parseArgv(["serve", "--port", "5000", "--domain-check-interval=90s"]).flags);
  expect(c.port).toBe(5000);
  expect(c.retryScheduleMs).toEqual([1000, 2000]);
  expect(c.dnsServers).toEqual(["127.0.0.1:5353", "10.0.0.1"]);
  expect(c.disableSignups).toBe(true);
  expect(c.domainCheckIntervalMs).toBe(90_000);
  expect(c.publicUrl).toBe("http://localhost:5000");
  expect(parseDuration("5m")).toBe(300_000);
  expect(() => parseDuration("soon")).toThrow();
});

test("health exits 0 when /health on the configured host and port answers 200, else 1", async () => {
  const port = String(srv.port);
  // The wildcard listen address (the container's) is checked on loopback.
  const ok = await runAsync(["health"], { MAILSVC_HOST: "0.0.0.0", MAILSVC_PORT: port });
  expect(ok.code).toBe(0);
  expect(JSON.parse(ok.out)).toEqual({ url: `http://127.0.0.1:${port}/health`, status: 200 });
  expect((await runAsync(["health", "--port", port, "--host", "127.0.0.1"])).code).toBe(0);
  // Nothing listening: 1, with the reason on stderr.
  const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const freePort = String(closed.port);
  closed.stop(true);
  const down = await runAsync(["health", "--timeout", "2000"], { MAILSVC_HOST: "127.0.0.1", MAILSVC_PORT: freePort });
  expect(down.code).toBe(1);
  expect(down.err).toContain(`http://127.0.0.1:${freePort}/health`);
  // A listener that answers something else than 200 is not healthy either.
  const other = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("no", { status: 503 }) });
  const bad = await runAsync(["health"], { MAILSVC_HOST: "127.0.0.1", MAILSVC_PORT: String(other.port) });
  other.stop(true);
  expect(bad.code).toBe(1);
  expect(bad.err).toContain("answered 503");
  expect((await runAsync(["health", "--timeout", "soon"])).code).toBe(2);
});

test("user create prints the user and the project with its keys", () => {
  const db = join(srv.dir, "cli.db");
  const r = run(["user", "create", "--email", "Owner@Example.com", "--password", "password123", "--project", "CLI"], { MAILSVC_DB: db });
  expect(r.code).toBe(0);
  const out = JSON.parse(r.out);
  expect(out.user.email).toBe("owner@example.com");
  expect(out.project).toMatchObject({ name: "CLI", role: "OWNER" });
  expect(out.project.public).toStartWith("pk_");
  expect(out.project.secret).toStartWith("sk_");
  const again = run(["user", "create", "--email", "owner@example.com", "--password", "password123"], { MAILSVC_DB: db });
  expect(again.code).not.toBe(0);
});

// `backup` copies the SQLite file; on PostgreSQL it answers that pg_dump is the way (test/data-layer/engine-cli.test.ts).
test.skipIf(TEST_ENGINE === "postgres")("backup makes a readable, consistent copy while writes continue", async () => {
  const db = join(srv.dir, "live.db");
  const live = await spawnServer({ MAILSVC_DB: db });
  const api = makeApi(live.url);
  const acc = await createAccount(api);
  let writing = true;
  let written = 0;
  const writer = (async () => {
    while (writing) {
      const r = await api(`/users/@me/projects`, { cookie: acc.cookie, body: { name: `p${written}` } });
      if (r.status === 201) written++;
    }
  })();
  await Bun.sleep(150);
  const out = join(srv.dir, "backup.db");
  const r = run(["backup", out], { MAILSVC_DB: db });
  await Bun.sleep(100);
  writing = false;
  await writer;
  await live.kill("SIGTERM");
  expect(r.code).toBe(0);
  const copy = new Database(out, { readonly: true });
  expect(copy.query("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
  const n = (copy.query("SELECT count(*) AS n FROM projects").get() as { n: number }).n;
  expect(n).toBeGreaterThan(1);
  expect(n).toBeLessThanOrEqual(written + 1);
  expect((copy.query("SELECT count(*) AS n FROM users").get() as { n: number }).n).toBe(1);
  copy.close();
  // After SIGTERM the stopped file alone is complete (WAL checkpointed and truncated).
  const wal = Bun.file(db + "-wal");
  expect((await wal.exists()) ? wal.size : 0).toBe(0);
  const stopped = new Database(db, { readonly: true });
  expect((stopped.query("SELECT count(*) AS n FROM projects").get() as { n: number }).n).toBe(written + 1);
  stopped.close();
});

test("signups can be disabled", async () => {
  const s = await startServer({ config: { disableSignups: true } });
  const r = await s.api("/auth/signup", { body: { email: "x@example.com", password: "password123" } });
  expect(r.status).toBe(403);
  expect(r.body.error.code).toBe("FORBIDDEN");
  expect((await s.api("/config")).body.features.signups).toBe(false);
  await s.close();
});

// Starts the real service in-process on a temp SQLite file and a free port, with a movable clock.
// `spawnServer` runs it as a child process instead (kill -9 tests).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../src/clock";
import { loadConfig, type Config } from "../../src/config";
import { createLogger } from "../../src/http/logger";
import { startService, type RunningService } from "../../src/server";
import { waitFor } from "./wait";
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from "./postgres";

export interface TestServer extends RunningService {
  clock: ManualClock;
  dir: string;
  dbPath: string;
  /** Fetch relative to the server with JSON in and out. */
  api: Api;
  /** Runs due jobs until the queue is idle (after moving the clock). */
  drainJobs(): Promise<void>;
  close(): Promise<void>;
  logs: string[];
}

export interface ApiOptions {
  method?: string;
  body?: unknown;
  key?: string;
  cookie?: string;
  headers?: Record<string, string>;
  raw?: BodyInit;
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export type Api = <T = any>(path: string, opts?: ApiOptions) => Promise<ApiResponse<T>>;

export function makeApi(baseUrl: string): Api {
  return async (path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    let body: BodyInit | undefined = opts.raw;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers["content-type"] ??= "application/json";
    }
    if (opts.key) headers.authorization = `Bearer ${opts.key}`;
    if (opts.cookie) headers.cookie = opts.cookie;
    const res = await fetch(baseUrl + path, { method: opts.method ?? (body !== undefined ? "POST" : "GET"), headers, body, redirect: "manual" });
    const text = await res.text();
    let parsed: any = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, body: parsed, headers: res.headers, text };
  };
}

export interface StartServerOptions {
  config?: Partial<Config>;
  clock?: ManualClock;
  /** Keep the temp dir after close (for restart tests pass the same dbPath). */
  dbPath?: string;
  jobPollMs?: number;
}

export async function startServer(opts: StartServerOptions = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-test-"));
  const dbPath = opts.dbPath ?? join(dir, "test.db");
  // MAILSVC_TEST_ENGINE=postgres: the same test on a database of the suite's PostgreSQL (the path a
  // restart test passes again names the same database).
  const databaseUrl = TEST_ENGINE === "postgres" && !opts.config?.db && !opts.config?.databaseUrl ? await testDatabaseUrl(dbPath) : undefined;
  const config = loadConfig({}, {}, {
    ...(databaseUrl ? { databaseUrl } : opts.config?.databaseUrl ? {} : { db: dbPath }),
    host: "127.0.0.1",
    port: 0,
    publicUrl: "",
    hostname: "mailsvc.test",
    logRequests: false,
    retryScheduleMs: [1000, 2000],
    domainCheckIntervalMs: 300_000,
    ...opts.config,
  });
  const clock = opts.clock ?? new ManualClock();
  const logs: string[] = [];
  const log = createLogger({ write: (s) => logs.push(s) });
  const svc = await startService(config, { clock, log, jobPollMs: opts.jobPollMs ?? 50 });
  if (!opts.config?.publicUrl) svc.ctx.config.publicUrl = svc.url;
  const api = makeApi(svc.url);
  return {
    ...svc,
    clock,
    dir,
    dbPath,
    api,
    logs,
    async drainJobs() {
      // Jobs record events and the feed's consumers enqueue jobs: run both until neither has work.
      for (let i = 0; i < 20; i++) {
        const before = await pendingWork(svc);
        await svc.ctx.feed.drain();
        await svc.ctx.jobs.drain();
        const after = await pendingWork(svc);
        if (after === before && after.endsWith(":0")) return;
      }
    },
    async close() {
      await svc.stop();
      if (!opts.dbPath) rmSync(dir, { recursive: true, force: true });
      if (databaseUrl && !opts.dbPath) await dropTestDatabase(databaseUrl).catch(() => {});
    },
  };
}

/** A fingerprint of outstanding work: the newest event seq and the number of due jobs. */
async function pendingWork(svc: RunningService): Promise<string> {
  const now = svc.ctx.clock.now();
  const ev = await svc.ctx.db.selectFrom("events").select((eb) => eb.fn.max("seq").as("max")).executeTakeFirst();
  const due = await svc.ctx.db
    .selectFrom("jobs")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("state", "=", "waiting")
    .where("run_at", "<=", now)
    .executeTakeFirst();
  return `${ev?.max ?? 0}:${Number(due?.n ?? 0)}`;
}

export interface Account {
  userId: string;
  email: string;
  cookie: string;
  projectId: string;
  publicKey: string;
  secretKey: string;
}

let seq = 0;
/** Signs up a user, logs in and creates a project: the usual start of a test. */
export async function createAccount(api: Api, name = "Test project"): Promise<Account> {
  const email = `user${Date.now()}${++seq}@example.com`;
  const password = "correct horse battery";
  const signup = await api("/auth/signup", { body: { email, password } });
  if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${signup.text}`);
  const cookie = (signup.headers.get("set-cookie") ?? "").split(";")[0]!;
  const project = await api("/users/@me/projects", { body: { name }, cookie });
  if (project.status !== 201) throw new Error(`project create failed: ${project.status} ${project.text}`);
  return {
    userId: signup.body.data.id,
    email,
    cookie,
    projectId: project.body.id,
    publicKey: project.body.public,
    secretKey: project.body.secret,
  };
}

export interface SpawnedServer {
  url: string;
  port: number;
  proc: ReturnType<typeof Bun.spawn>;
  output: () => string;
  kill(signal?: NodeJS.Signals | number): Promise<void>;
}

/** Runs `bun src/main.ts serve` as a child process (for crash and signal tests). */
/**
 * The environment of a `mailsvc` process for the suite's engine: on PostgreSQL, MAILSVC_DB (a file
 * path) becomes MAILSVC_DATABASE_URL of the database that path names (the same path, the same
 * database: restart tests and CLI-then-serve tests share it).
 */
export async function engineEnv(env: Record<string, string>): Promise<Record<string, string>> {
  if (TEST_ENGINE !== "postgres" || !env.MAILSVC_DB || env.MAILSVC_DATABASE_URL) return env;
  const { MAILSVC_DB, ...rest } = env;
  return { ...rest, MAILSVC_DATABASE_URL: await testDatabaseUrl(MAILSVC_DB) };
}

export async function spawnServer(env: Record<string, string>, timeoutMs = 10_000): Promise<SpawnedServer> {
  const port = await freeTcpPort();
  env = await engineEnv(env);
  let out = "";
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/main.ts"), "serve"], {
    env: { ...process.env, MAILSVC_HOST: "127.0.0.1", MAILSVC_PORT: String(port), MAILSVC_LOG_REQUESTS: "false", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const collect = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) out += new TextDecoder().decode(chunk);
  };
  void collect(proc.stdout as ReadableStream<Uint8Array>);
  void collect(proc.stderr as ReadableStream<Uint8Array>);
  const url = `http://127.0.0.1:${port}`;
  const up = () => fetch(url + "/config").then((r) => r.ok, () => false);
  await waitFor(up, { timeoutMs, intervalMs: 25, what: `the server on port ${port}` }).catch((e) => {
    throw new Error(`${(e as Error).message}; output: ${out}`);
  });
  return {
    url,
    port,
    proc,
    output: () => out,
    async kill(signal = "SIGKILL") {
      proc.kill(signal);
      await proc.exited;
    },
  };
}

export async function freeTcpPort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
}

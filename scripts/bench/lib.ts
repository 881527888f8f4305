// Shared pieces of the benchmarks: start processes, run autocannon (under node, on the other core), read RSS.
import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { waitFor as poll } from "../../test/support/wait";

export const ROOT = join(import.meta.dir, "../..");

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
}

export function tempDir(prefix = "mailsvc-bench-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

// ---- the engine: BENCH_DATABASE_URL=postgres://… (an admin URL: a role that may CREATE DATABASE) runs
// the services on PostgreSQL, each on a fresh database of its own; unset, on the SQLite file as always.
// (Read at each call: scripts/bench/engines.ts switches it between runs.)
export const benchAdminUrl = (): string => process.env.BENCH_DATABASE_URL || "";

function withDatabase(admin: string, name: string): string {
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}
const pgDatabases = new Map<string, string>();
const pgName = (path: string) => `bench_${process.pid}_${createHash("sha256").update(path).digest("hex").slice(0, 16)}`;

/**
 * The PostgreSQL database standing for the SQLite path a benchmark chose: created empty on the first
 * call for that path (a CLI call and the `serve` after it share it), the same one afterwards.
 */
export async function benchDatabaseUrl(path: string, admin = benchAdminUrl()): Promise<string> {
  const key = `${admin} ${path}`;
  let url = pgDatabases.get(key);
  if (url) return url;
  const name = pgName(path);
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  url = withDatabase(admin, name);
  pgDatabases.set(key, url);
  return url;
}

/** Drops the database of that path (BENCH_DATABASE_URL set), closing its connections; a no-op on SQLite. */
export async function dropBenchDatabase(path: string, admin = benchAdminUrl()): Promise<void> {
  if (!admin || !pgDatabases.has(`${admin} ${path}`)) return;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${pgName(path)}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
  pgDatabases.delete(`${admin} ${path}`);
}

/** The service's database settings for a SQLite path: that file, or (BENCH_DATABASE_URL) its own PostgreSQL database. */
export async function engineEnv(path: string): Promise<Record<string, string>> {
  return benchAdminUrl() ? { MAILSVC_DATABASE_URL: await benchDatabaseUrl(path) } : { MAILSVC_DB: path };
}

/** process.env for a service's child process: on PostgreSQL without an inherited MAILSVC_DB (the service refuses both). */
export function childEnv(): Record<string, string | undefined> {
  if (!benchAdminUrl()) return process.env;
  const { MAILSVC_DB: _, ...rest } = process.env;
  return rest;
}

export interface Proc {
  url: string;
  pid: number;
  kill(): Promise<void>;
}

/** Waits until `url` answers 2xx (a process has started listening). */
export async function waitFor(url: string, timeoutMs = 15_000): Promise<void> {
  await poll(() => fetch(url).then((r) => r.ok, () => false), { timeoutMs, intervalMs: 25, what: url });
}

/** Starts `bun src/main.ts serve` with bench-friendly settings (no request log, high rate limit). */
export async function startMailsvc(env: Record<string, string> = {}): Promise<Proc> {
  const port = await freePort();
  const dir = tempDir();
  // BENCH_BIN=./mailsvc: the compiled binary (what users run) instead of the sources.
  const cmd = process.env.BENCH_BIN ? [join(ROOT, process.env.BENCH_BIN), "serve"] : [process.execPath, join(ROOT, "src/main.ts"), "serve"];
  const proc = Bun.spawn(cmd, {
    env: {
      ...childEnv(),
      ...(await engineEnv(join(dir, "bench.db"))),
      MAILSVC_HOST: "127.0.0.1",
      MAILSVC_PORT: String(port),
      MAILSVC_LOG_REQUESTS: "false",
      MAILSVC_RATE_LIMIT: "100000000",
      ...env,
    },
    // BENCH_SERVER_LOG=<file>: the server's log lines (errors with their stack) go there.
    stdout: process.env.BENCH_SERVER_LOG ? Bun.file(process.env.BENCH_SERVER_LOG) : "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + "/config");
  return { url, pid: proc.pid, kill: async () => { proc.kill("SIGTERM"); await proc.exited; await dropBenchDatabase(join(dir, "bench.db")); } };
}

/** Starts a child process running `code` (a script that listens on PORT). */
export async function startScript(code: string, readyPath = "/"): Promise<Proc> {
  const port = await freePort();
  const dir = tempDir();
  const file = join(dir, "script.ts");
  await Bun.write(file, code);
  const proc = Bun.spawn([process.execPath, file], { env: { ...process.env, PORT: String(port), NODE_PATH: join(ROOT, "node_modules") }, cwd: ROOT, stdout: "ignore", stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + readyPath);
  return { url, pid: proc.pid, kill: async () => { proc.kill("SIGTERM"); await proc.exited; } };
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

/**
 * Runs autocannon under node (a separate process, so it gets its own core).
 * `requests` may vary bodies: pass a module path exporting setupRequest via `bodyScript`.
 */
export async function load(opts: {
  url: string;
  connections?: number;
  seconds?: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** JS source of a function (req, context) => req, for per-request bodies. */
  setupRequest?: string;
}): Promise<LoadResult> {
  const dir = tempDir("mailsvc-load-");
  const file = join(dir, "load.cjs");
  const script = `
const autocannon = require(${JSON.stringify(join(ROOT, "node_modules/autocannon"))});
const setupRequest = ${opts.setupRequest ?? "undefined"};
const req = { method: ${JSON.stringify(opts.method ?? "GET")}, headers: ${JSON.stringify(opts.headers ?? {})}, body: ${JSON.stringify(opts.body ?? undefined)} };
if (setupRequest) req.setupRequest = setupRequest;
autocannon({ url: ${JSON.stringify(opts.url)}, connections: ${opts.connections ?? 50}, duration: ${opts.seconds ?? 10}, requests: [req] }, (err, r) => {
  if (err) { console.error(err); process.exit(1); }
  process.stdout.write(JSON.stringify({ rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, total: r.requests.total }));
});`;
  await Bun.write(file, script);
  const p = Bun.spawn(["node", file], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  return JSON.parse(out);
}

/** VmRSS split into its anonymous, file-backed and shared-memory parts (MB), from /proc/<pid>/status. */
export function rssParts(pid: number): { anon: number; file: number; shmem: number } {
  try {
    const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
    const kb = (name: string) => Math.round(Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024);
    return { anon: kb("RssAnon"), file: kb("RssFile"), shmem: kb("RssShmem") };
  } catch {
    return { anon: NaN, file: NaN, shmem: NaN };
  }
}

export function rssMb(pid: number): number {
  try {
    const status = require("node:fs").readFileSync(`/proc/${pid}/status`, "utf8") as string;
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

export const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

/** CPU seconds per thread name of a process (utime + stime from /proc/<pid>/task/<tid>/stat), summed by name. */
export function threadCpu(pid: number): Map<string, number> {
  const fs = require("node:fs") as typeof import("node:fs");
  const out = new Map<string, number>();
  let tids: string[] = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  const hz = 100;
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const name = stat.slice(stat.indexOf("(") + 1, close);
      const f = stat.slice(close + 2).split(" ");
      const cpu = (Number(f[11]) + Number(f[12])) / hz;
      out.set(name, (out.get(name) ?? 0) + cpu);
    } catch {}
  }
  return out;
}

/** The difference of two threadCpu readings as "name 12.3 s, ..." (largest first). */
export function threadCpuDelta(before: Map<string, number>, after: Map<string, number>): string {
  const rows = [...after].map(([n, s]) => [n, s - (before.get(n) ?? 0)] as const).filter(([, s]) => s >= 0.05);
  rows.sort((a, b) => b[1] - a[1]);
  return rows.map(([n, s]) => `${n} ${s.toFixed(1)} s`).join(", ");
}

/**
 * The anonymous memory of a process by mapping (/proc/<pid>/smaps): the `n` largest resident ones,
 * each with its size, permissions and name ([heap] is glibc's main arena; unnamed 64 MB-aligned
 * ones are glibc thread arenas; the rest are JSC's and mimalloc's regions), and the total of the rest.
 */
export function smapsTop(pid: number, n = 12): string {
  let text = "";
  try {
    text = (require("node:fs") as typeof import("node:fs")).readFileSync(`/proc/${pid}/smaps`, "utf8");
  } catch {
    return "smaps unavailable";
  }
  const maps: { head: string; size: number; anon: number }[] = [];
  let cur: { head: string; size: number; anon: number } | null = null;
  for (const line of text.split("\n")) {
    const h = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (h) {
      cur = { head: `${h[3]} ${h[4] || "(anon)"}`, size: (parseInt(h[2]!, 16) - parseInt(h[1]!, 16)) / 1048576, anon: 0 };
      maps.push(cur);
      continue;
    }
    const a = /^Anonymous:\s+(\d+) kB/.exec(line);
    if (a && cur) cur.anon = Number(a[1]) / 1024;
  }
  maps.sort((x, y) => y.anon - x.anon);
  const top = maps.slice(0, n).map((m) => `${m.anon.toFixed(1)} MB of ${m.size.toFixed(1)} MB ${m.head}`);
  const rest = maps.slice(n).reduce((s, m) => s + m.anon, 0);
  return [...top, `${rest.toFixed(1)} MB in ${maps.length - n} other mappings`].join("\n    ");
}

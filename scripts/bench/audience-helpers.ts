// Shared by the audience benchmarks: a temp database, a real server in a child process, the
// project's keys, and the raw one-transaction-per-request ceiling loop.
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "../../src/db/migrate";
import { childEnv, engineEnv, freePort } from "./lib";

const ROOT = join(import.meta.dir, "../..");
const MAIN = join(ROOT, "src/main.ts");

export function tempDb(): { dir: string; db: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-bench-"));
  return { dir, db: join(dir, "bench.db"), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `mailsvc user create … --project` on the file (BENCH_DATABASE_URL: on its PostgreSQL database, lib.ts engineEnv): returns the project's id and keys. */
export async function createProject(db: string): Promise<{ id: string; public: string; secret: string }> {
  const p = Bun.spawn([process.execPath, MAIN, "user", "create", "--email", `bench${Date.now()}@example.com`, "--password", "benchmark-pass", "--project", "bench"], {
    env: { ...childEnv(), ...(await engineEnv(db)) },
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`user create failed: ${await new Response(p.stderr).text()}`);
  return JSON.parse(out).project;
}

export interface BenchServer {
  url: string;
  pid: number;
  /** CPU time the server process has used (all its threads). */
  cpuSeconds(): number;
  rssMb(): number;
  stop(): Promise<void>;
}

/** Runs `mailsvc serve` in a child process (its own thread and core), request logs off, rate limit lifted; on the file `db`, or (BENCH_DATABASE_URL) on the PostgreSQL database standing for it. */
export async function startBenchServer(db: string, env: Record<string, string> = {}, opts: { cpu?: string } = {}): Promise<BenchServer> {
  // A port the kernel just handed out (a random one collided with other listeners on a shared machine).
  const port = await freePort();
  // BENCH_PROFILE=<dir>: the server writes a CPU profile (markdown) there on exit.
  const prof = process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // opts.cpu: pin the server to those cores (taskset keeps the pid).
  const pin = opts.cpu ? ["taskset", "-c", opts.cpu] : [];
  const proc = Bun.spawn([...pin, process.execPath, ...prof, MAIN, "serve"], {
    env: {
      ...childEnv(),
      ...(await engineEnv(db)),
      MAILSVC_HOST: "127.0.0.1",
      MAILSVC_PORT: String(port),
      MAILSVC_LOG_REQUESTS: "false",
      MAILSVC_RATE_LIMIT: "1000000000",
      ...env,
    },
    stdout: "ignore",
    stderr: "inherit",
  });
  // A benchmark that throws must not leave its server running.
  const reap = () => proc.kill("SIGKILL");
  process.on("exit", reap);
  const url = `http://127.0.0.1:${port}`;
  const t0 = Date.now();
  for (;;) {
    try {
      if ((await fetch(url + "/config")).ok) break;
    } catch {}
    if (Date.now() - t0 > 20_000) throw new Error("bench server did not start");
    await Bun.sleep(50);
  }
  return {
    url,
    pid: proc.pid,
    cpuSeconds() {
      try {
        const stat = require("node:fs").readFileSync(`/proc/${proc.pid}/stat`, "utf8") as string;
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 10 ms
      } catch {
        return NaN;
      }
    },
    rssMb() {
      try {
        const status = require("node:fs").readFileSync(`/proc/${proc.pid}/status`, "utf8") as string;
        const m = /VmRSS:\s+(\d+) kB/.exec(status);
        return m ? Number(m[1]) / 1024 : NaN;
      } catch {
        return NaN;
      }
    },
    async stop() {
      process.off("exit", reap);
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

export function openMigrated(path: string): Database {
  const db = new Database(path, { create: true, strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY");
  migrate(db);
  return db;
}

export const fmt = (n: number, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Times `runs` authenticated GETs of one path: median and worst, and the last body. */
export function makeTimer(url: string, headers: Record<string, string>) {
  return async function timeGet(path: string, runs = 15): Promise<{ p50: number; max: number; body: any }> {
    const ms: number[] = [];
    let body: any;
    for (let i = 0; i < runs; i++) {
      const a = performance.now();
      const r = await fetch(url + path, { headers });
      body = await r.json();
      ms.push(performance.now() - a);
      if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
    }
    ms.sort((x, y) => x - y);
    return { p50: ms[Math.floor(ms.length / 2)]!, max: ms[ms.length - 1]!, body };
  };
}

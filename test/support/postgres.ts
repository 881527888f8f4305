// A throwaway PostgreSQL for tests: Debian's server binaries, initdb in a temp folder, a free port on
// 127.0.0.1, stopped when the test process exits. `MAILSVC_TEST_ENGINE=postgres` runs the whole suite
// on it (test/support/server.ts asks `testDatabaseUrl` for a fresh database per server).
// `MAILSVC_TEST_PG_URL` (an admin URL of a running server) skips starting one.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHash } from "node:crypto";
import pg from "pg";

export const TEST_ENGINE: "sqlite" | "postgres" = process.env.MAILSVC_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";

/** The folder of PostgreSQL's server binaries, or null when none is installed. */
export function postgresBinDir(): string | null {
  for (const base of ["/usr/lib/postgresql"]) {
    if (!existsSync(base)) continue;
    const versions = readdirSync(base).filter((v) => existsSync(join(base, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
    if (versions.length) return join(base, versions[0]!, "bin");
  }
  return null;
}

function freePort(): number {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
}

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

const shellQuote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;

/** Runs a PostgreSQL binary, as the postgres OS user when we are root (initdb refuses root). */
function runPg(bin: string, args: string[]): { ok: boolean; out: string } {
  const quoted = [bin, ...args].map(shellQuote).join(" ");
  const r = isRoot ? spawnSync("su", ["postgres", "-s", "/bin/sh", "-c", quoted], { encoding: "utf8" }) : spawnSync(bin, args, { encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/**
 * Stops the server and removes its folder once this process is gone, however it ends: a parallel test
 * worker (`bun test --parallel`) is ended without running its exit handlers, which left servers running.
 * A shell in its own session (setsid) polls this process's pid.
 */
function watchdog(bin: string, data: string, dir: string): { stop(): void } {
  const stop = [join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"].map(shellQuote).join(" ");
  const asOwner = isRoot ? `su postgres -s /bin/sh -c ${shellQuote(stop)}` : stop;
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${asOwner} >/dev/null 2>&1; rm -rf ${shellQuote(dir)}`;
  const proc = Bun.spawn(["setsid", "sh", "-c", script], { stdin: "ignore", stdout: "ignore", stderr: "ignore" });
  proc.unref();
  return { stop: () => proc.kill() };
}

export interface PostgresServer {
  /** Admin URL (database `postgres`). */
  url: string;
  port: number;
  stop(): void;
}

/** Starts a fresh PostgreSQL cluster on a free port (a few seconds), tuned for tests (no fsync). */
export function startPostgres(): PostgresServer {
  const bin = postgresBinDir();
  if (!bin) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)");
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-pg-"));
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  if (isRoot) spawnSync("chown", ["postgres:postgres", dir]);
  const init = runPg(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]);
  if (!init.ok) throw new Error(`initdb failed: ${init.out}`);
  const port = freePort();
  const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400 -c shared_buffers=128MB`;
  const start = runPg(join(bin, "pg_ctl"), ["-D", data, "-o", opts, "-l", join(dir, "log"), "-w", "-t", "60", "start"]);
  if (!start.ok) throw new Error(`pg_ctl start failed: ${start.out}`);
  const guard = watchdog(bin, data, dir);
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop() {
      if (stopped) return;
      stopped = true;
      guard.stop();
      runPg(join(bin, "pg_ctl"), ["-D", data, "-m", "immediate", "-w", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let shared: { admin: string; server: PostgresServer | null } | null = null;

/** The admin URL of the suite's server: MAILSVC_TEST_PG_URL, or one started now and stopped at exit. */
export function sharedPostgres(): string {
  if (shared) return shared.admin;
  const given = process.env.MAILSVC_TEST_PG_URL;
  if (given) {
    shared = { admin: given, server: null };
  } else {
    const server = startPostgres();
    process.on("exit", () => server.stop());
    shared = { admin: server.url, server };
  }
  return shared.admin;
}

function withDatabase(admin: string, name: string): string {
  const u = new URL(admin);
  u.pathname = `/${name}`;
  return u.toString();
}

let counter = 0;
const known = new Set<string>();
let template: Promise<string> | null = null;

/** A migrated database new test databases are copied from (CREATE DATABASE … TEMPLATE: no migration per server). */
function migratedTemplate(admin: string): Promise<string> {
  template ??= (async () => {
    const name = `tpl_${process.pid}`;
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.query(`CREATE DATABASE "${name}"`);
    } finally {
      await client.end();
    }
    const { migratePostgres } = await import("../../src/db/migrate");
    const pool = new pg.Pool({ connectionString: withDatabase(admin, name), max: 1 });
    try {
      await migratePostgres(pool);
    } finally {
      await pool.end();
    }
    return name;
  })();
  return template;
}

/**
 * A database URL for one test server. The same `key` (a SQLite path a test chose, for restarts) gives
 * the same database; without a key, a fresh empty one.
 */
export async function testDatabaseUrl(key?: string): Promise<string> {
  const admin = sharedPostgres();
  const name = key
    ? `t_${createHash("sha256").update(key).digest("hex").slice(0, 24)}`
    : `t_${process.pid}_${Date.now().toString(36)}_${++counter}`;
  if (!known.has(name)) {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
      if (!exists.rowCount) await client.query(`CREATE DATABASE "${name}" TEMPLATE "${await migratedTemplate(admin)}"`);
    } finally {
      await client.end();
    }
    known.add(name);
  }
  return withDatabase(admin, name);
}

/** Drops a test database (closing its other connections first). */
export async function dropTestDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  const client = new pg.Client({ connectionString: sharedPostgres() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    known.delete(name);
  } finally {
    await client.end();
  }
}

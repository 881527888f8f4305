#!/usr/bin/env bun
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { ConfigError, loadConfig, OPTIONS, parseArgv, type Config } from "./config";
import { backupSqlite, openDatabase } from "./db";
import { redactUrl } from "./db/url";
import { MigrationError, migrateStore } from "./db/migrate";
import { createContext, startService } from "./server";
import { VERSION } from "./version";
import { checkWorkerBuild } from "./mail/message/builder";
import { configWarnings } from "./mail/deliverability/deliverability";
import { createUser } from "./modules/users/service";
import { createProject, viewProject } from "./modules/projects/service";

const HELP = `mailsvc ${VERSION} — self-hosted email delivery and audience service

Usage:
  mailsvc serve                      run the HTTP API, job loop, delivery and (if enabled) inbound SMTP
  mailsvc migrate                    create or upgrade the database, then exit
  mailsvc backup <file>              write a consistent copy of the SQLite file (safe while serving; PostgreSQL: pg_dump)
  mailsvc copy --from <db> --to <db> move a whole installation between a SQLite file and a postgres:// URL
                                     (either way; the target must be new); prints the rows per table
  mailsvc user create --email E --password P [--project NAME] [--sandbox]
                                     create a user (and a project with its keys; --sandbox: a sandbox
                                     project, named NAME or "Sandbox", whose mail is captured, never sent); prints JSON
  mailsvc doctor [--probe-domain D] [--json]
                                     check DNS (A/AAAA, PTR, SPF, every domain's records), outbound port 25
                                     or the relay, the public URL; prints fixes; exit 1 on a failure
  mailsvc selfcheck                  build a test message in the message-building worker; exit 1 if it cannot
                                     (also prints whether DKIM signs through the host's OpenSSL 3)
  mailsvc health [--timeout MS]      exit 0 when GET /health on the configured host and port answers 200, else 1
                                     (a container's health check: no shell or curl needed)
  mailsvc --version | --help

Options (each also an environment variable):
${OPTIONS.map((o) => `  ${(o.flag + " <value>").padEnd(32)} ${o.env.padEnd(32)} ${o.help}`).join("\n")}
`;

function fail(msg: string, code = 1): never {
  process.stderr.write(`mailsvc: ${msg}\n`);
  process.exit(code);
}

async function serve(config: Config) {
  const svc = await startService(config);
  svc.ctx.log.info("mailsvc listening", { url: `http://${config.host}:${svc.port}`, db: resolve(config.db), version: VERSION });
  for (const w of configWarnings(svc.ctx.config)) svc.ctx.log.warn(`WARNING: ${w.message}`, { code: w.code, fix: w.fix });
  svc.ctx.log.flush();
  let shuttingDown = false;
  const shutdown = async (signal: string) => {
    if (shuttingDown) return;
    shuttingDown = true;
    svc.ctx.log.info("shutting down", { signal });
    await svc.stop();
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

function backup(config: Config, target: string | undefined) {
  if (config.databaseUrl) fail("backup copies the SQLite file; on PostgreSQL use pg_dump (docs/operations.md \"Backups\" and \"PostgreSQL\"), e.g. pg_dump --format=custom --file mailsvc.dump \"$MAILSVC_DATABASE_URL\"", 2);
  if (!target) fail("usage: mailsvc backup <file>");
  const out = resolve(target);
  if (!existsSync(config.db)) fail(`database ${config.db} does not exist`);
  mkdirSync(dirname(out), { recursive: true });
  if (existsSync(out)) rmSync(out);
  backupSqlite(config.db, out);
  process.stdout.write(JSON.stringify({ backup: out }) + "\n");
}

async function userCreate(config: Config, flags: Record<string, string>) {
  const email = flags["--email"];
  const password = flags["--password"];
  if (!email || !password) fail("usage: mailsvc user create --email E --password P [--project NAME] [--sandbox]");
  if (password.length < 8) fail("password must be at least 8 characters");
  const ctx = await createContext(config, { log: { info() {}, warn() {}, error() {}, line() {}, json() {}, flush() {}, close() {} } });
  try {
    const user = await createUser(ctx, { email, password });
    const out: Record<string, unknown> = { user: { id: user.id, email: user.email } };
    // --sandbox (also the MAILSVC_SANDBOX option, harmless here): the first project is a sandbox.
    const sandbox = /^(1|true|yes|on)$/i.test(flags["--sandbox"] ?? "");
    const name = flags["--project"] ?? (sandbox ? "Sandbox" : undefined);
    if (name) out.project = viewProject(await createProject(ctx, user.id, name, { sandbox }), "OWNER", config.sandbox);
    process.stdout.write(JSON.stringify(out, null, 2) + "\n");
  } catch (e) {
    fail((e as Error).message);
  } finally {
    await ctx.store.close();
  }
}

/** GET /health on this configuration's listener: exit 0 on a 200 answer, 1 otherwise (or after the timeout). */
async function health(config: Config, timeoutFlag: string | undefined) {
  const timeoutMs = timeoutFlag === undefined ? 5000 : Number(timeoutFlag);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) fail(`--timeout must be a positive number of milliseconds, got "${timeoutFlag}"`, 2);
  // A wildcard listen address is reached on loopback.
  const host = config.host === "0.0.0.0" || config.host === "" ? "127.0.0.1" : config.host === "::" ? "::1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}/health`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    if (res.status === 200) {
      process.stdout.write(JSON.stringify({ url, status: res.status }) + "\n");
      process.exit(0);
    }
    fail(`${url} answered ${res.status}`);
  } catch (e) {
    fail(`${url}: ${(e as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (e as Error).message}`);
  }
}

/** Flags of one command, beside the configuration options every command takes. */
const COMMAND_FLAGS: Record<string, readonly string[]> = {
  user: ["--email", "--password", "--project"],
  doctor: ["--probe-domain", "--timeout", "--json"],
  copy: ["--from", "--to"],
  health: ["--timeout"],
};

async function main() {
  const { positional, flags } = parseArgv(process.argv.slice(2));
  // A mistyped flag (say `--bd data.db`) must not run the command on the defaults.
  const known = new Set(["--version", "--help", ...OPTIONS.map((o) => o.flag), ...(COMMAND_FLAGS[positional[0] ?? ""] ?? [])]);
  const unknown = Object.keys(flags).filter((f) => !known.has(f));
  if (unknown.length) fail(`unknown option ${unknown.map((f) => `"${f}"`).join(", ")}; see mailsvc --help`, 2);
  if (flags["--version"] || positional[0] === "version") {
    process.stdout.write(`mailsvc ${VERSION}\n`);
    return;
  }
  if (flags["--help"] || positional.length === 0 || positional[0] === "help") {
    process.stdout.write(HELP);
    return;
  }
  let config: Config;
  try {
    config = loadConfig(process.env, flags);
  } catch (e) {
    if (e instanceof ConfigError) fail(e.message, 2);
    throw e;
  }
  const [cmd, sub] = positional;
  switch (cmd) {
    case "serve":
      return serve(config);
    case "migrate": {
      const store = openDatabase(config);
      try {
        const applied = await migrateStore(store);
        process.stdout.write(JSON.stringify({ db: config.databaseUrl ? redactUrl(config.databaseUrl) : resolve(config.db), applied }) + "\n");
      } catch (e) {
        if (e instanceof MigrationError) fail(e.message, 2);
        throw e;
      } finally {
        await store.close();
      }
      return;
    }
    case "backup":
      return backup(config, positional[1]);
    case "copy": {
      const from = flags["--from"];
      const to = flags["--to"];
      if (!from || !to) fail("usage: mailsvc copy --from <sqlite file | postgres://…> --to <sqlite file | postgres://…>", 2);
      const { copyInstallation, CopyError } = await import("./db/copy");
      try {
        const report = await copyInstallation(from, to, { log: (l) => process.stderr.write(`copied ${l}\n`) });
        process.stdout.write(JSON.stringify({ from: report.from, to: report.to, rows: report.rows, tables: Object.fromEntries(report.tables.map((t) => [t.table, t.target])) }, null, 2) + "\n");
      } catch (e) {
        if (e instanceof CopyError || e instanceof MigrationError) fail(e.message, 2);
        throw e;
      }
      return;
    }
    case "doctor": {
      const { runDoctor, formatChecks } = await import("./doctor");
      const checks = await runDoctor(config, { probeDomain: flags["--probe-domain"], timeoutMs: flags["--timeout"] ? Number(flags["--timeout"]) : undefined });
      process.stdout.write(flags["--json"] ? JSON.stringify({ checks }, null, 2) + "\n" : formatChecks(checks));
      process.exit(checks.some((c) => c.status === "fail") ? 1 : 0);
    }
    case "selfcheck": {
      const errors: string[] = [];
      const log = { info() {}, warn: (m: string) => errors.push(m), error: (m: string, f?: Record<string, unknown>) => errors.push(`${m} ${JSON.stringify(f ?? {})}`), line() {}, json() {}, flush() {}, close() {} };
      const r = await checkWorkerBuild(log);
      // Whether DKIM signs through the host's OpenSSL 3 (libcrypto.so.3); without it Bun's WebCrypto signs (slower).
      const { openSsl } = await import("./mail/dkim/openssl");
      process.stdout.write(JSON.stringify({ ...r, dkimOpenssl: openSsl() !== null, errors }) + "\n");
      if (r.builtIn !== "worker") process.exit(1);
      return;
    }
    case "health":
      return health(config, flags["--timeout"]);
    case "user":
      if (sub === "create") return userCreate(config, flags);
      fail("usage: mailsvc user create --email E --password P [--project NAME] [--sandbox]");
    default:
      fail(`unknown command "${cmd}"; see mailsvc --help`);
  }
}

main().catch((e) => fail(String(e?.stack ?? e)));

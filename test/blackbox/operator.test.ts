// Black-box, as an operator runs it: `mailsvc user create`, then `mailsvc serve` configured only through
// MAILSVC_* environment variables (DNS servers, hostname, rate limit, disabled signups), driven over HTTP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publishRecords, type DomainView } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { TEST_ENGINE } from "../support/postgres";
import { engineEnv, makeApi, spawnServer, startServer, type SpawnedServer } from "../support/server";
import { cookieOf, expectEnvelope, expectOk } from "./support";

const MAIN = join(import.meta.dir, "../../src/main.ts");
type CliResult = { code: number | null; out: string; err: string };
const cli = (args: string[], env: Record<string, string> = {}): CliResult => {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { env: { ...process.env, ...env } });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
};
/** The same, without blocking: independent CLI runs go in parallel (each costs a process start). */
async function cliAsync(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const p = Bun.spawn([process.execPath, MAIN, ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { code, out, err };
}
let version: CliResult;
let help: CliResult;
let solo: CliResult;

const HOSTNAME = "mx.operator-bb.example";
const RATE = 8;
let dir: string;
let db: string;
let dns: TestDns;
let live: SpawnedServer;
let created: any;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "mailsvc-bb-op-"));
  db = join(dir, "data", "mailsvc.db");
  dns = await startDns();
  const r = cli(["user", "create", "--email", "op@operator-bb.example", "--password", "operator password", "--project", "Ops"], await engineEnv({ MAILSVC_DB: db }));
  if (r.code !== 0) throw new Error(`user create failed: ${r.err}`);
  created = JSON.parse(r.out);
  const other = join(dir, "other.db");
  const side = Promise.all([
    cliAsync(["--version"]),
    cliAsync(["--help"]),
    cliAsync(["user", "create", "--email", "solo@operator-bb.example", "--password", "long enough"], await engineEnv({ MAILSVC_DB: other })),
  ]);
  live = await spawnServer({
    MAILSVC_DB: db,
    MAILSVC_DNS_SERVERS: dns.server,
    MAILSVC_HOSTNAME: HOSTNAME,
    MAILSVC_RATE_LIMIT: String(RATE),
    MAILSVC_DISABLE_SIGNUPS: "true",
    MAILSVC_RETRY_SCHEDULE: "1s,2s",
    MAILSVC_PUBLIC_URL: "https://mail.operator-bb.example",
  });
  [version, help, solo] = await side;
});
afterAll(async () => {
  if (live && live.proc.exitCode === null) await live.kill("SIGTERM");
  await dns.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("mailsvc CLI", () => {
  test("--version prints the version that GET /config reports", async () => {
    const r = version;
    expect(r.code).toBe(0);
    const cfg = await makeApi(live.url)("/config");
    expect(r.out).toContain(cfg.body.version);
  });

  test("--help lists the commands", () => {
    const r = help;
    expect(r.code).toBe(0);
    for (const c of ["serve", "migrate", "backup", "user create"]) expect(r.out).toContain(c);
  });

  test("user create --project prints the user and the project with its keys as JSON", () => {
    expect(created.user.email).toBe("op@operator-bb.example");
    expect(typeof created.user.id).toBe("string");
    expect(created.project.name).toBe("Ops");
    expect(created.project.public).toMatch(/^pk_/);
    expect(created.project.secret).toMatch(/^sk_/);
    expect(typeof created.project.id).toBe("string");
  });

  test("user create without --project prints only the user; a taken email or a short password fails", async () => {
    const other = join(dir, "other.db");
    const r = solo;
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.user.email).toBe("solo@operator-bb.example");
    expect(out.project).toBeUndefined();
    const [taken, short] = await Promise.all([
      cliAsync(["user", "create", "--email", "solo@operator-bb.example", "--password", "long enough"], await engineEnv({ MAILSVC_DB: other })),
      cliAsync(["user", "create", "--email", "short@operator-bb.example", "--password", "short"], await engineEnv({ MAILSVC_DB: other })),
    ]);
    expect(taken.code).not.toBe(0);
    expect(short.code).not.toBe(0);
  });
});

describe("mailsvc serve configured by environment", () => {
  test("the CLI user logs in; the CLI project's keys work; signups are disabled", async () => {
    const api = makeApi(live.url);
    const login = await api("/auth/login", { body: { email: "op@operator-bb.example", password: "operator password" } });
    expect(login.status).toBe(200);
    const cookie = cookieOf(login, "token")!.pair;
    const projects = await api("/users/@me/projects", { cookie });
    expect(projects.body.map((p: any) => p.id)).toContain(created.project.id);
    expectEnvelope(await api("/auth/signup", { body: { email: "new@operator-bb.example", password: "long enough" } }), 403);
    expect((await api("/config")).body.features.signups).toBe(false);
  });

  test("MAILSVC_HOSTNAME is the bounce MX target; MAILSVC_DNS_SERVERS is where verification looks", async () => {
    const api = makeApi(live.url);
    const key = created.project.secret;
    const added = await api<DomainView>("/domains", { key, body: { projectId: created.project.id, domain: "send.operator-bb.example" } });
    expectOk(added);
    const mx = added.body.records.find((r) => r.purpose === "return-path")!;
    expect(mx.value.replace(/\.$/, "")).toBe(HOSTNAME);
    publishRecords(dns, added.body);
    const v = await api<DomainView>(`/domains/${added.body.id}/verify`, { key });
    expect(v.body.status).toBe("VERIFIED");
    expect(v.body.records.every((r) => r.status === "VERIFIED")).toBe(true);
  });

  test("MAILSVC_RATE_LIMIT caps requests per minute per project (429 with Retry-After)", async () => {
    const api = makeApi(live.url);
    const key = created.project.secret;
    let first429 = -1;
    let limitHeader: string | null = null;
    for (let i = 0; i < RATE + 2; i++) {
      const res = await api("/templates", { key });
      limitHeader ??= res.headers.get("ratelimit-limit");
      if (res.status === 429) {
        first429 = i;
        expectEnvelope(res, 429, "RATE_LIMIT_EXCEEDED");
        expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
        break;
      }
      expect(res.status).toBe(200);
    }
    expect(limitHeader).toBe(String(RATE));
    // Earlier tests in this file used some of the minute's budget; the cap is hit within RATE requests.
    expect(first429).toBeGreaterThanOrEqual(0);
    expect(first429).toBeLessThanOrEqual(RATE);
  });
});

// `backup` copies the SQLite file; on PostgreSQL it answers that pg_dump is the way (test/data-layer/).
describe.skipIf(TEST_ENGINE === "postgres")("backup (decisions.md: everything lives in one file)", () => {
  test("`mailsvc backup <file>` while serving: a server on the copy has the project, its keys and the DKIM key", async () => {
    const out = join(dir, "backup", "copy.db");
    const r = cli(["backup", out], { MAILSVC_DB: db });
    expect(r.code).toBe(0);
    expect(existsSync(out)).toBe(true);
    const copy = await startServer({ dbPath: out, config: { dnsServers: [dns.server], hostname: HOSTNAME } });
    try {
      const key = created.project.secret;
      const domains = await copy.api<DomainView[]>(`/domains/project/${created.project.id}`, { key });
      expect(domains.status).toBe(200);
      const d = domains.body.find((x) => x.domain === "send.operator-bb.example")!;
      expect(d.status).toBe("VERIFIED");
      // The DKIM key came along: the records published for the original still verify the copy.
      expect((await copy.api<DomainView>(`/domains/${d.id}/verify`, { key })).body.status).toBe("VERIFIED");
    } finally {
      await copy.close();
    }
  });

  test("after SIGTERM the stopped .db file alone is complete", async () => {
    await live.kill("SIGTERM");
    const wal = db + "-wal";
    expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
    const lone = join(dir, "lone", "mailsvc.db");
    rmSync(join(dir, "lone"), { recursive: true, force: true });
    mkdirSync(join(dir, "lone"));
    copyFileSync(db, lone);
    const copy = await startServer({ dbPath: lone, config: { dnsServers: [dns.server] } });
    try {
      const res = await copy.api<DomainView[]>(`/domains/project/${created.project.id}`, { key: created.project.secret });
      expect(res.status).toBe(200);
      expect(res.body.map((x) => x.domain)).toContain("send.operator-bb.example");
    } finally {
      await copy.close();
    }
  });
});

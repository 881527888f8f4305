// What holds across three instances (issue 32): three `mailsvc serve` processes (distinct
// MAILSVC_INSTANCE_IDs) on one PostgreSQL database, one DNS server, one SMTP sink.
// 1. a scheduled campaign and every periodic task run once (counted from the rows and the logs);
// 2. MAILSVC_SEND_RATE=50 is shared: the sink sees at most 50 a second in total over 10 s windows (10%);
// 3. a billing cap and an Idempotency-Key hold under concurrent requests spread over the three;
// 4. /v1/track on the same contacts at once through the three: one contact per address, every event kept.
// SQLite: skipped, one instance per SQLite file (decisions.md "PostgreSQL and many instances").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { uploadCsv } from "../audience/support";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from "../support/postgres";
import { createAccount, makeApi, spawnServer, type Account, type Api, type SpawnedServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";

const RATE = 50;
const SWEEP_MS = 2_000;
const RCPT = "inst.test";
const SENDER = "sender.test";

const dir = mkdtempSync(join(tmpdir(), "mailsvc-shared-"));
const dbPath = join(dir, "shared.db");
let dns: TestDns;
let sink: SmtpSink;
let servers: SpawnedServer[] = [];
let apis: Api[] = [];
let acct: Account;
let db: pg.Client;
const startedAt = Date.now();

/** Request i goes to instance i mod 3. */
const api = (i: number) => apis[i % apis.length]!;
const sql = async <T = any>(text: string, params: unknown[] = []) => (await db.query(text, params)).rows as T[];
/** Every structured line each instance wrote, by instance. */
const logLines = () => servers.map((s) => s.output().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l)));

// One instance per SQLite file: nothing to share there.
describe.skipIf(TEST_ENGINE !== "postgres")("three instances on one PostgreSQL database", () => {
  beforeAll(async () => {
    dns = await startDns();
    dns.mailDomain(RCPT);
    sink = await startSmtpSink();
    const env = (id: string) => ({
      MAILSVC_DB: dbPath,
      MAILSVC_DNS_SERVERS: dns.server,
      MAILSVC_MX_PORT: String(sink.port),
      MAILSVC_HOSTNAME: "mailsvc.shared",
      MAILSVC_RATE_LIMIT: "1000000",
      MAILSVC_INSTANCE_ID: id,
      MAILSVC_SEND_RATE: String(RATE),
      MAILSVC_SEGMENT_SWEEP_INTERVAL: `${SWEEP_MS}ms`,
      MAILSVC_DOMAIN_CHECK_INTERVAL: `${SWEEP_MS}ms`,
    });
    // One after the other: the first migrates, the others find the schema in place.
    for (const id of ["shared-1", "shared-2", "shared-3"]) servers.push(await spawnServer(env(id), 30_000));
    apis = servers.map((s) => makeApi(s.url));
    acct = await createAccount(api(0));
    await addVerifiedDomain(api(0), dns, acct, SENDER);
    db = new pg.Client({ connectionString: await testDatabaseUrl(dbPath) });
    await db.connect();
  }, 60_000);

  afterAll(async () => {
    await db?.end().catch(() => {});
    for (const s of servers) await s.kill();
    await sink?.close();
    await dns?.close();
    if (servers.length) await dropTestDatabase(await testDatabaseUrl(dbPath)).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    console.log(`shared.test.ts: ${((Date.now() - startedAt) / 1000).toFixed(1)} s with three instances`);
  });

  async function importContacts(emails: string[]) {
    const up = await uploadCsv(api(1), acct.secretKey, ["email", ...emails].join("\n"));
    expect(up.status).toBe(202);
    const state = async () => (await api(2)(`/contacts/import/${up.body.jobId}`, { key: acct.secretKey })).body.state;
    await waitFor(state, { until: (s) => s === "completed", intervalMs: 50, timeoutMs: 30_000, what: "the import to complete" });
  }

  async function campaign(name: string) {
    const r = await api(0)("/campaigns", { key: acct.secretKey, body: { name, subject: "Hi", body: "<p>Hello</p>", from: `news@${SENDER}`, audienceType: "ALL" } });
    expect(r.status).toBe(201);
    return r.body.data.id as string;
  }

  const campaignOf = (id: string, i = 0) => api(i)(`/campaigns/${id}`, { key: acct.secretKey }).then((r) => r.body);

  /** Sink copies per recipient. */
  function copies(recipients: string[]) {
    const want = new Set(recipients);
    const n = new Map<string, number>();
    for (const m of sink.messages) for (const t of m.to) if (want.has(t)) n.set(t, (n.get(t) ?? 0) + 1);
    return n;
  }

  test("a scheduled campaign and every periodic task run once with three instances up (rows and logs)", async () => {
    const recipients = Array.from({ length: 30 }, (_, i) => `sched${i}@${RCPT}`);
    await importContacts(recipients);
    const id = await campaign("Scheduled");
    const scheduledFor = new Date(Date.now() + 3_000).toISOString();
    const r = await api(1)(`/campaigns/${id}/send`, { key: acct.secretKey, body: { scheduledFor } });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe("SCHEDULED");
    const sent = await waitFor(() => campaignOf(id, 2), { until: (c) => c.status === "SENT", intervalMs: 100, timeoutMs: 30_000, what: "the scheduled campaign SENT" });
    expect(sent.totalRecipients).toBe(30);
    await waitFor(async () => copies(recipients).size, { until: (n) => n === 30, timeoutMs: 15_000, what: "30 recipients reached" });

    // Rows: one start job, run once; one email row per recipient; each recipient one message.
    const starts = await sql("SELECT id, state, attempts FROM jobs WHERE type = 'campaign:start' AND payload LIKE $1", [`%${id}%`]);
    expect(starts.map((j) => ({ state: j.state, attempts: Number(j.attempts) }))).toEqual([{ state: "completed", attempts: 1 }]);
    const fanouts = await sql("SELECT state FROM jobs WHERE type = 'campaign:fanout' AND payload LIKE $1", [`%${id}%`]);
    expect(fanouts.map((j) => j.state)).toEqual(["completed"]);
    const perRecipient = await sql("SELECT to_email, count(*)::int AS n FROM emails WHERE campaign_id = $1 GROUP BY to_email", [id]);
    expect(perRecipient.length).toBe(30);
    expect(perRecipient.every((row) => row.n === 1)).toBe(true);
    expect([...copies(recipients).values()].every((n) => n === 1)).toBe(true);

    // Periodic tasks (segment sweep, domain checks every 2 s here): each due time ran once. By now
    // each has run a few times; a run is a completed job `schedule:<name>`, one per due time, and
    // exactly one next run waits.
    await Bun.sleep(2 * SWEEP_MS);
    const tasks = ["segment-sweep", "domains.verify"];
    const done = new Map<string, string[]>();
    for (const name of tasks) {
      const rows = await sql("SELECT id, state, attempts, run_at FROM jobs WHERE type = $1 ORDER BY run_at", [`schedule:${name}`]);
      const completed = rows.filter((j) => j.state === "completed");
      expect(completed.length).toBeGreaterThanOrEqual(3);
      expect(completed.every((j) => Number(j.attempts) === 1)).toBe(true);
      expect(new Set(completed.map((j) => Number(j.run_at))).size).toBe(completed.length);
      // Consecutive runs are at least the interval apart (never two runs for one due time).
      for (let i = 1; i < completed.length; i++) expect(Number(completed[i]!.run_at) - Number(completed[i - 1]!.run_at)).toBeGreaterThanOrEqual(SWEEP_MS);
      expect(rows.filter((j) => j.state === "waiting" || j.state === "active").length).toBe(1);
      done.set(name, completed.map((j) => j.id));
    }
    // Logs: every completed run is logged once, by one instance; no run logged twice; no job failed.
    await Bun.sleep(300); // the loggers flush every 100 ms
    const lines = logLines();
    for (const name of tasks) {
      const ran = lines.flatMap((ls, i) => ls.filter((l) => l.msg === "periodic task ran" && l.name === name).map((l) => ({ job: l.job as string, by: i })));
      expect(new Set(ran.map((r) => r.job)).size).toBe(ran.length);
      const logged = new Set(ran.map((r) => r.job));
      expect(done.get(name)!.filter((j) => !logged.has(j))).toEqual([]);
      const by = [0, 1, 2].map((i) => ran.filter((r) => r.by === i).length);
      console.log(`periodic ${name}: ${ran.length} runs, by instance ${by.join("/")}`);
    }
    // The hourly cron task (purge-idempotency-keys) has the same once-per-due-time claim (periodic_tasks): a
    // due time claimed at most once, by one instance (in-process, with a per-second cron: leases.test.ts).
    for (const row of await sql("SELECT name, run_by FROM periodic_tasks")) expect(["shared-1", "shared-2", "shared-3"]).toContain(row.run_by);
    for (const ls of lines) expect(ls.filter((l) => l.msg === "job failed" || l.level === "error")).toEqual([]);
  }, 60_000);

  test(`MAILSVC_SEND_RATE=${RATE} with three instances sending one campaign: the sink sees at most ${RATE} a second in total over 10 s windows (10% tolerance)`, async () => {
    const N = 1_200;
    const recipients = Array.from({ length: N }, (_, i) => `rate${i}@${RCPT}`);
    // The project's audience: the contacts of the tests before plus these.
    const before = (await sql("SELECT count(*)::int AS n FROM contacts WHERE project_id = $1", [acct.projectId]))[0].n as number;
    await importContacts(recipients);
    const id = await campaign("Rate");
    expect((await api(2)(`/campaigns/${id}/send`, { key: acct.secretKey, method: "POST" })).status).toBe(200);
    await waitFor(async () => copies(recipients).size, { until: (n) => n === N, intervalMs: 200, timeoutMs: 60_000, what: `${N} recipients reached` });
    const done = await waitFor(() => campaignOf(id, 1), { until: (c) => c.status === "SENT", intervalMs: 100, timeoutMs: 15_000, what: "the campaign SENT" });
    expect(done.totalRecipients).toBe(N + before);
    const mine = sink.messages.filter((m) => m.to.some((t) => t.startsWith("rate")));
    expect(mine.length).toBe(N);
    expect([...copies(recipients).values()].every((n) => n === 1)).toBe(true);

    // The budget: what the instances claimed in each one-second window of the project (send_rate_windows,
    // the shared budget on PostgreSQL) never passes the rate, and together they took at least every email.
    const grants = await sql<{ window_start: string; sent: number }>("SELECT window_start, sent::int AS sent FROM send_rate_windows WHERE project_id = $1 ORDER BY window_start", [acct.projectId]);
    expect(grants.every((g) => g.sent <= RATE)).toBe(true);
    expect(grants.reduce((a, g) => a + g.sent, 0)).toBeGreaterThanOrEqual(N);

    // What the sink sees, by 10 s windows from the first message: at most the rate, 10% tolerance. The
    // budget is taken as each message is handed to the dispatcher (shared-rate.ts), not at the claim.
    const at = mine.map((m) => m.receivedAt).sort((a, b) => a - b);
    const first = at[0]!;
    const last = at.at(-1)!;
    const windows: number[] = [];
    for (let w = first; w + 10_000 <= last; w += 10_000) windows.push(at.filter((t) => t >= w && t < w + 10_000).length);
    const perSecond: number[] = [];
    for (const t of at) perSecond[Math.floor((t - first) / 1000)] = (perSecond[Math.floor((t - first) / 1000)] ?? 0) + 1;
    const seconds = (last - first) / 1000;
    const over = windows.filter((n) => n > RATE * 10 * 1.1).length;
    console.log(`send rate: ${N} messages in ${seconds.toFixed(1)} s (${(N / seconds).toFixed(1)}/s, rate ${RATE}/s); 10 s windows ${windows.join(", ")} (bar ${RATE * 10} + 10%: ${over ? `${over} over` : "met"}); busiest one-second budget ${Math.max(...grants.map((g) => g.sent))} of ${RATE}; per second at the sink: ${[...perSecond].map((n) => n ?? 0).join(" ")}`);
    expect(windows.length).toBeGreaterThanOrEqual(2);
    expect(windows.filter((n) => n > RATE * 10 * 1.1)).toEqual([]);
    expect(N / seconds).toBeLessThan(RATE * 1.1);
  }, 90_000);

  test("a billing cap and an Idempotency-Key hold under concurrent requests spread over the three instances", async () => {
    const K = 12;
    const M = 24;
    const limits = (body: Record<string, number | null>) => api(0)(`/users/@me/projects/${acct.projectId}/billing-limits`, { method: "PUT", cookie: acct.cookie, body });
    const used = async () => (await api(1)(`/users/@me/projects/${acct.projectId}/billing-consumption`, { cookie: acct.cookie })).body.transactional.used as number;
    const before = await used();
    expect((await limits({ transactional: before + K })).status).toBe(200);

    const send = (i: number, to: string, headers?: Record<string, string>) =>
      api(i)("/v1/send", { key: acct.secretKey, headers, body: { to, from: `hello@${SENDER}`, subject: "Cap", body: "<p>hi</p>" } });
    const capped = Array.from({ length: K + M }, (_, i) => `cap${i}@${RCPT}`);
    const answers = await Promise.all(capped.map((to, i) => send(i, to)));
    const ok = answers.filter((r) => r.status === 200);
    const refused = answers.filter((r) => r.status !== 200);
    expect(ok.length).toBe(K);
    expect(refused.length).toBe(M);
    for (const r of refused) {
      expect(r.status).toBe(402);
      expect(r.body.error.code).toBe("BILLING_LIMIT_EXCEEDED");
      expect(r.body.error.details).toMatchObject({ category: "transactional", limit: before + K, requested: 1 });
    }
    expect(await used()).toBe(before + K);
    await waitFor(async () => [...copies(capped).values()].reduce((a, b) => a + b, 0), { until: (n) => n === K, timeoutMs: 15_000, what: `${K} capped sends delivered` });
    await Bun.sleep(500);
    expect([...copies(capped).values()].reduce((a, b) => a + b, 0)).toBe(K);
    const rows = await sql("SELECT count(*)::int AS n FROM emails WHERE to_email LIKE 'cap%'");
    expect(rows[0].n).toBe(K);

    // The same key fired at all three at once, many times: one performs, every other gets 409.
    expect((await limits({ transactional: null })).status).toBe(200);
    const KEYS = 4;
    const COPIES = 15;
    const fired = await Promise.all(
      Array.from({ length: KEYS * COPIES }, (_, i) => {
        const k = i % KEYS;
        return send(i, `idem${k}@${RCPT}`, { "idempotency-key": `shared-key-${k}` }).then((r) => ({ k, r }));
      }),
    );
    for (let k = 0; k < KEYS; k++) {
      const mine = fired.filter((f) => f.k === k).map((f) => f.r);
      expect(mine.filter((r) => r.status === 200).length).toBe(1);
      const others = mine.filter((r) => r.status !== 200);
      expect(others.length).toBe(COPIES - 1);
      for (const r of others) {
        expect(r.status).toBe(409);
        expect(r.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
        expect(r.body.error.details).toMatchObject({ key: `shared-key-${k}`, originalRequest: "POST /v1/send" });
      }
    }
    const idem = Array.from({ length: KEYS }, (_, k) => `idem${k}@${RCPT}`);
    await waitFor(async () => copies(idem).size, { until: (n) => n === KEYS, timeoutMs: 15_000, what: "one message per key" });
    await Bun.sleep(500);
    expect([...copies(idem).values()]).toEqual(Array(KEYS).fill(1));
    expect((await sql("SELECT count(*)::int AS n FROM emails WHERE to_email LIKE 'idem%'"))[0].n).toBe(KEYS);
  }, 60_000);

  test("/v1/track on the same contacts at once through the three instances: one contact per address, every event kept", async () => {
    const C = 40;
    const PER = 6;
    // Every address tracked PER times, the requests shuffled and spread round-robin over the instances.
    const reqs = Array.from({ length: C * PER }, (_, i) => `tracked${i % C}@${RCPT}`).sort(() => Math.random() - 0.5);
    const t = Date.now();
    const answers = await Promise.all(reqs.map((email, i) => api(i)("/v1/track", { key: acct.publicKey, body: { email, event: "shared.tick", data: { n: i } } }).then((r) => ({ email, r }))));
    const ms = Date.now() - t;
    expect(answers.filter((a) => a.r.status !== 200).map((a) => a.r.text)).toEqual([]);
    // One contact per address, whichever instance wrote it first.
    const ids = new Map<string, Set<string>>();
    for (const { email, r } of answers) ids.set(email, (ids.get(email) ?? new Set()).add(r.body.data.contact));
    expect([...ids.values()].every((s) => s.size === 1)).toBe(true);
    const contacts = await sql("SELECT count(*)::int AS n FROM contacts WHERE email LIKE 'tracked%'");
    expect(contacts[0].n).toBe(C);
    const events = await sql("SELECT c.email, count(e.id)::int AS n FROM contacts c JOIN events e ON e.contact_id = c.id AND e.name = 'shared.tick' WHERE c.email LIKE 'tracked%' GROUP BY c.email");
    expect(events.length).toBe(C);
    expect(events.every((e) => e.n === PER)).toBe(true);
    console.log(`track: ${C * PER} tracks of ${C} contacts at once over three instances in ${ms} ms`);
  }, 30_000);
});

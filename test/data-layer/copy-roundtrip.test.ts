// `mailsvc copy` end to end: an installation filled through the API on SQLite moves to PostgreSQL
// (the real CLI), the service starts there and finds everything (a DELAY fires once, queued emails
// are delivered once, the scheduled campaign starts), then it moves back to a new SQLite file and
// the two databases hold the same rows. Runs in the SQLite pass of the suite (it starts its own
// PostgreSQL through the harness either way).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../src/clock";
import { openDatabase } from "../../src/db";
import { rawAll } from "../../src/db/raw";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { postgresBinDir, testDatabaseUrl } from "../support/postgres";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { IMAGES } from "../uploads/support";

const RCPT = "rt-rcpt.test";
const SENDER = "rt-sender.test";
const FROM = `news@${SENDER}`;
const MAIN = join(import.meta.dir, "../../src/main.ts");
const HOUR = 3_600_000;

/** The id of a created object (some answers wrap it in `data`). */
const idOf = (r: { body: any }): string => r.body?.data?.id ?? r.body?.id;

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: "utf8", env: { ...process.env, MAILSVC_DB: "", MAILSVC_DATABASE_URL: "" } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Every row of every table, with JSON text parsed (PostgreSQL normalizes jsonb) and in key order. */
async function dump(location: { db: string; databaseUrl?: string }): Promise<Record<string, unknown[]>> {
  const store = openDatabase(location);
  try {
    const tables =
      store.engine === "sqlite"
        ? (await rawAll<{ name: string }>(store.db, "sqlite", "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'")).map((r) => r.name)
        : (await rawAll<{ name: string }>(store.db, "postgres", "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'")).map((r) => r.name);
    const out: Record<string, unknown[]> = {};
    for (const t of tables.sort()) {
      const rows = await rawAll<Record<string, unknown>>(store.db, store.engine, `SELECT * FROM "${t}"`);
      out[t] = rows
        .map((r) => {
          const o: Record<string, unknown> = {};
          for (const k of Object.keys(r).sort()) {
            let v = r[k];
            if (v instanceof Uint8Array) v = Buffer.from(v).toString("base64");
            else if (typeof v === "string" && /^[[{]/.test(v)) {
              try {
                v = JSON.parse(v);
              } catch {}
            }
            o[k] = v;
          }
          return JSON.stringify(o, (_, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : 1))) : x));
        })
        .sort();
    }
    return out;
  } finally {
    await store.close();
  }
}

const skip = !postgresBinDir() ? "no PostgreSQL server binaries (apt-get install postgresql)" : process.env.MAILSVC_TEST_ENGINE === "postgres" ? "runs in the SQLite pass" : null;

describe.skipIf(skip !== null)("mailsvc copy: SQLite -> PostgreSQL -> SQLite", () => {
  let dns: TestDns;
  let sink: SmtpSink;
  let dir: string;
  beforeAll(async () => {
    dns = await startDns();
    dns.mailDomain(RCPT);
    sink = await startSmtpSink();
    dir = mkdtempSync(join(tmpdir(), "mailsvc-copy-"));
  });
  afterAll(async () => {
    await sink.close();
    await dns.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("every object survives, the DELAY fires once, queued mail goes out once, and the copy back is identical", async () => {
    const clock = new ManualClock(Date.UTC(2026, 5, 1, 12));
    const sqlitePath = join(dir, "a.db");
    const config = { dnsServers: [dns.server], mxPort: sink.port, retryScheduleMs: [HOUR, HOUR], allowPrivateWebhooks: true };
    // Queued at the copy: the sink defers these addresses on the first server.
    sink.onRcpt = (rcpt) => (rcpt.startsWith("later") ? { code: 451, message: "4.7.1 try later" } : undefined);

    // ---- 1. fill SQLite through the API ----------------------------------------------------------
    const a: TestServer = await startServer({ clock, dbPath: sqlitePath, config: { ...config, db: sqlitePath } });
    let acct: Account;
    let ids: Record<string, string> = {};
    try {
      acct = await createAccount(a.api, "Round trip");
      await addVerifiedDomain(a.api, dns, acct, SENDER);
      const key = acct.secretKey;
      for (const [i, plan] of ["pro", "free", "pro"].entries()) {
        const r = await a.api("/contacts", { key, body: { email: `c${i}@${RCPT}`, data: { plan, seats: i + 1, tags: ["x", `t${i}`] } } });
        expect(r.status).toBe(201);
      }
      expect((await a.api("/v1/track", { key: acct.publicKey, body: { email: `c0@${RCPT}`, event: "purchase", data: { amount: 42 } } })).status).toBe(200);
      const tpl = await a.api("/templates", { key, body: { name: "Welcome", subject: "Welcome {{plan}}", body: "<p>Hi {{email}}</p>", from: FROM } });
      expect(tpl.status).toBe(201);
      const seg = await a.api("/segments", { key, body: { name: "Pro", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } } });
      expect(seg.status).toBe(201);
      // A sent campaign.
      const sent = await a.api("/campaigns", { key, body: { name: "Sent", subject: "S {{email}}", body: "<p>sent</p>", from: FROM, audienceType: "ALL" } });
      expect((await a.api(`/campaigns/${idOf(sent)}/send`, { method: "POST", key, body: {} })).status).toBe(200);
      await a.drainJobs();
      await waitFor(async () => (await a.api(`/campaigns/${idOf(sent)}`, { key })).body.status, { until: (s) => s === "SENT", what: "the first campaign SENT" });
      // A scheduled campaign (2 h ahead) to the Pro segment.
      const sched = await a.api("/campaigns", { key, body: { name: "Later", subject: "L", body: "<p>later</p>", from: FROM, audienceType: "SEGMENT", segmentId: idOf(seg) } });
      expect((await a.api(`/campaigns/${idOf(sched)}/send`, { method: "POST", key, body: { scheduledFor: new Date(clock.now() + 2 * HOUR).toISOString() } })).status).toBe(200);
      // A workflow: signup -> wait 1 hour -> send the template; one contact enters and waits.
      const wf = await a.api("/workflows", { key, body: { name: "Onboarding", triggerConfig: { eventName: "signup" } } });
      const delay = await a.api(`/workflows/${idOf(wf)}/steps`, { key, body: { type: "DELAY", config: { amount: 1, unit: "hours" } } });
      const mail = await a.api(`/workflows/${idOf(wf)}/steps`, { key, body: { type: "SEND_EMAIL", config: { templateId: idOf(tpl) } } });
      expect((await a.api(`/workflows/${idOf(wf)}/transitions`, { key, body: { fromStepId: idOf(delay), toStepId: idOf(mail) } })).status).toBe(201);
      expect((await a.api(`/workflows/${idOf(wf)}`, { method: "PATCH", key, body: { enabled: true } })).status).toBe(200);
      expect((await a.api("/v1/track", { key: acct.publicKey, body: { email: `flow@${RCPT}`, event: "signup", data: { plan: "trial" } } })).status).toBe(200);
      await a.drainJobs();
      // An upload and a webhook endpoint.
      const f = new FormData();
      f.append("file", new File([IMAGES.png.bytes], "a.png"));
      const up = await a.api("/uploads/image", { method: "POST", key, raw: f });
      expect(up.status).toBe(201);
      const hook = await a.api("/webhook-endpoints", { key, body: { url: "http://127.0.0.1:9/hook", events: ["contact.unsubscribed"] } });
      expect(hook.status).toBe(201);
      // Two transactional emails the sink defers: queued (DEFERRED) at the copy.
      const queued = await a.api("/v1/send", { key, body: { to: [`later1@${RCPT}`, `later2@${RCPT}`], from: FROM, subject: "Queued", body: "<p>q</p>" } });
      expect(queued.status).toBe(200);
      await waitFor(async () => (await a.api(`/emails/${queued.body.data.emails[0].email}`, { key })).body.status, { until: (s) => s === "DEFERRED", what: "the queued email DEFERRED" });
      ids = { seg: idOf(seg), sent: idOf(sent), sched: idOf(sched), wf: idOf(wf), tpl: idOf(tpl), up: up.body.url, q1: queued.body.data.emails[0].email, q2: queued.body.data.emails[1].email };
    } finally {
      await a.close();
    }
    const before = sink.messages.length;

    // ---- 2. copy to PostgreSQL with the CLI ---------------------------------------------------------
    const pgUrl = await testDatabaseUrl(`copy-target-${Date.now()}`);
    const c1 = cli(["copy", "--from", sqlitePath, "--to", pgUrl]);
    expect(c1.err + c1.out).toContain('"rows"');
    expect(c1.code).toBe(0);
    const report = JSON.parse(c1.out);
    expect(report.tables.contacts).toBe(6); // c0-c2, flow, later1, later2
    // A second copy into the same (now full) database is refused.
    const again = cli(["copy", "--from", sqlitePath, "--to", pgUrl]);
    expect(again.code).toBe(2);
    expect(again.err).toContain("not empty");

    // ---- 3. the service on PostgreSQL ---------------------------------------------------------------
    sink.onRcpt = () => undefined;
    const b = await startServer({ clock, config: { ...config, databaseUrl: pgUrl } });
    try {
      const key = acct!.secretKey;
      const contacts = await b.api("/contacts?limit=100", { key });
      expect(contacts.status).toBe(200);
      const byEmail = new Map<string, any>(contacts.body.data.map((c: any) => [c.email, c]));
      expect(byEmail.get(`c1@${RCPT}`).data).toEqual({ plan: "free", seats: 2, tags: ["x", "t1"] });
      expect(contacts.body.total).toBe(byEmail.size);
      expect((await b.api(`/segments/${ids.seg}`, { key })).body).toMatchObject({ trackMembership: true, memberCount: 2 });
      expect((await b.api(`/campaigns/${ids.sent}`, { key })).body.status).toBe("SENT");
      expect((await b.api(`/campaigns/${ids.sched}`, { key })).body.status).toBe("SCHEDULED");
      expect((await b.api(`/templates/${ids.tpl}`, { key })).body.name).toBe("Welcome");
      expect((await b.api("/webhook-endpoints", { key })).body.data.map((e: any) => e.url)).toEqual(["http://127.0.0.1:9/hook"]);
      const upload = await fetch(ids.up!.replace(/^https?:\/\/[^/]+/, b.url));
      expect(upload.status).toBe(200);
      expect(new Uint8Array(await upload.arrayBuffer())).toEqual(new Uint8Array(IMAGES.png.bytes));
      const purchases = await b.api(`/events?name=purchase`, { key });
      expect(purchases.status).toBe(200);
      // Sessions and keys moved with the settings: the account's key works (above) and so does its cookie.
      expect((await b.api("/users/@me", { cookie: acct!.cookie })).status).toBe(200);

      // The queued emails' retry and the DELAY fall due within the hour; the campaign two hours on.
      clock.advance(HOUR + 60_000);
      await b.drainJobs();
      await waitFor(() => sink.messages.length - before, { until: (n) => n >= 3, what: "the queued emails and the workflow email" });
      clock.advance(HOUR);
      await b.drainJobs();
      await waitFor(() => sink.messages.length - before, { until: (n) => n >= 5, what: "the scheduled campaign's two recipients" });
      await waitFor(async () => (await b.api(`/campaigns/${ids.sched}`, { key })).body.status, { until: (s) => s === "SENT", what: "the scheduled campaign SENT" });
      await Bun.sleep(300);
      const after = sink.messages.slice(before).map((m) => m.to.join(","));
      expect(after.sort()).toEqual([`c0@${RCPT}`, `c2@${RCPT}`, `flow@${RCPT}`, `later1@${RCPT}`, `later2@${RCPT}`].sort());
      expect((await b.api(`/emails/${ids.q1}`, { key })).body.status).toBe("DELIVERED");
    } finally {
      await b.close();
    }

    // ---- 4. back to a new SQLite file: the same rows ------------------------------------------------
    const back = join(dir, "back.db");
    const c2 = cli(["copy", "--from", pgUrl, "--to", back]);
    expect(c2.code).toBe(0);
    const [pgRows, sqliteRows] = await Promise.all([dump({ db: "", databaseUrl: pgUrl }), dump({ db: back })]);
    expect(Object.keys(sqliteRows)).toEqual(Object.keys(pgRows));
    for (const t of Object.keys(pgRows)) expect({ table: t, rows: sqliteRows[t] }).toEqual({ table: t, rows: pgRows[t] });
  }, 120_000);
});

// The rollups (migration 011) against the rows they summarise: every window, aligned or not, is
// answered exactly; deletes are subtracted; the migration backfills existing data; field coverage
// follows contact writes; /activity/upcoming is in time order.
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { sql } from "kysely";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate } from "../../src/db/migrate";
import { MIGRATIONS } from "../../src/db/migrations";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

setDefaultTimeout(30_000); // the machine is shared; nothing here asserts timings

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
}, 30_000);
afterAll(() => srv.close(), 30_000);

/** A small deterministic PRNG so a failure can be replayed. */
function rng(seed: number) {
  return () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

async function rawCounts(projectId: string, from: number, toExclusive: number) {
  const r = await sql<{ name: string; n: number }>`
    SELECT name, count(*) AS n FROM events WHERE project_id = ${projectId} AND created_at >= ${from} AND created_at < ${toExclusive}
    GROUP BY name`.execute(srv.ctx.db);
  return Object.fromEntries(r.rows.map((x) => [x.name, Number(x.n)])) as Record<string, number>;
}

describe("window counts", () => {
  test("any window (ms precision, across hours and days) equals a count of the rows; deletes are subtracted", async () => {
    const rand = rng(7);
    const start = srv.clock.now();
    for (let i = 0; i < 160; i++) {
      srv.clock.advance(Math.floor(rand() * 1.5 * HOUR));
      const event = ["view", "signup", "purchase"][Math.floor(rand() * 3)]!;
      const r = await srv.api("/v1/track", { key: acc.publicKey, body: { email: `p${Math.floor(rand() * 20)}@example.com`, event } });
      expect(r.status).toBe(200);
    }
    const end = srv.clock.now();
    // Deletes: a name, and a contact with its events.
    expect((await srv.api("/events/purchase", { key: acc.secretKey, method: "DELETE" })).status).toBe(200);
    const victim = await srv.api("/contacts?limit=1", { key: acc.secretKey });
    expect((await srv.api(`/contacts/${victim.body.data[0].id}`, { key: acc.secretKey, method: "DELETE" })).status).toBe(204); // contact delete: an empty success body (spec)

    const windows: [number, number][] = [
      [start - DAY, end + DAY],
      [start, end],
      [Math.floor(start / DAY) * DAY + DAY, Math.floor(end / DAY) * DAY], // whole days
      [Math.floor(start / HOUR) * HOUR + 5 * HOUR, Math.floor(start / HOUR) * HOUR + 9 * HOUR], // whole hours
    ];
    for (let i = 0; i < 12; i++) {
      const a = start + Math.floor(rand() * (end - start));
      windows.push([a, a + Math.floor(rand() * (end - a))]);
    }
    for (const [from, to] of windows) {
      // /events/stats: [from, to)
      const es = await srv.api(`/events/stats?from=${from}&to=${to}`, { key: acc.secretKey });
      if (from >= to) continue;
      expect(es.status).toBe(200);
      const want = await rawCounts(acc.projectId, from, to);
      const got = Object.fromEntries(es.body.events.map((e: any) => [e.name, e.count]));
      expect(got).toEqual(want);
      expect(es.body.total).toBe(Object.values(want).reduce((n, x) => n + x, 0));
      expect(es.body.daily.reduce((n: number, d: any) => n + d.count, 0)).toBe(es.body.total);
      // /activity/stats and the /activity total: [from, to] inclusive
      const incl = await rawCounts(acc.projectId, from, to + 1);
      const as = await srv.api(`/activity/stats?from=${from}&to=${to}`, { key: acc.secretKey });
      expect(as.body.total).toBe(Object.values(incl).reduce((n, x) => n + x, 0));
      const feed = await srv.api(`/activity?type=event&name=view&from=${from}&to=${to}&limit=1`, { key: acc.secretKey });
      expect(feed.body.total).toBe(incl.view ?? 0);
    }

    const names = await srv.api("/events/names", { key: acc.secretKey });
    const all = await rawCounts(acc.projectId, 0, end + 1);
    expect(Object.fromEntries(names.body.data.map((d: any) => [d.name, d.count]))).toEqual(all);
    expect(names.body.names).not.toContain("purchase");
    const feed = await srv.api("/activity?limit=1", { key: acc.secretKey });
    expect(feed.body.total).toBe(Object.values(all).reduce((n, x) => n + x, 0));
    const types = await srv.api("/activity?type=event&limit=1", { key: acc.secretKey });
    expect(types.body.total).toBe((all.view ?? 0) + (all.signup ?? 0));
  });

  test("a project reset empties its rollups", async () => {
    const other = await createAccount(srv.api, "Reset me");
    await srv.api("/v1/track", { key: other.publicKey, body: { email: "r@example.com", event: "x", data: { plan: "pro" } } });
    const r = await srv.api(`/users/@me/projects/${other.projectId}/reset`, { method: "POST", cookie: other.cookie });
    expect(r.status).toBe(200);
    expect((await srv.api("/events/names", { key: other.secretKey })).body.names).toEqual([]);
    expect((await srv.api("/activity/stats", { key: other.secretKey })).body.total).toBe(0);
    expect((await srv.api("/contacts/fields", { key: other.secretKey })).body.custom).toEqual([]);
  });
});

describe("contact field coverage", () => {
  test("follows creates, type changes, deletes of keys and of contacts", async () => {
    const a = await createAccount(srv.api, "Fields");
    const k = a.secretKey;
    const fields = async () => (await srv.api("/contacts/fields", { key: k })).body.custom;
    const c1 = await srv.api("/contacts", { key: k, body: { email: "f1@example.com", data: { plan: "pro", seats: 3, since: "2024-01-05" } } });
    await srv.api("/contacts", { key: k, body: { email: "f2@example.com", data: { plan: "free", since: "2023-02-01T10:00:00Z" } } });
    await srv.api("/v1/track", { key: a.publicKey, body: { email: "f3@example.com", event: "e", data: { vip: true } } });
    await srv.api("/contacts", { key: k, body: { email: "f4@example.com" } });
    expect(await fields()).toEqual([
      { name: "plan", path: "data.plan", type: "string", coverage: 50 },
      { name: "since", path: "data.since", type: "date", coverage: 50 },
      { name: "seats", path: "data.seats", type: "number", coverage: 25 },
      { name: "vip", path: "data.vip", type: "boolean", coverage: 25 },
    ]);
    // A value of another kind makes the field mixed; a non-date string turns dates into strings.
    await srv.api(`/contacts/${c1.body.id}`, { key: k, method: "PATCH", body: { data: { plan: 7, since: "soon", seats: null } } });
    expect(await fields()).toEqual([
      { name: "plan", path: "data.plan", type: "mixed", coverage: 50 },
      { name: "since", path: "data.since", type: "string", coverage: 50 },
      { name: "vip", path: "data.vip", type: "boolean", coverage: 25 },
    ]);
    expect((await srv.api("/contacts/fields/since", { key: k, method: "DELETE" })).status).toBe(200);
    await srv.api(`/contacts/${c1.body.id}`, { key: k, method: "DELETE" });
    expect(await fields()).toEqual([
      { name: "plan", path: "data.plan", type: "string", coverage: 33.33 },
      { name: "vip", path: "data.vip", type: "boolean", coverage: 33.33 },
    ]);
  });
});

describe("migration 011", () => {
  test("backfills the rollups from existing events and contacts", () => {
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-011-"));
    try {
      const db = new Database(join(dir, "t.db"));
      db.exec("PRAGMA foreign_keys = ON");
      db.exec("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
      const idx = MIGRATIONS.findIndex((m) => m.name === "011_analytics");
      for (const m of MIGRATIONS.slice(0, idx)) {
        db.exec(m.sql);
        db.query("INSERT INTO schema_migrations VALUES (?, 0)").run(m.name);
      }
      db.exec("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p1', 'P', 'pk', 'sk', 0, 0)");
      const t0 = Date.UTC(2026, 0, 1, 22, 30);
      const contacts = [
        ["c1", '{"plan":"pro","n":1}'],
        ["c2", '{"plan":"free","d":"2025-01-01"}'],
        ["c3", "{}"],
      ];
      for (const [id, data] of contacts) db.query("INSERT INTO contacts (id, project_id, email, data, created_at, updated_at) VALUES (?, 'p1', ?, ?, 0, 0)").run(id!, `${id}@x.com`, data!);
      const ins = db.query("INSERT INTO events (id, project_id, contact_id, name, created_at) VALUES (?, 'p1', 'c1', ?, ?)");
      for (let i = 0; i < 10; i++) ins.run(Bun.randomUUIDv7(undefined, t0 + i * 20 * 60_000), i % 3 ? "a" : "b", t0 + i * 20 * 60_000);
      expect(migrate(db)).toContain("011_analytics");
      const daily = db.query("SELECT bucket, name, count FROM event_rollup_daily ORDER BY bucket, name").all();
      expect(daily).toEqual([
        { bucket: Date.UTC(2026, 0, 1), name: "a", count: 3 },
        { bucket: Date.UTC(2026, 0, 1), name: "b", count: 2 },
        { bucket: Date.UTC(2026, 0, 2), name: "a", count: 3 },
        { bucket: Date.UTC(2026, 0, 2), name: "b", count: 2 },
      ]);
      const hourly = db.query("SELECT sum(count) AS n, count(DISTINCT bucket) AS buckets FROM event_rollup_hourly").get();
      expect(hourly).toEqual({ n: 10, buckets: 4 });
      expect(db.query("SELECT name, count FROM event_name_totals ORDER BY name").all()).toEqual([
        { name: "a", count: 6 },
        { name: "b", count: 4 },
      ]);
      expect(db.query("SELECT key, kind, n FROM contact_field_stats ORDER BY key, kind").all()).toEqual([
        { key: "d", kind: "date", n: 1 },
        { key: "n", kind: "integer", n: 1 },
        { key: "plan", kind: "text", n: 2 },
      ]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test("contact-field counts follow every data update: same shape, reordered keys, kind changes, added and removed keys", () => {
  const dir = mkdtempSync(join(tmpdir(), "fields-guard-"));
  try {
    const db = new Database(join(dir, "x.db"), { strict: true });
    migrate(db);
    db.exec("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p1', 'P', 'pk', 'sk', 0, 0)");
    db.query("INSERT INTO contacts (id, project_id, email, data, created_at, updated_at) VALUES ('c1', 'p1', 'a@x.com', ?, 0, 0)").run('{"plan":"pro","n":1,"d":"2025-01-01"}');
    const set = (data: string) => db.query("UPDATE contacts SET data = ? WHERE id = 'c1'").run(data);
    const stats = () => db.query("SELECT key, kind, n FROM contact_field_stats WHERE n > 0 ORDER BY key, kind").all();
    const base = [
      { key: "d", kind: "date", n: 1 },
      { key: "n", kind: "integer", n: 1 },
      { key: "plan", kind: "text", n: 1 },
    ];
    expect(stats()).toEqual(base);
    set('{"plan":"free","n":7,"d":"2026-02-03"}'); // new values, same kinds
    expect(stats()).toEqual(base);
    set('{"d":"2026-02-03","plan":"team","n":9}'); // reordered
    expect(stats()).toEqual(base);
    set('{"d":"soon","plan":"team","n":9.5}'); // date -> text, integer -> real
    expect(stats()).toEqual([
      { key: "d", kind: "text", n: 1 },
      { key: "n", kind: "real", n: 1 },
      { key: "plan", kind: "text", n: 1 },
    ]);
    set('{"plan":"team","extra":[1]}'); // two keys gone, one added
    expect(stats()).toEqual([
      { key: "extra", kind: "array", n: 1 },
      { key: "plan", kind: "text", n: 1 },
    ]);
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("GET /activity/upcoming", () => {
  test("pending retries, queued work and other modules' items, soonest first", async () => {
    const a = await createAccount(srv.api, "Upcoming");
    const now = srv.clock.now();
    const contact = await srv.api("/contacts", { key: a.secretKey, body: { email: "u@example.com" } });
    const { insertContent, insertEmails } = await import("../../src/mail/outbox/enqueue");
    const ids = await srv.ctx.db.transaction().execute(async (trx) => {
      const contentId = await insertContent(trx, now, { projectId: a.projectId, subject: "s", html: "<p>x</p>", fromEmail: "n@example.com" });
      return insertEmails(trx, now, srv.ctx.config.hostname, [
        { projectId: a.projectId, contentId, contactId: contact.body.id, toEmail: "u@example.com", sourceType: "TRANSACTIONAL", runAt: now + 3 * HOUR },
        { projectId: a.projectId, contentId, contactId: contact.body.id, toEmail: "u@example.com", sourceType: "TRANSACTIONAL", runAt: now + HOUR },
      ]);
    });
    // A deferred email (as the outbox leaves one after a 4xx).
    await srv.ctx.db.updateTable("emails").set({ status: "DEFERRED", attempts: 1, next_attempt_at: now + 2 * HOUR, last_reply: "451 later" }).where("id", "=", ids[0]!).execute();
    // A module that has its own upcoming work (scheduled campaigns, waiting executions) adds it through the hook.
    srv.ctx.contributions.upcoming.push(async (_c, projectId) =>
      projectId === a.projectId ? [{ type: "campaign.scheduled", id: "camp-1", at: new Date(now + 90 * 60_000).toISOString(), details: {} }] : [],
    );
    const r = await srv.api("/activity/upcoming", { key: a.secretKey });
    expect(r.status).toBe(200);
    expect(r.body.map((i: any) => [i.type, i.id])).toEqual([
      ["email.pending", ids[1]],
      ["campaign.scheduled", "camp-1"],
      ["email.retry", ids[0]],
    ]);
    expect(r.body[2]).toMatchObject({ at: new Date(now + 2 * HOUR).toISOString(), details: { attempts: 1, lastReply: "451 later" } });
    expect((await srv.api("/activity/upcoming", { key: acc.secretKey })).body.map((i: any) => i.id)).not.toContain("camp-1");
  });
});

describe("the rollup consumer", () => {
  test("without it (MAILSVC_ANALYTICS_ROLLUPS=false) answers stay exact; turned on after a restart it folds the backlog once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-rollup-"));
    const dbPath = join(dir, "t.db");
    try {
      const s1 = await startServer({ dbPath, config: { analyticsRollups: false } });
      const a = await createAccount(s1.api, "Backlog");
      const t0 = s1.clock.now();
      for (let i = 0; i < 12; i++) {
        s1.clock.advance(20 * 60_000);
        await s1.api("/v1/track", { key: a.publicKey, body: { email: `b${i % 4}@example.com`, event: i % 3 ? "view" : "buy" } });
      }
      const want = { view: 8, buy: 4 };
      const win = `from=${t0}&to=${s1.clock.now() + 1}`;
      const stats1 = await s1.api("/events/stats", { key: a.secretKey });
      expect(Object.fromEntries(stats1.body.events.map((e: any) => [e.name, e.count]))).toEqual(want);
      const folded = await s1.ctx.db.selectFrom("event_name_totals").selectAll().where("project_id", "=", a.projectId).execute();
      expect(folded).toEqual([]);
      await s1.close();

      const s2 = await startServer({ dbPath });
      await s2.drainJobs();
      const totals = await s2.ctx.db.selectFrom("event_name_totals").select(["name", "count"]).where("project_id", "=", a.projectId).orderBy("name").execute();
      expect(totals).toEqual([
        { name: "buy", count: 4 },
        { name: "view", count: 8 },
      ]);
      // s2's clock is behind s1's moved one: name the window.
      const stats2 = await s2.api(`/events/stats?${win}`, { key: a.secretKey });
      expect(Object.fromEntries(stats2.body.events.map((e: any) => [e.name, e.count]))).toEqual(want);
      const top = await s2.api(`/analytics/top-events?${win}`, { key: a.secretKey });
      expect(top.body.data.map((x: any) => [x.name, x.count])).toEqual([["view", 8], ["buy", 4]]);
      await s2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Aggregates on a large project: 1,000,000 contacts, 1,000,000 emails and 5,000,000 events over 90
// days. Seeds the rows without the rollups, times migration 011's backfill, then times every
// analytics endpoint, /activity/stats, /events/stats and /contacts/fields against `mailsvc serve`
// (bar: < 50 ms), beside a bare HTTP round trip and raw indexed lookups on bun:sqlite, same run, and
// the scan each rollup replaces.
//   bun scripts/bench/analytics.ts [events=5000000] [contacts=1000000] [emails=1000000]
import { Database } from "bun:sqlite";
import { migrate } from "../../src/db/migrate";
import { createProject, fmt, makeTimer, startBenchServer, tempDb } from "./audience-helpers";

const EVENTS = Number(process.argv[2] ?? 5_000_000);
const CONTACTS = Number(process.argv[3] ?? 1_000_000);
const EMAILS = Number(process.argv[4] ?? 1_000_000);
const DAY = 86_400_000;
const SPAN = 90 * DAY;

const NAMES: [string, number][] = [
  ["email.sent", 0.2],
  ["email.delivery", 0.19],
  ["email.open", 0.08],
  ["email.click", 0.03],
  ["email.bounce", 0.005],
  ["email.deferred", 0.01],
  ["email.complaint", 0.001],
  ["contact.unsubscribed", 0.004],
  ["signup", 0.1],
  ["login", 0.2],
  ["page_view", 0.15],
  ["purchase", 0.03],
];
const pickName = (r: number) => {
  let acc = 0;
  for (const [n, p] of NAMES) if ((acc += p) >= r) return n;
  return "page_view";
};
const PLANS = ["free", "pro", "team", "enterprise"];

const t = tempDb();
const project = await createProject(t.db);
const now = Date.now();

// ---- seed without the rollups (as a database from before migration 011 would be) -------------------
const seed0 = performance.now();
{
  const db = new Database(t.db, { strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY");
  db.exec(`DROP TRIGGER events_rollup_delete; DROP TRIGGER contacts_fields_insert;
    DROP TRIGGER contacts_fields_delete; DROP TRIGGER contacts_fields_update;
    DROP TABLE event_rollup_hourly; DROP TABLE event_rollup_daily; DROP TABLE event_name_totals; DROP TABLE contact_field_stats; DROP TABLE campaign_rollup;
    DELETE FROM schema_migrations WHERE name = '011_analytics'`);
  const insC = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?)");
  const contacts: string[] = new Array(CONTACTS);
  const c0 = now - SPAN - DAY;
  for (let b = 0; b < CONTACTS; b += 50_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(CONTACTS, b + 50_000); i++) {
        const ts = c0 + i;
        const id = Bun.randomUUIDv7(undefined, ts);
        contacts[i] = id;
        const data: Record<string, unknown> = { plan: PLANS[i % 4], visits: i % 1000 };
        if (i % 3 === 0) data.signedUpOn = "2025-0" + (1 + (i % 9)) + "-15";
        if (i % 10 === 0) data.vip = true;
        insC.run(id, project.id, `c${i}@example.com`, JSON.stringify(data), ts, ts);
      }
    })();
  }
  const content = Bun.randomUUIDv7();
  db.query("INSERT INTO email_contents (id, project_id, subject, html, from_email, type, created_at) VALUES (?, ?, 'Hi', '<p>Hi</p>', 'news@example.com', 'MARKETING', ?)").run(content, project.id, now);
  const insM = db.query(
    `INSERT INTO emails (id, project_id, content_id, contact_id, to_email, status, source_type, message_id, attempts, created_at, updated_at, sent_at, delivered_at)
     VALUES (?, ?, ?, ?, ?, ?, 'TRANSACTIONAL', ?, 1, ?, ?, ?, ?)`,
  );
  const emailIds: string[] = new Array(EMAILS);
  for (let b = 0; b < EMAILS; b += 50_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(EMAILS, b + 50_000); i++) {
        const ts = now - SPAN + Math.floor((i / EMAILS) * SPAN);
        const id = Bun.randomUUIDv7(undefined, ts);
        emailIds[i] = id;
        const status = i % 50 === 0 ? "BOUNCED" : i % 7 === 0 ? "OPENED" : "DELIVERED";
        insM.run(id, project.id, content, contacts[i % CONTACTS]!, `c${i % CONTACTS}@example.com`, status, `<${id}@bench>`, ts, ts, ts, status === "BOUNCED" ? null : ts);
      }
    })();
  }
  const insE = db.query("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  for (let b = 0; b < EVENTS; b += 50_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(EVENTS, b + 50_000); i++) {
        const ts = now - SPAN + Math.floor((i / EVENTS) * SPAN);
        const name = pickName(Math.random());
        const system = name.startsWith("email.");
        insE.run(Bun.randomUUIDv7(undefined, ts), project.id, contacts[i % CONTACTS]!, name, system ? null : '{"plan":"pro"}', system ? emailIds[i % EMAILS]! : null, ts);
      }
    })();
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}
const seedMs = performance.now() - seed0;

// ---- migration 011: the backfill ------------------------------------------------------------------------
const mig0 = performance.now();
{
  const db = new Database(t.db, { strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY");
  const applied = migrate(db);
  if (!applied.includes("011_analytics")) throw new Error("migration 011 did not run");
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}
const migMs = performance.now() - mig0;

// ---- the service --------------------------------------------------------------------------------------
const srv = await startBenchServer(t.db);
const timeGet = makeTimer(srv.url, { authorization: `Bearer ${project.secret}` });
await timeGet("/analytics/timeseries", 3);
const bare = await timeGet("/config", 30);
const rows: [string, string][] = [
  ["GET /analytics/timeseries (30 days by day)", "/analytics/timeseries"],
  ["GET /analytics/timeseries?interval=hour (30 d)", "/analytics/timeseries?interval=hour"],
  ["GET /analytics/timeseries (90 days by day)", `/analytics/timeseries?from=${now - SPAN}`],
  ["GET /analytics/top-events (+ previous window)", "/analytics/top-events"],
  ["GET /analytics/top-campaigns", "/analytics/top-campaigns"],
  ["GET /analytics/campaign-stats", "/analytics/campaign-stats"],
  ["GET /activity/stats (30 days, unaligned)", "/activity/stats"],
  ["GET /events/stats (30 days, unaligned)", "/events/stats"],
  ["GET /events/stats (90 days)", `/events/stats?days=90`],
  ["GET /contacts/fields", "/contacts/fields"],
  ["GET /activity first page (+ total)", "/activity"],
  ["GET /activity?type=event (+ total)", "/activity?type=event"],
  ["GET /activity/types", "/activity/types"],
  ["GET /events/names", "/events/names"],
];
const results: { label: string; p50: number; max: number }[] = [];
for (const [label, path] of rows) results.push({ label, ...(await timeGet(path, 15)) });
const fieldsBody = (await timeGet("/contacts/fields", 1)).body;
const rss = srv.rssMb();
await srv.stop();

// ---- ceilings and the scans the rollups replace, on bun:sqlite, same file, same run --------------------
const raw = new Database(t.db, { readonly: true });
raw.exec("PRAGMA cache_size = -262144");
function timeRaw(fn: () => unknown, runs = 15) {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const a = performance.now();
    fn();
    ms.push(performance.now() - a);
  }
  ms.sort((x, y) => x - y);
  return ms[Math.floor(ms.length / 2)]!;
}
const lookup = raw.query("SELECT id, name, contact_id, data, created_at FROM events WHERE project_id = ? ORDER BY id DESC LIMIT 21");
const rawLookup = timeRaw(() => lookup.all(project.id));
const from30 = now - 30 * DAY;
const idAt = (ms: number) => {
  const hex = ms.toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}`;
};
const scanStats = raw.query("SELECT name, count(*) AS n FROM events WHERE project_id = ? AND id >= ? GROUP BY name");
const rawScanStats = timeRaw(() => scanStats.all(project.id, idAt(from30)), 3);
const scanFields = raw.query("SELECT j.key, j.type, count(*) FROM contacts c, json_each(c.data) j WHERE c.project_id = ? GROUP BY 1, 2");
const rawScanFields = timeRaw(() => scanFields.all(project.id), 1);
const rollupRead = raw.query("SELECT name, sum(count) FROM event_rollup_daily WHERE project_id = ? AND bucket >= ? GROUP BY name");
const rawRollup = timeRaw(() => rollupRead.all(project.id, Math.floor(from30 / DAY) * DAY));
raw.close();
t.cleanup();

const line = (label: string, p50: number, max?: number, bar?: number) =>
  console.log(
    `${label.padEnd(48)} p50 ${p50.toFixed(1).padStart(7)} ms${max !== undefined ? `  max ${max.toFixed(1).padStart(7)} ms` : ""}${bar ? `  (bar < ${bar} ms: ${p50 < bar ? "PASS" : "FAIL"})` : ""}`,
  );
console.log(`seeded ${fmt(CONTACTS)} contacts, ${fmt(EMAILS)} emails, ${fmt(EVENTS)} events over 90 days in ${(seedMs / 1000).toFixed(1)} s`);
console.log(`migration 011 (rollup backfill of all of them) took ${(migMs / 1000).toFixed(1)} s`);
line("GET /config (bare round trip, ceiling)", bare.p50, bare.max);
line("raw indexed lookup: newest 20 events (bun:sqlite)", rawLookup);
line("raw read of the daily rollup, 30 days", rawRollup);
for (const r of results) line(r.label, r.p50, r.max, 50);
console.log("what the rollups replace (bun:sqlite, same file):");
line("  scan: events per name, last 30 days", rawScanStats);
line("  scan: contact fields over json_each", rawScanFields);
console.log(`custom fields reported: ${fieldsBody.custom.map((f: any) => `${f.name}:${f.type}:${f.coverage}%`).join(", ")}`);
console.log(`server RSS ${fmt(rss)} MB; machine load average ${require("node:os").loadavg()[0].toFixed(1)} (2 cores shared with other work)`);

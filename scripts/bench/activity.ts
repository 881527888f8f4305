// The activity feed with 1,000,000 activity rows: first page and a type-filtered page (bar: < 50 ms each),
// beside a bare HTTP round trip (GET /config) and the same SQL run directly on bun:sqlite, same run.
//   bun scripts/bench/activity.ts [rows=1000000]
import { Database } from "bun:sqlite";
import { createProject, makeTimer, startBenchServer, tempDb } from "./audience-helpers";

const N = Number(process.argv[2] ?? 1_000_000);
const CONTACTS = 10_000;
// A realistic mix: mostly delivery events, some engagement, some client events.
const NAMES: [string, number][] = [
  ["email.sent", 0.3],
  ["email.delivery", 0.28],
  ["email.open", 0.12],
  ["email.click", 0.04],
  ["email.bounce", 0.01],
  ["email.complaint", 0.001],
  ["contact.unsubscribed", 0.004],
  ["signup", 0.1],
  ["purchase", 0.145],
];
const pickName = (r: number) => {
  let acc = 0;
  for (const [n, p] of NAMES) if ((acc += p) >= r) return n;
  return "purchase";
};

const t = tempDb();
const project = await createProject(t.db);
const seed0 = performance.now();
{
  const db = new Database(t.db, { strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -131072");
  const insC = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, 1, '{}', ?, ?)");
  const insE = db.query("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  const contacts: string[] = [];
  let ts = Date.now() - N * 100 - CONTACTS * 1000;
  db.transaction(() => {
    for (let i = 0; i < CONTACTS; i++) {
      ts += 1000;
      const id = Bun.randomUUIDv7(undefined, ts);
      contacts.push(id);
      insC.run(id, project.id, `c${i}@example.com`, ts, ts);
    }
  })();
  for (let b = 0; b < N; b += 20_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(N, b + 20_000); i++) {
        ts += 100;
        const name = pickName(Math.random());
        const system = name.includes(".");
        insE.run(Bun.randomUUIDv7(undefined, ts), project.id, contacts[i % CONTACTS]!, name, system ? null : '{"plan":"pro"}', system ? Bun.randomUUIDv7(undefined, ts) : null, ts);
      }
    })();
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}
const seedMs = performance.now() - seed0;

const srv = await startBenchServer(t.db);
const auth = { authorization: `Bearer ${project.secret}` };
const timeGet = makeTimer(srv.url, auth);

await timeGet("/activity", 3);
const bare = await timeGet("/config", 30);
const first = await timeGet("/activity");
const typed = await timeGet("/activity?type=email.open");
const rare = await timeGet("/activity?type=email.complaint");
const client = await timeGet("/activity?type=event");
const next = await timeGet(`/activity?cursor=${encodeURIComponent(first.body.cursor)}`);
const stats = await timeGet("/activity/stats", 5);
const rss = srv.rssMb();
await srv.stop();

// Ceiling: the first page's SQL straight on bun:sqlite.
const raw = new Database(t.db, { readonly: true });
const q = raw.query(
  "SELECT e.id, e.name, e.contact_id, e.data, e.created_at, c.email FROM events e LEFT JOIN contacts c ON c.id = e.contact_id WHERE e.project_id = ? ORDER BY e.id DESC LIMIT 21",
);
const rawMs: number[] = [];
for (let i = 0; i < 20; i++) {
  const a = performance.now();
  q.all(project.id);
  rawMs.push(performance.now() - a);
}
rawMs.sort((x, y) => x - y);
raw.close();
t.cleanup();

const line = (label: string, r: { p50: number; max: number }, bar?: number) =>
  console.log(`${label.padEnd(44)} p50 ${r.p50.toFixed(1).padStart(6)} ms  max ${r.max.toFixed(1).padStart(6)} ms${bar ? `  (bar < ${bar} ms: ${r.p50 < bar ? "PASS" : "FAIL"})` : ""}`);
console.log(`seeded ${N.toLocaleString()} activity rows (${CONTACTS.toLocaleString()} contacts) in ${(seedMs / 1000).toFixed(1)} s`);
line("GET /config (bare round trip, ceiling)", bare);
console.log(`${"raw SQL of the first page (ceiling)".padEnd(44)} p50 ${rawMs[10]!.toFixed(2).padStart(6)} ms`);
line("GET /activity first page (+ total)", first, 50);
line("GET /activity?type=email.open", typed, 50);
line("GET /activity?type=email.complaint (rare)", rare);
line("GET /activity?type=event (client events)", client);
line("GET /activity second page", next);
line("GET /activity/stats (30 days)", stats);
console.log(`server RSS ${rss} MB`);

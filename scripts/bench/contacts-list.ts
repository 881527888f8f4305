// GET /contacts with 1,000,000 contacts: first page (with its total), a search (rare and common
// terms, which also count their matches), later pages; server RSS. Ceilings from the same run: a
// bare HTTP round trip (GET /config) and the same SQL run directly on bun:sqlite.
//   bun scripts/bench/contacts-list.ts [contacts=1000000]
import { Database } from "bun:sqlite";
import { createProject, makeTimer, fmt, startBenchServer, tempDb } from "./audience-helpers";

const N = Number(process.argv[2] ?? 1_000_000);
const PLANS = ["free", "pro", "team", "enterprise"];

const t = tempDb();
const project = await createProject(t.db);

// Seed with raw bulk inserts (the counters follow through the triggers).
let t0 = performance.now();
{
  const db = new Database(t.db, { strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -131072");
  const ins = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  let ts = Date.now() - N * 1000;
  for (let b = 0; b < N; b += 10_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(N, b + 10_000); i++) {
        ts += 1000;
        const email = `user${i}.${(i * 7919) % 100_000}@example${i % 50}.com`;
        ins.run(Bun.randomUUIDv7(undefined, ts), project.id, email, i % 20 === 0 ? 0 : 1, JSON.stringify({ plan: PLANS[i % 4], n: i, firstName: `Name${i % 1000}` }), ts, ts);
      }
    })();
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}
const seedMs = performance.now() - t0;

const srv = await startBenchServer(t.db);
const auth = { authorization: `Bearer ${project.secret}` };

const timeGet = makeTimer(srv.url, auth);

await timeGet("/contacts", 3); // warm-up
const bare = await timeGet("/config", 30);
const first = await timeGet("/contacts");
const firstEmail = await timeGet("/contacts?sort=email&dir=asc");
const unsub = await timeGet("/contacts?subscribed=false");
const page2 = await timeGet(`/contacts?cursor=${encodeURIComponent(first.body.cursor)}`);
const rare = await timeGet("/contacts?search=USER99999.");
const common = await timeGet("/contacts?search=example1");
const rareEmail = await timeGet("/contacts?search=user99999.&sort=email");
const rssBeforeFields = srv.rssMb();
const fields = await timeGet("/contacts/fields", 3);
const values = await timeGet("/contacts/fields/plan/values", 3);
const rss = srv.rssMb();
await srv.stop();

// Raw SQL ceilings on the same file (what the endpoint runs, without HTTP).
const db = new Database(t.db, { strict: true });
db.exec("PRAGMA cache_size = -65536");
function timeSql(sql: string, ...params: any[]): number {
  const q = db.query(sql);
  q.all(...params);
  const ms: number[] = [];
  for (let i = 0; i < 9; i++) {
    const a = performance.now();
    q.all(...params);
    ms.push(performance.now() - a);
  }
  return ms.sort((x, y) => x - y)[4]!;
}
const sqlPage = timeSql("SELECT * FROM contacts WHERE project_id = ? ORDER BY created_at DESC, id DESC LIMIT 21", project.id);
const sqlCount = timeSql("SELECT count(*) FROM contacts WHERE project_id = ?", project.id);
const sqlSearch =
  timeSql("SELECT * FROM contacts WHERE project_id = ? AND instr(email, ?) > 0 ORDER BY created_at DESC, id DESC LIMIT 21", project.id, "user99999.") +
  timeSql("SELECT count(*) FROM contacts WHERE project_id = ? AND instr(email, ?) > 0", project.id, "user99999.");
db.close();
t.cleanup();

const ok = first.p50 < 50 && rare.p50 < 400 && common.p50 < 400 && rss < 250 && rssBeforeFields < 250 && first.body.total === N;
console.log(`GET /contacts with ${fmt(N)} contacts (seeded in ${fmt(seedMs / 1000, 1)} s); p50 (max) of 15 requests each`);
console.log(`  first page, createdAt desc : ${fmt(first.p50, 1)} ms (${fmt(first.max, 1)}), total ${fmt(first.body.total)}`);
console.log(`  first page, email asc      : ${fmt(firstEmail.p50, 1)} ms (${fmt(firstEmail.max, 1)})`);
console.log(`  first page, subscribed=false: ${fmt(unsub.p50, 1)} ms (${fmt(unsub.max, 1)}), total ${fmt(unsub.body.total)}`);
console.log(`  second page (cursor)       : ${fmt(page2.p50, 1)} ms (${fmt(page2.max, 1)})`);
console.log(`  search rare term           : ${fmt(rare.p50, 1)} ms (${fmt(rare.max, 1)}), total ${fmt(rare.body.total)}`);
console.log(`  search rare, sort=email    : ${fmt(rareEmail.p50, 1)} ms (${fmt(rareEmail.max, 1)})`);
console.log(`  search common term         : ${fmt(common.p50, 1)} ms (${fmt(common.max, 1)}), total ${fmt(common.body.total)}`);
const plan = fields.body.custom.find((f: any) => f.name === "plan");
const valuesSum = values.body.values.reduce((s: number, v: any) => s + v.count, 0);
console.log(`  fields (types, coverage)   : ${fmt(fields.p50)} ms (plan: ${plan?.type}, ${plan?.coverage}%); values of one field ${fmt(values.p50)} ms (sum ${fmt(valuesSum)}); chunked full scans, no bar`);
console.log(`  server RSS                 : ${fmt(rssBeforeFields)} MB after the list and search requests, ${fmt(rss)} MB after the field scans`);
console.log(`  ceilings (same run)        : GET /config round trip ${fmt(bare.p50, 2)} ms; raw SQL page ${fmt(sqlPage, 2)} ms, raw count(*) ${fmt(sqlCount, 1)} ms (the endpoint reads a counter instead), raw search page+count ${fmt(sqlSearch, 1)} ms`);
console.log(`  bars: first page < 50 ms, search < 400 ms, RSS < 250 MB -> ${ok ? "PASS" : "FAIL"}`);

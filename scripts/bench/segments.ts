import { Kysely } from "kysely";
import { BunSqliteDialect } from "../../src/db/bun-sqlite-dialect";
import { atomic } from "../../src/db/raw";
// Segments at scale: 1,000,000 contacts and 5,000,000 events. Through HTTP: a 2-filter data.* count
// (POST /segments/:id/refresh), a `triggeredWithin 30 days` count, the first members page; each
// beside the raw SQL of the same compiled query run directly on bun:sqlite in the same run. Then
// /v1/track throughput with 5 tracked segments on the project beside the same load without them
// (the load of scripts/bench/track.ts, same run, fresh databases; BENCH_ROUNDS rounds of the cases in turn, default 2).
//   bun scripts/bench/segments.ts [contacts=1000000] [events=5000000] [trackSeconds=10]
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { compileCondition } from "../../src/audience/conditions";
import { followPlan, SegmentFollower } from "../../src/audience/segments/follow";
import { applyTrack } from "../../src/audience/track";
import { createProject, fmt, makeTimer, openMigrated, startBenchServer, tempDb } from "./audience-helpers";

const N = Number(process.argv[2] ?? 1_000_000);
const E = Number(process.argv[3] ?? 5_000_000);
const TRACK_SECONDS = Number(process.argv[4] ?? 10);
const DAY = 86_400_000;
const PLANS = ["free", "pro", "team", "enterprise"];
const COUNTRIES = Array.from({ length: 40 }, (_, i) => `C${i}`);
const EVENT_NAMES = ["page_view", "login", "purchase", "signup", "invite_sent", "search", "add_to_cart", "logout", "share", "comment"];

const t = tempDb();
const project = await createProject(t.db);

// ---- seed: raw bulk inserts, contacts then events in time order ---------------------------------------
let t0 = performance.now();
const now = Date.now();
const ids: string[] = new Array(N);
{
  const db = new Database(t.db, { strict: true });
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -262144");
  const ins = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
  let ts = now - 400 * DAY;
  const step = (400 * DAY) / N;
  for (let b = 0; b < N; b += 10_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(N, b + 10_000); i++) {
        ts += step;
        const id = Bun.randomUUIDv7(undefined, Math.floor(ts));
        ids[i] = id;
        const data = { plan: PLANS[i % 4], country: COUNTRIES[(i * 7) % COUNTRIES.length], visits: i % 1000, firstName: `Name${i % 1000}` };
        ins.run(id, project.id, `user${i}@example${i % 50}.com`, i % 20 === 0 ? 0 : 1, JSON.stringify(data), Math.floor(ts), Math.floor(ts));
      }
    })();
  }
  // Bulk load: the events indexes and triggers are dropped and rebuilt afterwards (sorted builds).
  const rebuild = db
    .query<{ name: string; type: string; sql: string }, []>("SELECT name, type, sql FROM sqlite_master WHERE tbl_name = 'events' AND type IN ('index', 'trigger') AND sql IS NOT NULL")
    .all();
  for (const r of rebuild) db.exec(`DROP ${r.type.toUpperCase()} ${r.name}`);
  const ev = db.query("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, NULL, NULL, ?)");
  let et = now - 365 * DAY;
  const estep = (365 * DAY) / E;
  let x = 12345;
  for (let b = 0; b < E; b += 20_000) {
    db.transaction(() => {
      for (let i = b; i < Math.min(E, b + 20_000); i++) {
        et += estep;
        x = (x * 1103515245 + 12345) & 0x7fffffff;
        const at = Math.floor(et);
        ev.run(Bun.randomUUIDv7(undefined, at), project.id, ids[x % N]!, EVENT_NAMES[(x >> 8) % EVENT_NAMES.length]!, at);
      }
    })();
  }
  for (const r of rebuild) db.exec(r.sql);
  db.query("INSERT INTO event_counts (project_id, total) VALUES (?, ?) ON CONFLICT (project_id) DO UPDATE SET total = excluded.total").run(project.id, E);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
}
const seedMs = performance.now() - t0;

// ---- counts and pages through HTTP ------------------------------------------------------------------
const srv = await startBenchServer(t.db);
const auth = { authorization: `Bearer ${project.secret}`, "content-type": "application/json" };
const timeGet = makeTimer(srv.url, auth);
async function timePost(path: string, runs = 9): Promise<{ p50: number; body: any }> {
  const ms: number[] = [];
  let body: any;
  for (let i = 0; i < runs; i++) {
    const a = performance.now();
    const r = await fetch(srv.url + path, { method: "POST", headers: auth });
    body = await r.json();
    ms.push(performance.now() - a);
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
  }
  return { p50: ms.sort((a, b) => a - b)[Math.floor(runs / 2)]!, body };
}
async function createSegment(body: unknown): Promise<any> {
  const r = await fetch(srv.url + "/segments", { method: "POST", headers: auth, body: JSON.stringify(body) });
  const j = await r.json();
  if (r.status !== 201) throw new Error(`create segment: ${r.status} ${JSON.stringify(j)}`);
  return j;
}
const dataCond = {
  logic: "AND",
  groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }, { field: "data.country", operator: "equals", value: "C3" }] }],
};
const eventCond = { logic: "AND", groups: [{ filters: [{ field: "event.purchase", operator: "triggeredWithin", value: 30, unit: "days" }] }] };
t0 = performance.now();
const segData = await createSegment({ name: "Pro in C3", condition: dataCond });
const createDataMs = performance.now() - t0;
const segEvent = await createSegment({ name: "Recent buyers", condition: eventCond });
await timePost(`/segments/${segData.id}/refresh`, 3);
const bare = await timeGet("/config", 20);
const countData = await timePost(`/segments/${segData.id}/refresh`);
const countEvent = await timePost(`/segments/${segEvent.id}/refresh`);
const pageData = await timeGet(`/segments/${segData.id}/contacts?page=1&pageSize=20`, 9);
const pageEvent = await timeGet(`/segments/${segEvent.id}/contacts?page=1&pageSize=20`, 9);
await srv.stop();

// The same compiled SQL straight on bun:sqlite (the ceiling of each figure).
const db = new Database(t.db, { strict: true });
db.exec("PRAGMA cache_size = -65536");
function timeSql(sql: string, params: unknown[]): number {
  const q = db.query(sql);
  q.all(...(params as any[]));
  const ms: number[] = [];
  for (let i = 0; i < 9; i++) {
    const a = performance.now();
    q.all(...(params as any[]));
    ms.push(performance.now() - a);
  }
  return ms.sort((x, y) => x - y)[4]!;
}
const ctx = { projectId: project.id, now: Date.now(), segments: new Map() };
const cd = compileCondition(dataCond as any, ctx);
const ce = compileCondition(eventCond as any, ctx);
const countSql = (c: { sql: string }) => `SELECT count(*) AS n FROM contacts c WHERE c.project_id = ? AND (${c.sql})`;
const pageSql = (c: { sql: string }) => `SELECT c.* FROM contacts c WHERE c.project_id = ? AND (${c.sql}) ORDER BY c.created_at DESC, c.id DESC LIMIT 20`;
const rawCountData = timeSql(countSql(cd), [project.id, ...cd.params]);
const rawCountEvent = timeSql(countSql(ce), [project.id, ...ce.params]);
const rawPageData = timeSql(pageSql(cd), [project.id, ...cd.params]) + rawCountData;
const rawPageEvent = timeSql(pageSql(ce), [project.id, ...ce.params]) + rawCountEvent;
const indexes = db.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'contacts_data_%'").all().map((r) => r.name);
db.close();
t.cleanup();

// ---- /v1/track with and without 5 tracked segments ---------------------------------------------------
// A mix: two data conditions the load's random data flips on many tracks (entry/exit events follow),
// three event conditions (enter once).
type Filter = { field: string; operator: string; value?: unknown; unit?: string };
const TRACKED_CONDS: Filter[][] = [
  [{ field: "data.plan", operator: "equals", value: "pro" }],
  [{ field: "data.visits", operator: "greaterThan", value: 900 }],
  [{ field: "event.purchase", operator: "triggeredWithin", value: 7, unit: "days" }],
  [{ field: "event.invite_sent", operator: "triggered" }],
  [{ field: "email", operator: "startsWith", value: "repeat1" }, { field: "event.signup", operator: "triggered" }],
];
// Five selective segments over the same fields and events (the usual project: most tracks move no one).
const SELECTIVE_CONDS: Filter[][] = [
  [{ field: "data.plan", operator: "equals", value: "pro" }, { field: "data.visits", operator: "greaterThan", value: 998 }],
  [{ field: "data.visits", operator: "equals", value: 7 }],
  [{ field: "event.purchase", operator: "triggeredWithin", value: 7, unit: "days" }, { field: "email", operator: "startsWith", value: "repeat77" }],
  [{ field: "event.invite_sent", operator: "triggered" }, { field: "data.plan", operator: "equals", value: "enterprise" }, { field: "data.visits", operator: "lessThan", value: 2 }],
  [{ field: "email", operator: "startsWith", value: "repeat1" }, { field: "event.signup", operator: "triggered" }],
];
async function trackRun(withSegments: boolean, tracked = true, conds = TRACKED_CONDS): Promise<{ rps: number; p99: number; non2xx: number; entries: number; exits: number; tracks: number }> {
  const tt = tempDb();
  const p = await createProject(tt.db);
  const s = await startBenchServer(tt.db);
  const h = { authorization: `Bearer ${p.secret}`, "content-type": "application/json" };
  if (withSegments) {
    for (const [i, filters] of conds.entries()) {
      const r = await fetch(s.url + "/segments", { method: "POST", headers: h, body: JSON.stringify({ name: `tracked ${i}`, trackMembership: tracked, condition: { logic: "AND", groups: [{ filters }] } }) });
      if (r.status !== 201) throw new Error(`tracked segment: ${r.status} ${await r.text()}`);
    }
  }
  const cfg = JSON.stringify({ url: s.url + "/v1/track", key: p.public, connections: 50, duration: TRACK_SECONDS, warmup: 2 });
  const runtime = Bun.which("node") ?? process.execPath;
  const load = Bun.spawn([runtime, join(import.meta.dir, "track-load.mjs"), cfg], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(load.stdout).text();
  if ((await load.exited) !== 0) throw new Error("load generator failed");
  const r = JSON.parse(out.trim().split("\n").pop()!);
  await Bun.sleep(500);
  await s.stop();
  const check = new Database(tt.db, { strict: true });
  const entries = check.query<{ n: number }, []>("SELECT count(*) AS n FROM events WHERE name LIKE 'segment.%.entry'").get()!.n;
  const exits = check.query<{ n: number }, []>("SELECT count(*) AS n FROM events WHERE name LIKE 'segment.%.exit'").get()!.n;
  const tracks = check.query<{ n: number }, []>("SELECT count(*) AS n FROM events WHERE name NOT LIKE 'segment.%' AND name NOT LIKE 'contact.%'").get()!.n;
  check.close();
  tt.cleanup();
  return { rps: r.requests.average, p99: r.latency.p99, non2xx: r.non2xx + r.errors + r.timeouts, entries, exits, tracks };
}
// BENCH_ROUNDS rounds (default 2), each running the four cases in turn on fresh servers: a run-to-run
// spread of ~10% on this machine would otherwise decide the ratios. Rates are summed over the rounds.
type TrackRun = Awaited<ReturnType<typeof trackRun>>;
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2));
const runs: Record<"base" | "tracked" | "untracked" | "selective", TrackRun[]> = { base: [], tracked: [], untracked: [], selective: [] };
for (let i = 0; i < ROUNDS; i++) {
  runs.base.push(await trackRun(false));
  runs.tracked.push(await trackRun(true));
  // The same 5 segments without trackMembership: what the segments cost a track by themselves (their field index).
  runs.untracked.push(await trackRun(true, false));
  runs.selective.push(await trackRun(true, true, SELECTIVE_CONDS));
}
/** The rounds of one case as one: summed rates and counts, the worst p99. */
const merged = (l: TrackRun[]): TrackRun => ({
  rps: l.reduce((a, r) => a + r.rps, 0),
  p99: Math.max(...l.map((r) => r.p99)),
  non2xx: l.reduce((a, r) => a + r.non2xx, 0),
  entries: l.reduce((a, r) => a + r.entries, 0),
  exits: l.reduce((a, r) => a + r.exits, 0),
  tracks: l.reduce((a, r) => a + r.tracks, 0),
});
const rates = (l: TrackRun[]) => l.map((r) => fmt(r.rps)).join(", ");
const [base, tracked, untracked, selective] = [merged(runs.base), merged(runs.tracked), merged(runs.untracked), merged(runs.selective)];

const ratio = (tracked.rps / base.rps) * 100;

// ---- where a track's time goes: the same database work in-process (no HTTP), batches of 50 ---------------
// Without segments, with the field index a `data.plan equals` segment brings, and with the follower of
// the 5 tracked segments (its evaluation plus the moves it writes: member rows and entry/exit events).
// Most of a move is commit work: a member row lands on a random page of two contact-keyed B-trees and
// its event on one more, and each dirty page is a 4 KB WAL frame (SQLite's default auto-checkpoint
// runs inline here; the server checkpoints on a worker thread).
async function inProcess(mode: "none" | "index" | "follow", n: number): Promise<{ us: number; moves: number }> {
  const tt = tempDb();
  const db = openMigrated(tt.db);
  const t0n = Date.now();
  db.query("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p', 'p', 'pk_p', 'sk_p', ?, ?)").run(t0n, t0n);
  if (mode !== "none") db.exec(`CREATE INDEX contacts_data_x ON contacts (project_id, json_extract(data, '$."plan"'))`);
  const segs = TRACKED_CONDS.map((filters, i) => ({ id: `s${i}`, slug: `s${i}`, name: `s${i}`, tree: { logic: "AND" as const, groups: [{ filters }] } }));
  for (const sg of segs)
    db.query("INSERT INTO segments (id, project_id, name, slug, type, condition, track_membership, member_count, created_at, updated_at) VALUES (?, 'p', ?, ?, 'DYNAMIC', ?, 1, 0, ?, ?)").run(sg.id, sg.name, sg.slug, JSON.stringify(sg.tree), t0n, t0n);
  const plan = followPlan("p", segs, new Map());
  const PL = ["free", "pro", "team", "enterprise"];
  const EV = ["signup", "login", "purchase", "page_view", "invite_sent"];
  const inputs = Array.from({ length: n }, (_, i) => ({
    projectId: "p",
    email: Math.random() < 0.5 ? `repeat${Math.floor(Math.random() * 5000)}@example.com` : `new${i}@example.com`,
    event: EV[i % 5]!,
    data: { plan: PL[Math.floor(Math.random() * 4)], visits: Math.floor(Math.random() * 1000), score: Math.random() },
  }));
  let moves = 0;
  const a = performance.now();
  const kdb = new Kysely<any>({ dialect: new BunSqliteDialect(db) });
  for (let i = 0; i < n; i += 50) {
    await atomic(kdb, "sqlite", async (q) => {
      const at = Date.now();
      const f = new SegmentFollower(q, at, () => {});
      for (const input of inputs.slice(i, i + 50)) await applyTrack(q, at, input, mode === "follow" ? { plan, follower: f } : undefined);
      await f.finish();
      moves += f.events.length;
    });
  }
  const us = ((performance.now() - a) * 1000) / n;
  db.close();
  tt.cleanup();
  return { us, moves: moves / n };
}
const IN_N = 60_000;
const ip = { none: await inProcess("none", IN_N), index: await inProcess("index", IN_N), follow: await inProcess("follow", IN_N) };
const ok = countData.p50 < 50 && countEvent.p50 < 300 && pageData.p50 < 50 && ratio >= 85;
console.log(`Segments with ${fmt(N)} contacts and ${fmt(E)} events (seeded in ${fmt(seedMs / 1000, 1)} s); p50 of 9 requests, HTTP beside the raw SQL of the same compiled query (same run)`);
console.log(`  2-filter data.* count (refresh)   : ${fmt(countData.p50, 1)} ms (raw SQL ${fmt(rawCountData, 1)} ms), ${fmt(countData.body.memberCount)} members  [bar < 50 ms]`);
console.log(`  triggeredWithin 30 days count     : ${fmt(countEvent.p50, 1)} ms (raw SQL ${fmt(rawCountEvent, 1)} ms), ${fmt(countEvent.body.memberCount)} members  [bar < 300 ms]`);
console.log(`  first members page, data.*        : ${fmt(pageData.p50, 1)} ms (raw SQL page + count ${fmt(rawPageData, 1)} ms)  [bar < 50 ms]`);
console.log(`  first members page, triggered     : ${fmt(pageEvent.p50, 1)} ms (raw SQL page + count ${fmt(rawPageEvent, 1)} ms)`);
console.log(`  segment create (counts once)      : ${fmt(createDataMs, 1)} ms; field indexes: ${indexes.join(", ") || "none"}; GET /config round trip ${fmt(bare.p50, 2)} ms`);
console.log(`/v1/track, 50 connections, ${TRACK_SECONDS}s each, load of scripts/bench/track.ts, fresh databases, ${ROUNDS} rounds of the four cases in turn (rates summed, worst p99)`);
console.log(`  without segments   : ${rates(runs.base)} req/s, p99 ${base.p99} ms, non-2xx/errors ${base.non2xx}`);
console.log(`  5 tracked segments : ${rates(runs.tracked)} req/s, p99 ${tracked.p99} ms, non-2xx/errors ${tracked.non2xx}, ${fmt(tracked.entries)} entries and ${fmt(tracked.exits)} exits for ${fmt(tracked.tracks)} tracks (${fmt((tracked.entries + tracked.exits) / Math.max(1, tracked.tracks), 2)} moves per track)`);
console.log(`  5 selective tracked segments: ${rates(runs.selective)} req/s, p99 ${selective.p99} ms (${fmt((selective.rps / base.rps) * 100, 1)}%), ${fmt(selective.entries)} entries and ${fmt(selective.exits)} exits for ${fmt(selective.tracks)} tracks (${fmt((selective.entries + selective.exits) / Math.max(1, selective.tracks), 3)} moves per track)`);
console.log(`  5 segments, untracked: ${rates(runs.untracked)} req/s, p99 ${untracked.p99} ms (${fmt((untracked.rps / base.rps) * 100, 1)}%: the segments' field index alone)`);
console.log(`  ratio              : ${fmt(ratio, 1)}% of the throughput without segments  [bar >= 85%]`);
console.log(`  in-process database work per track (${fmt(IN_N)} tracks, batches of 50): ${fmt(ip.none.us, 1)} us without segments, ${fmt(ip.index.us, 1)} us with the field index, ${fmt(ip.follow.us, 1)} us following the 5 segments (${fmt(ip.follow.moves, 2)} moves per track: ${fmt((ip.follow.us - ip.index.us) / Math.max(0.01, ip.follow.moves), 1)} us per move, evaluation included)`);
console.log(`  machine load average now ${fmt(require("node:os").loadavg()[0], 1)} (2 cores, other engineers' runs in parallel)`);
console.log(`  bars -> ${ok ? "PASS" : "FAIL"}`);

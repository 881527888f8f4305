// /v1/track throughput: autocannon (50 connections) against `mailsvc serve` in a child process,
// half new contacts and half repeat contacts with random data, beside the ceiling measured in the
// same run: a raw bun:sqlite loop doing one upsert+insert transaction per request.
// Then the same load with the analytics rollups (migration 011's triggers) removed, for their cost
// (BENCH_ROUNDS alternating pairs, default 3, each on a fresh server);
// then the tail case of issue 16: wrk (open connections, 50), a random contact of a 100,000 pool,
// random data, the service pinned to one core and wrk to the other, beside a bare Bun.serve doing
// one raw transaction per request pinned the same way: both p99s.
//   bun scripts/bench/track.ts [seconds=10]
import { basename, join } from "node:path";
import { createProject, fmt, openMigrated, startBenchServer, tempDb } from "./audience-helpers";
import { freePort, threadCpu, threadCpuDelta } from "./lib";

const seconds = Number(process.argv[2] ?? 10);
const CONNECTIONS = 50;
const REPEAT_POOL = 5000;
const PLANS = ["free", "pro", "team", "enterprise"];
const EVENTS = ["signup", "login", "purchase", "page_view", "invite_sent"];

let seq = 0;
function body(): string {
  const repeat = Math.random() < 0.5;
  const email = repeat ? `repeat${Math.floor(Math.random() * REPEAT_POOL)}@example.com` : `new${process.pid}.${++seq}@example.com`;
  return JSON.stringify({
    email,
    event: EVENTS[seq % EVENTS.length],
    data: {
      plan: PLANS[Math.floor(Math.random() * PLANS.length)],
      visits: Math.floor(Math.random() * 1000),
      score: Math.random(),
      ...(Math.random() < 0.2 ? { coupon: { value: "SAVE" + Math.floor(Math.random() * 100), persistent: false } } : {}),
    },
  });
}

// ---- ceiling: raw bun:sqlite, one transaction per request ------------------------------------------
function ceiling(ms: number): number {
  const t = tempDb();
  const db = openMigrated(t.db);
  const now = Date.now();
  db.query("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p', 'p', 'pk_x', 'sk_x', ?, ?)").run(now, now);
  const sel = db.query<{ id: string; data: string; subscribed: number }, [string, string]>("SELECT id, data, subscribed FROM contacts WHERE project_id = ? AND email = ?");
  const ins = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?)");
  const upd = db.query("UPDATE contacts SET data = ?, updated_at = ? WHERE id = ?");
  const ev = db.query("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, NULL, ?)");
  const one = db.transaction((b: { email: string; event: string; data: Record<string, unknown> }) => {
    const ts = Date.now();
    const c = sel.get("p", b.email);
    let id: string;
    if (c) {
      id = c.id;
      upd.run(JSON.stringify({ ...JSON.parse(c.data), ...b.data }), ts, id);
    } else {
      id = Bun.randomUUIDv7();
      ins.run(id, "p", b.email, JSON.stringify(b.data), ts, ts);
    }
    ev.run(Bun.randomUUIDv7(), "p", id, b.event, JSON.stringify(b.data), ts);
  });
  // Bodies are generated before the clock starts: the ceiling is the database work alone.
  const bodies = Array.from({ length: 200_000 }, () => JSON.parse(body()));
  let n = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms && n < bodies.length) {
    for (let i = 0; i < 200; i++) one(bodies[n + i]);
    n += 200;
  }
  const rate = n / ((performance.now() - t0) / 1000);
  db.close();
  t.cleanup();
  return rate;
}

// BENCH_TAIL_ONLY=1: only the tail case (wrk) below.
if (process.env.BENCH_TAIL_ONLY) {
  await tail();
  process.exit(0);
}
const ceilingRate = ceiling(3000);

// ---- the service --------------------------------------------------------------------------------------
/** "Rollups off": the contact-field triggers of migration 011 dropped (the server runs without the rollup consumer). */
function dropRollups(path: string) {
  const db = openMigrated(path);
  db.exec("DROP TRIGGER contacts_fields_insert; DROP TRIGGER contacts_fields_delete; DROP TRIGGER contacts_fields_update;");
  db.close();
}

async function runService(rollups: boolean) {
  const t = tempDb();
  const project = await createProject(t.db);
  // BENCH_ROLLUPS_OFF=triggers|consumer: "rollups off" removes only that part (to tell their costs apart).
  const part = process.env.BENCH_ROLLUPS_OFF;
  if (!rollups && part !== "consumer") dropRollups(t.db);
  const srv = await startBenchServer(t.db, rollups || part === "triggers" ? {} : { MAILSVC_ANALYTICS_ROLLUPS: "false" });
  // The load generator runs in its own process (Node when available: autocannon's home runtime).
  const loadCfg = JSON.stringify({ url: srv.url + "/v1/track", key: project.public, connections: CONNECTIONS, duration: seconds, warmup: 2 });
  const cpu0 = srv.cpuSeconds();
  const wall0 = performance.now();
  const load = Bun.spawn([runtime, join(import.meta.dir, "track-load.mjs"), loadCfg], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(load.stdout).text();
  if ((await load.exited) !== 0) throw new Error("load generator failed");
  const r = JSON.parse(out.trim().split("\n").pop()!) as { requests: { average: number }; latency: { p50: number; p99: number; max: number }; non2xx: number; errors: number; timeouts: number };
  const cpuUsed = srv.cpuSeconds() - cpu0;
  const wallUsed = (performance.now() - wall0) / 1000;
  const rss = srv.rssMb();
  await srv.stop();
  const check = openMigrated(t.db);
  const events = check.query<{ n: number }, []>("SELECT count(*) AS n FROM events").get()!.n;
  const contacts = check.query<{ n: number }, []>("SELECT count(*) AS n FROM contacts").get()!.n;
  check.close();
  t.cleanup();
  return { r, cpuUsed, wallUsed, rss, events, contacts };
}

const runtime = Bun.which("node") ?? process.execPath;
// Alternating runs without and with the rollups, BENCH_ROUNDS times (default 3), each on a fresh server
// and database: a run-to-run spread of 10-20% on this machine would otherwise decide their cost.
const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const offRuns: Awaited<ReturnType<typeof runService>>[] = [];
const onRuns: Awaited<ReturnType<typeof runService>>[] = [];
for (let i = 0; i < rounds; i++) {
  offRuns.push(await runService(false));
  onRuns.push(await runService(true));
}
const { r, cpuUsed, wallUsed, rss, events, contacts } = onRuns[onRuns.length - 1]!;

const rps = r.requests.average;
const non2xx = r.non2xx + r.errors + r.timeouts;
console.log(`/v1/track, ${CONNECTIONS} connections, ${seconds}s, 50% new / 50% repeat contacts, random data (load: autocannon under ${basename(runtime)})`);
console.log(`  service : ${fmt(rps)} req/s, latency p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms, non-2xx/errors ${non2xx} (the last run)`);
console.log(`  ceiling : ${fmt(ceilingRate)} req/s (raw bun:sqlite, one upsert+insert transaction per request, same machine, same run)`);
console.log(`  ratio   : ${fmt((rps / ceilingRate) * 100)}% of the ceiling; bar: >= 12,000 req/s and p99 < 15 ms -> ${rps >= 12000 && r.latency.p99 < 15 && non2xx === 0 ? "PASS" : "FAIL"}`);
const usPerReq = (cpuUsed * 1e6) / events;
console.log(`  cpu     : the server used ${fmt(cpuUsed, 1)} CPU-s over ${fmt(wallUsed, 1)} s (${fmt((cpuUsed / wallUsed) * 100)}% of one core) = ${fmt(usPerReq)} us per track -> ${fmt(1e6 / usPerReq)} req/s if it had one core to itself (machine load average now ${fmt(require("node:os").loadavg()[0], 1)})`);
console.log(`  stored  : ${fmt(events)} events, ${fmt(contacts)} contacts; server RSS ${fmt(rss)} MB`);
const sumRps = (runs: typeof onRuns) => runs.reduce((a, x) => a + x.r.requests.average, 0);
const usPer = (runs: typeof onRuns) => (runs.reduce((a, x) => a + x.cpuUsed, 0) * 1e6) / runs.reduce((a, x) => a + x.events, 0);
const runsLine = (runs: typeof onRuns) => runs.map((x) => `${fmt(x.r.requests.average)} req/s p99 ${x.r.latency.p99} ms`).join("; ");
console.log(`  rollups : ${rounds} alternating rounds on fresh servers; without the analytics rollups (no consumer, no field triggers): ${runsLine(offRuns)}, ${fmt(usPer(offRuns))} us per track`);
console.log(`            with them: ${runsLine(onRuns)}, ${fmt(usPer(onRuns))} us per track`);
console.log(`            cost of the rollups: throughput ${fmt((1 - sumRps(onRuns) / sumRps(offRuns)) * 100, 1)}% of the summed rates, CPU per track ${fmt((usPer(onRuns) / usPer(offRuns) - 1) * 100, 1)}% (bar: < 10%)`);

await tail();

// ---- the tail case: wrk, 100,000-contact pool, server on one core -----------------------------------
async function tail() {
  if (!Bun.which("wrk")) {
    console.log("tail case skipped: wrk not installed (Debian: apt-get install wrk)");
    return;
  }
  const TAIL_SECONDS = Math.max(5, seconds);
  const luaDir = tempDb();
  const lua = join(luaDir.dir, "track.lua");
  await Bun.write(
    lua,
    `local key = os.getenv("TRACK_KEY")
local plans = { "free", "pro", "team", "enterprise" }
local events = { "signup", "login", "purchase", "page_view", "invite_sent" }
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. key
function setup(thread) thread:set("seed", math.random(1, 1000000)) end
function init(args) math.randomseed(os.time() + (seed or 0)) end
request = function()
  local body = string.format('{"email":"u%d@example.com","event":"%s","data":{"plan":"%s","visits":%d,"score":%.6f}}',
    math.random(1, 100000), events[math.random(#events)], plans[math.random(#plans)], math.random(0, 999), math.random())
  return wrk.format(nil, nil, nil, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %.3f %.3f %.3f\\n", summary.requests, summary.duration,
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
`,
  );
  async function wrk(url: string, key: string) {
    const env = { ...process.env, TRACK_KEY: key };
    // warm-up, then the measured run; wrk on core 1, the server on core 0
    await Bun.spawn(["taskset", "-c", "1", "wrk", "-t1", "-c50", "-d2s", "-s", lua, url], { env, stdout: "ignore" }).exited;
    const p = Bun.spawn(["taskset", "-c", "1", "wrk", "-t1", "-c50", `-d${TAIL_SECONDS}s`, "-s", lua, url], { env, stdout: "pipe", stderr: "inherit" });
    const out = await new Response(p.stdout).text();
    const m = /RESULT (\d+) (\d+) (\d+) ([\d.]+) ([\d.]+) ([\d.]+)/.exec(out);
    if (!m) throw new Error("wrk: no result\n" + out);
    return { rps: Number(m[1]) / (Number(m[2]) / 1e6), errors: Number(m[3]), p50: Number(m[4]), p99: Number(m[5]), max: Number(m[6]) };
  }
  // Ceiling: bare Bun.serve + one raw upsert+insert transaction per request, on core 0.
  const c = tempDb();
  openMigrated(c.db).close();
  const port = await freePort();
  const ceilingCode = `
import { Database } from "bun:sqlite";
const db = new Database(${JSON.stringify(c.db)}, { strict: true });
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000");
const now = Date.now();
db.query("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p', 'p', 'pk_x', 'sk_x', ?, ?)").run(now, now);
const sel = db.query("SELECT id, data FROM contacts WHERE project_id = ? AND email = ?");
const ins = db.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, 1, ?, ?, ?)");
const upd = db.query("UPDATE contacts SET data = ?, updated_at = ? WHERE id = ?");
const ev = db.query("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, ?, NULL, ?)");
const one = db.transaction((b) => {
  const ts = Date.now();
  const c = sel.get("p", b.email);
  let id;
  if (c) { id = c.id; upd.run(JSON.stringify({ ...JSON.parse(c.data), ...b.data }), ts, id); }
  else { id = Bun.randomUUIDv7(); ins.run(id, "p", b.email, JSON.stringify(b.data), ts, ts); }
  const eid = Bun.randomUUIDv7();
  ev.run(eid, "p", id, b.event, JSON.stringify(b.data), ts);
  return { id, eid, ts };
});
Bun.serve({ port: ${port}, hostname: "127.0.0.1", async fetch(req) {
  if (req.method !== "POST") return new Response("ok");
  const r = one(await req.json());
  return Response.json({ success: true, data: { contact: r.id, event: r.eid, timestamp: new Date(r.ts).toISOString() } });
} });
`;
  const file = join(c.dir, "ceiling.ts");
  await Bun.write(file, ceilingCode);
  const ceil = Bun.spawn(["taskset", "-c", "0", process.execPath, file], { stdout: "ignore", stderr: "inherit" });
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/`)).ok) break;
    } catch {}
    await Bun.sleep(25);
  }
  const bare = await wrk(`http://127.0.0.1:${port}/v1/track`, "x");
  ceil.kill();
  await ceil.exited;
  c.cleanup();

  const t = tempDb();
  const project = await createProject(t.db);
  const srv = await startBenchServer(t.db, {}, { cpu: "0" });
  const cpu0 = threadCpu(srv.pid);
  const svc = await wrk(srv.url + "/v1/track", project.public);
  // Who used the one core: the event loop, the WAL checkpointer, the GC's and JIT's threads.
  const cpuShare = threadCpuDelta(cpu0, threadCpu(srv.pid));
  await srv.stop();
  t.cleanup();
  luaDir.cleanup();
  console.log(`/v1/track tail case: wrk -c50 (core 1), random contact of 100,000, random data, server pinned to core 0, ${TAIL_SECONDS}s`);
  console.log(`  service : ${fmt(svc.rps)} req/s, p50 ${svc.p50.toFixed(2)} ms, p99 ${svc.p99.toFixed(2)} ms, max ${svc.max.toFixed(1)} ms, errors ${svc.errors}`);
  console.log(`  server CPU per thread during the run (warm-up included): ${cpuShare}`);
  console.log(`  ceiling : ${fmt(bare.rps)} req/s, p50 ${bare.p50.toFixed(2)} ms, p99 ${bare.p99.toFixed(2)} ms, max ${bare.max.toFixed(1)} ms (bare Bun.serve, one raw transaction per request, same pinning)`);
  console.log(`  bar     : service p99 < 15 ms -> ${svc.p99 < 15 && svc.errors === 0 ? "PASS" : "FAIL"}; throughput ${fmt(svc.rps / bare.rps, 2)}x the ceiling (machine load average ${require("node:os").loadavg()[0].toFixed(1)})`);
}

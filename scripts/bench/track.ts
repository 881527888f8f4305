// /v1/track throughput: autocannon (50 connections) against `mailsvc serve` in a child process,
// half new contacts and half repeat contacts with random data, beside the ceiling measured in the
// same run: a raw bun:sqlite loop doing one upsert+insert transaction per request.
//   bun scripts/bench/track.ts [seconds=10]
import { basename, join } from "node:path";
import { createProject, fmt, openMigrated, startBenchServer, tempDb } from "./audience-helpers";

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

const ceilingRate = ceiling(3000);

// ---- the service --------------------------------------------------------------------------------------
const t = tempDb();
const project = await createProject(t.db);
const srv = await startBenchServer(t.db);
// The load generator runs in its own process (Node when available: autocannon's home runtime).
const loadCfg = JSON.stringify({ url: srv.url + "/v1/track", key: project.public, connections: CONNECTIONS, duration: seconds, warmup: 2 });
const runtime = Bun.which("node") ?? process.execPath;
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

const rps = r.requests.average;
const non2xx = r.non2xx + r.errors + r.timeouts;
console.log(`/v1/track, ${CONNECTIONS} connections, ${seconds}s, 50% new / 50% repeat contacts, random data (load: autocannon under ${basename(runtime)})`);
console.log(`  service : ${fmt(rps)} req/s, latency p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, max ${r.latency.max} ms, non-2xx/errors ${non2xx}`);
console.log(`  ceiling : ${fmt(ceilingRate)} req/s (raw bun:sqlite, one upsert+insert transaction per request, same machine, same run)`);
console.log(`  ratio   : ${fmt((rps / ceilingRate) * 100)}% of the ceiling; bar: >= 12,000 req/s and p99 < 15 ms -> ${rps >= 12000 && r.latency.p99 < 15 && non2xx === 0 ? "PASS" : "FAIL"}`);
const usPerReq = (cpuUsed * 1e6) / events;
console.log(`  cpu     : the server used ${fmt(cpuUsed, 1)} CPU-s over ${fmt(wallUsed, 1)} s (${fmt((cpuUsed / wallUsed) * 100)}% of one core) = ${fmt(usPerReq)} us per track -> ${fmt(1e6 / usPerReq)} req/s if it had one core to itself (machine load average now ${fmt(require("node:os").loadavg()[0], 1)})`);
console.log(`  stored  : ${fmt(events)} events, ${fmt(contacts)} contacts; server RSS ${fmt(rss)} MB`);

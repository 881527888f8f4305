// One vs two vs three instances on one PostgreSQL database (issue 32's benchmark), on this machine:
//  (a) campaign delivery msg/s: BENCH_N contacts (default 5,000), a 2 KB MARKETING body, RSA-2048 DKIM,
//      delivered through the real path (dns2 MX, STARTTLS, outbox, SMTP) to the benchmark sink
//      (send-sink.ts, its own process); the send is asked of instance 1, every instance delivers;
//  (b) POST /v1/track req/s: autocannon (track-load.mjs, under node), 50 connections in total spread
//      evenly over the instances (one load process per instance, rates summed), BENCH_TRACK_S seconds
//      (default 8) after a 2 s warm-up;
//  (c) failover: with MAILSVC_LEASE=BENCH_LEASE (default 3s), kill -9 of the instance holding a claimed
//      batch mid-campaign, then the time to the first message of that batch delivered by a survivor
//      (read from the emails' delivered_at), printed beside its ceiling: the lease plus the outbox's
//      lease sweep period (a minute, or the lease when shorter).
// Each k in 1..3 runs on a fresh database with fresh processes; all share the machine's 2 cores with
// PostgreSQL, the sink and the load generator: on 2 cores more instances add overhead, not capacity.
// A throwaway PostgreSQL cluster (test/support/postgres.ts) unless BENCH_DATABASE_URL names an admin URL.
//   bun scripts/bench/instances.ts            (BENCH_N, BENCH_TRACK_S, BENCH_LEASE, BENCH_MAX_K=3 (0: the failover only);
//   BENCH_SKIP_CAMPAIGN=1 / BENCH_SKIP_FAILOVER=1 leave those parts out)
import { join } from "node:path";
import pg from "pg";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { startPostgres } from "../../test/support/postgres";
import { createAccount, makeApi, type Api } from "../../test/support/server";
import { fmt, startBenchServer, tempDb, type BenchServer } from "./audience-helpers";
import { benchDatabaseUrl, dropBenchDatabase, freePort, ROOT, waitFor } from "./lib";

const N = Number(process.env.BENCH_N ?? 5_000);
const TRACK_S = Number(process.env.BENCH_TRACK_S ?? 8);
const LEASE = process.env.BENCH_LEASE ?? "3s";
const LEASE_MS = Number(/^(\d+)s$/.exec(LEASE)?.[1] ?? 3) * 1000;
/** The outbox looks for expired leases once per this period (src/mail/outbox/outbox.ts runRound): a minute, or the lease when shorter. */
const SWEEP_MS = Math.min(60_000, LEASE_MS);
const MAX_K = Math.min(3, Math.max(0, Number(process.env.BENCH_MAX_K ?? 3)));
const RCPT = "bench-rcpt.test";
const SENDER = "bench-sender.test";
const loadavg = () => fmt(require("node:os").loadavg()[0], 1);

// ---- PostgreSQL, the sink, DNS --------------------------------------------------------------------
const given = process.env.BENCH_DATABASE_URL;
const t0 = performance.now();
const cluster = given ? null : startPostgres();
const ADMIN = given || cluster!.url;
process.env.BENCH_DATABASE_URL = ADMIN; // lib.ts engineEnv: the servers run on PostgreSQL
process.on("exit", () => cluster?.stop());
console.log(`instances: PostgreSQL (${given ? "BENCH_DATABASE_URL" : `throwaway cluster, fsync off, started in ${fmt((performance.now() - t0) / 1000, 1)} s`}), 2 cores shared by every process of the run (and other work: load average ${loadavg()}): figures are noisy`);

const sinkPort = await freePort();
const sinkProc = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/send-sink.ts")], { env: { ...process.env, PORT: String(sinkPort) }, stdout: "ignore", stderr: "inherit" });
process.on("exit", () => sinkProc.kill("SIGKILL"));
const sinkUrl = `http://127.0.0.1:${sinkPort}`;
await waitFor(sinkUrl + "/");
type SinkStats = { smtpPort: number; count: number; firstAt: number; lastAt: number; unique: number; duplicates: number };
const sinkStats = async (): Promise<SinkStats> => (await fetch(sinkUrl + "/")).json() as Promise<SinkStats>;
const smtpPort = (await sinkStats()).smtpPort;
const dns = await startDns();
dns.mailDomain(RCPT);

const body = `<html><body>${Array.from({ length: 12 }, (_, i) => `<p>Hello {{firstName ?? "there"}}, paragraph ${i} with <a href="https://example.com/a/${i}">a link</a> and some words to fill the line.</p>`).join("\n")}</body></html>`;

interface Cluster {
  servers: BenchServer[];
  apis: Api[];
  key: string;
  publicKey: string;
  dbUrl: string;
  db: pg.Client;
  close(): Promise<void>;
}

/** k instances on a fresh database, an account with a verified domain and N contacts. */
async function startCluster(k: number, env: Record<string, string> = {}): Promise<Cluster> {
  const t = tempDb();
  const servers: BenchServer[] = [];
  // One after the other: the first migrates the fresh database.
  for (let i = 1; i <= k; i++) {
    servers.push(await startBenchServer(t.db, { MAILSVC_INSTANCE_ID: `bench-${i}`, MAILSVC_DNS_SERVERS: dns.server, MAILSVC_MX_PORT: String(smtpPort), MAILSVC_HOSTNAME: "mailsvc.bench", ...env }));
  }
  const apis = servers.map((s) => makeApi(s.url));
  const acct = await createAccount(apis[0]!, "bench");
  await addVerifiedDomain(apis[0]!, dns, acct, SENDER);
  const lines = ["email,firstName", ...Array.from({ length: N }, (_, i) => `u${i}@${RCPT},User${i}`)];
  const fd = new FormData();
  fd.append("file", new File([lines.join("\n")], "contacts.csv", { type: "text/csv" }));
  const up = await apis[0]!("/contacts/import", { key: acct.secretKey, method: "POST", raw: fd });
  if (up.status !== 202) throw new Error(`import: ${up.status} ${up.text}`);
  for (;;) {
    const s = await apis[k - 1]!(`/contacts/import/${up.body.jobId}`, { key: acct.secretKey });
    if (s.body.state === "completed") break;
    if (s.body.state === "failed") throw new Error(`import failed: ${s.text}`);
    await Bun.sleep(100);
  }
  const dbUrl = await benchDatabaseUrl(t.db);
  const db = new pg.Client({ connectionString: dbUrl });
  await db.connect();
  return {
    servers,
    apis,
    key: acct.secretKey,
    publicKey: acct.publicKey,
    dbUrl,
    db,
    async close() {
      await db.end();
      for (const s of servers) await s.stop().catch(() => {});
      await dropBenchDatabase(t.db);
      t.cleanup();
    },
  };
}

async function sendCampaign(c: Cluster, name: string): Promise<string> {
  const created = await c.apis[0]!("/campaigns", { key: c.key, body: { name, subject: 'Hello {{firstName ?? "there"}}', body, from: `news@${SENDER}`, fromName: "Bench", type: "MARKETING", audienceType: "ALL" } });
  if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
  const id = created.body.data.id as string;
  const sent = await c.apis[0]!(`/campaigns/${id}/send`, { key: c.key, method: "POST" });
  if (sent.status !== 200) throw new Error(`send: ${sent.status} ${sent.text}`);
  return id;
}

interface Row {
  k: number;
  msgs: number;
  seconds: number;
  duplicates: number;
  track: number;
  trackBad: number;
  p99: number;
  cpu: number;
  /** Deadlocks PostgreSQL broke during the track load (pg_stat_database). */
  trackDeadlocks: number;
}

async function measure(k: number): Promise<Row> {
  const c = await startCluster(k);
  try {
    // (b) /v1/track, 50 connections spread over the instances.
    const runtime = Bun.which("node") ?? process.execPath;
    const per = Math.floor(50 / k);
    const deadlocks = async () => Number((await c.db.query("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")).rows[0].deadlocks);
    const dl0 = await deadlocks();
    const cpu0 = c.servers.reduce((a, s) => a + s.cpuSeconds(), 0);
    const loads = c.servers.map((s, i) => {
      const cfg = JSON.stringify({ url: s.url + "/v1/track", key: c.publicKey, connections: per + (i < 50 - per * k ? 1 : 0), duration: TRACK_S, warmup: 2 });
      return Bun.spawn([runtime, join(ROOT, "scripts/bench/track-load.mjs"), cfg], { stdout: "pipe", stderr: "inherit" });
    });
    const outs = await Promise.all(loads.map(async (p) => JSON.parse((await new Response(p.stdout).text()).trim().split("\n").pop()!)));
    const cpu = c.servers.reduce((a, s) => a + s.cpuSeconds(), 0) - cpu0;
    const track = outs.reduce((a, r) => a + r.requests.average, 0);
    const trackBad = outs.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0);
    const p99 = Math.max(...outs.map((r) => r.latency.p99));
    await Bun.sleep(1_500); // PostgreSQL publishes its statistics within a second
    const trackDeadlocks = (await deadlocks()) - dl0;

    // (a) the campaign, asked of instance 1, delivered by all.
    if (process.env.BENCH_SKIP_CAMPAIGN) return { k, msgs: NaN, seconds: NaN, duplicates: 0, track, trackBad, p99, cpu, trackDeadlocks };
    await fetch(sinkUrl + "/reset");
    await sendCampaign(c, "Bench");
    const deadline = Date.now() + 600_000;
    let s = await sinkStats();
    while (s.unique < N && Date.now() < deadline) {
      await Bun.sleep(200);
      s = await sinkStats();
    }
    const seconds = (s.lastAt - s.firstAt) / 1000;
    return { k, msgs: s.unique < N ? NaN : N / seconds, seconds, duplicates: s.duplicates, track, trackBad, p99, cpu, trackDeadlocks };
  } finally {
    await c.close();
  }
}

const rows: Row[] = [];
for (let k = 1; k <= MAX_K; k++) {
  const r = await measure(k);
  rows.push(r);
  console.log(`  k=${k}: campaign ${fmt(r.msgs)} msg/s (${N} in ${fmt(r.seconds, 1)} s, ${r.duplicates} duplicates); /v1/track ${fmt(r.track)} req/s (p99 ${r.p99} ms, non-2xx/errors ${r.trackBad}, deadlocks ${r.trackDeadlocks}, servers ${fmt(r.cpu, 1)} CPU-s)`);
}
const one = rows[0]!;
if (rows.length) console.log(`\n(a) campaign delivery, ${fmt(N)} recipients, 2 KB body, RSA-2048 DKIM, STARTTLS; (b) POST /v1/track, 50 connections spread over the instances, ${TRACK_S} s (+2 s warm-up)`);
if (rows.length) console.log(`  instances | campaign msg/s       | /v1/track req/s      | load average ${loadavg()}`);
for (const r of rows) {
  console.log(`  ${String(r.k).padEnd(9)} | ${fmt(r.msgs).padStart(6)} (${fmt(r.msgs / one.msgs, 2)}x of one) | ${fmt(r.track).padStart(6)} (${fmt(r.track / one.track, 2)}x of one) | duplicates ${r.duplicates}, track errors ${r.trackBad}`);
}
if (rows.length) {
  console.log("  (reference: one instance. On these 2 cores the instances, PostgreSQL, the sink and the load generator share the same CPUs:");
  console.log("   a second or third instance cannot add capacity here, so these ratios show the overhead of sharing the work, not scale-out)");
}

// ---- (c) failover: kill -9 of the instance holding a claimed batch --------------------------------
async function failover(): Promise<void> {
  const c = await startCluster(2, { MAILSVC_LEASE: LEASE });
  try {
    await fetch(sinkUrl + "/reset");
    const id = await sendCampaign(c, "Failover");
    // Mid-delivery: a quarter of the audience at the sink.
    for (let s = await sinkStats(); s.count < N / 4; s = await sinkStats()) await Bun.sleep(20);
    const victim = c.servers[1]!;
    process.kill(victim.pid, "SIGKILL");
    const killedAt = Date.now();
    // What it held: emails still SENDING under its claim (its batch in flight when it died).
    const held = (await c.db.query("SELECT id FROM emails WHERE campaign_id = $1 AND status = 'SENDING' AND locked_by = 'bench-2'", [id])).rows.map((r) => r.id as string);
    if (!held.length) {
      console.log("\n(c) failover: the killed instance held no claimed email at the moment of the kill (run again)");
      return;
    }
    const first = async () => Number((await c.db.query("SELECT min(delivered_at) AS t FROM emails WHERE id = ANY($1) AND status = 'DELIVERED'", [held])).rows[0].t ?? 0);
    const deadline = Date.now() + LEASE_MS + SWEEP_MS + 60_000;
    let at = await first();
    while (!at && Date.now() < deadline) {
      await Bun.sleep(100);
      at = await first();
    }
    for (let s = await sinkStats(); s.unique < N && Date.now() < deadline; s = await sinkStats()) await Bun.sleep(200);
    const s = await sinkStats();
    // The survivor marks the campaign SENT once its last email is settled.
    let status = "";
    for (const end = Date.now() + 30_000; Date.now() < end; await Bun.sleep(200)) {
      status = (await c.apis[0]!(`/campaigns/${id}`, { key: c.key })).body.status;
      if (status === "SENT") break;
    }
    console.log(`\n(c) failover, two instances, MAILSVC_LEASE=${LEASE}: kill -9 of bench-2 holding ${held.length} claimed emails after ${fmt(N / 4)} of ${fmt(N)} delivered`);
    console.log(`  kill -9 -> first message of that batch delivered by the survivor: ${at ? `${fmt((at - killedAt) / 1000, 1)} s` : "not within the deadline"}  [ceiling: the lease ${fmt(LEASE_MS / 1000, 1)} s + the outbox's lease sweep period ${fmt(SWEEP_MS / 1000)} s = ${fmt((LEASE_MS + SWEEP_MS) / 1000)} s]`);
    console.log(`  every recipient reached: ${s.unique}/${N}, ${s.duplicates} duplicates (at most the messages on the wire at the kill), campaign ${status}`);
  } finally {
    await c.close();
  }
}
if (!process.env.BENCH_SKIP_FAILOVER) await failover();

await dns.close();
sinkProc.kill("SIGTERM");
process.exit(0);

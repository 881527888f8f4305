// Campaign delivery (issue 14): 100,000 imported contacts, a MARKETING campaign with a 20 KB HTML
// body full of variables, tracking on, RSA-2048 DKIM, delivered to a local sink on the same machine
// through the real path (dns2 MX lookup, STARTTLS, outbox, SMTP). Printed beside ceilings measured
// in the same run: RSA sign rates (the engine signs with crypto.subtle), the raw smtp-connection
// rate to the same sink, and scripts/bench/send.ts's /v1/send end-to-end figure (run first, as a
// child process). While the campaign runs, /v1/track latency is probed and the server's RSS sampled;
// the fan-out time is read from the campaign row (sent_at -> fan-out done) through a read-only
// SQLite connection (WAL: it never blocks the server).
//   bun scripts/bench/campaign.ts [contacts=100000]    (or BENCH_N=<contacts>)
// BENCH_DATABASE_URL=postgres://… (an admin URL): the service runs on PostgreSQL, on a fresh database of
// its own (lib.ts engineEnv), and the campaign row is read through pg; the /v1/send comparison
// (send.ts) stays on SQLite: BENCH_SKIP_SEND=1 skips it.
// Knobs: BENCH_SKIP_SEND=1 (no /v1/send comparison run), BENCH_SMOL=1 (the server runs with --smol), BENCH_PROFILE=<dir> / BENCH_HEAP_PROFILE=<dir> (server CPU / heap profile, markdown), BENCH_BIN=./mailsvc (the compiled binary; also passed to send.ts), BENCH_HTML=<bytes>, BENCH_DEADLINE_S=600 (stop
// waiting for the delivery after that long and report the rate so far).
import { Database } from "bun:sqlite";
import { generateKeyPairSync, sign } from "node:crypto";
import { join } from "node:path";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { createAccount, makeApi } from "../../test/support/server";
import { SmtpClient } from "../../src/mail/smtp/smtp-client";
import { composeAlternative, toWire } from "../../src/mail/message/compose";
import { toSmtpData } from "../../src/mail/smtp/smtp-data";
import { htmlToText } from "../../src/mail/message/html-text";
import pg from "pg";
import { benchAdminUrl, benchDatabaseUrl, childEnv, dropBenchDatabase, engineEnv, fmt, freePort, ROOT, rssMb, rssParts, smapsTop, tempDir, threadCpu, threadCpuDelta, waitFor } from "./lib";

const N = Number(process.argv[2] ?? process.env.BENCH_N ?? 100_000);
const RCPT_DOMAIN = "bench-rcpt.test";
const SENDER_DOMAIN = "bench-sender.test";

function html20k(): string {
  const para = (i: number) =>
    `<tr><td style="padding:8px 16px;font-family:Arial,sans-serif;font-size:14px;color:#333">` +
    `<h3 style="margin:0 0 6px">Section ${i}: what is new for {{ company ?? "you" }}</h3>` +
    `<p style="margin:0">Hello {{firstName ?? "there"}}, here is paragraph ${i} of this newsletter with a ` +
    `<a href="https://example.com/articles/${i}?utm_source=mail&amp;utm_campaign=bench">link to article ${i}</a> and some text.</p></td></tr>\n`;
  let body = "";
  for (let i = 0; body.length < Number(process.env.BENCH_HTML ?? 19_500); i++) body += para(i);
  return `<!doctype html><html><head><meta charset="utf-8"><title>News</title></head><body><table width="100%">${body}</table>` +
    `<p style="font-size:11px;color:#999">You receive this because you signed up. {{email}}</p></body></html>`;
}
const html = html20k();

// ---- ceiling 3 (first, alone on the machine): the /v1/send figure of scripts/bench/send.ts ----------
let sendFigure = NaN;
if (!process.env.BENCH_SKIP_SEND) {
  const p = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/send.ts")], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  await p.exited;
  const m = /end to end: .* = ([\d,]+) msg\/s/.exec(out);
  sendFigure = m ? Number(m[1]!.replaceAll(",", "")) : NaN;
}

// ---- the sink and DNS ---------------------------------------------------------------------------
const sinkPort = await freePort();
const sinkProc = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/send-sink.ts")], { env: { ...process.env, PORT: String(sinkPort) }, stdout: "ignore", stderr: "inherit" });
const sinkUrl = `http://127.0.0.1:${sinkPort}`;
await waitFor(sinkUrl + "/");
type SinkStats = { smtpPort: number; count: number; bytes: number; firstAt: number; lastAt: number; unique: number; duplicates: number };
const sinkStats = async (): Promise<SinkStats> => (await fetch(sinkUrl + "/")).json() as Promise<SinkStats>;
const smtpPort = (await sinkStats()).smtpPort;
const dns = await startDns();
dns.mailDomain(RCPT_DOMAIN);

// ---- ceiling 1: RSA-2048 signatures ---------------------------------------------------------------
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
let signs = 0;
const s0 = performance.now();
while (performance.now() - s0 < 2000) {
  sign("sha256", Buffer.from(`data ${signs}`), privateKey);
  signs++;
}
const signRate = signs / ((performance.now() - s0) / 1000);
const cryptoKey = await crypto.subtle.importKey("pkcs8", privateKey.export({ type: "pkcs8", format: "der" }), { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["sign"]);
let subtleSigns = 0;
const p0 = performance.now();
while (performance.now() - p0 < 2000) {
  await Promise.all(Array.from({ length: 64 }, (_, i) => crypto.subtle.sign("RSASSA-PKCS1-v1_5", cryptoKey, Buffer.from(`data ${i}`))));
  subtleSigns += 64;
}
const subtleRate = subtleSigns / ((performance.now() - p0) / 1000);

// ---- ceiling 2: smtp-connection to the same sink, 10 reused connections --------------------------
const sample = toSmtpData(toWire(composeAlternative({
  messageId: "ceiling@mailsvc.bench",
  date: new Date(),
  from: { name: "Bench", email: `news@${SENDER_DOMAIN}` },
  to: { email: `x@${RCPT_DOMAIN}` },
  subject: "Hello there",
  html: html.replaceAll(/\{\{[^}]*\}\}/g, "Ann"),
  text: htmlToText(html.replaceAll(/\{\{[^}]*\}\}/g, "Ann")),
})));
let smtpSent = 0;
const c0 = performance.now();
await Promise.all(
  Array.from({ length: 10 }, async () => {
    const r = await SmtpClient.open({ host: "127.0.0.1", port: smtpPort, clientName: "ceiling.bench" });
    if (!r.ok) throw new Error(`ceiling connection failed: ${r.result.reply}`);
    while (performance.now() - c0 < 3000) {
      const res = await r.client.send(`b@${SENDER_DOMAIN}`, `c${smtpSent}@${RCPT_DOMAIN}`, sample);
      if (res.kind !== "delivered") throw new Error(res.reply);
      smtpSent++;
    }
    r.client.close();
  }),
);
const smtpRate = smtpSent / ((performance.now() - c0) / 1000);
await fetch(sinkUrl + "/reset");

// ---- the service, 100k contacts through CSV import --------------------------------------------
const dbPath = join(tempDir(), "bench.db");
const svcPort = await freePort();
// BENCH_BIN=./mailsvc: the compiled binary (what users run; no dashboard bundling at start-up).
const svcCmd = process.env.BENCH_BIN
  ? [join(ROOT, process.env.BENCH_BIN), "serve"]
  : [
      process.execPath,
      ...(process.env.BENCH_SMOL ? ["--smol"] : []),
      // BENCH_PROFILE=<dir>: the server writes a CPU profile (markdown) there on exit.
      ...(process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []),
      // BENCH_HEAP_PROFILE=<dir>: the server writes a heap profile (markdown) there on exit.
      ...(process.env.BENCH_HEAP_PROFILE ? ["--heap-prof", "--heap-prof-md", `--heap-prof-dir=${process.env.BENCH_HEAP_PROFILE}`] : []),
      join(ROOT, "src/main.ts"),
      "serve",
    ];
const svcProc = Bun.spawn(svcCmd, {
  env: {
    ...childEnv(),
    ...(await engineEnv(dbPath)),
    MAILSVC_HOST: "127.0.0.1",
    MAILSVC_PORT: String(svcPort),
    MAILSVC_LOG_REQUESTS: "false",
    MAILSVC_RATE_LIMIT: "100000000",
    MAILSVC_DNS_SERVERS: dns.server,
    MAILSVC_MX_PORT: String(smtpPort),
    MAILSVC_HOSTNAME: "mailsvc.bench",
  },
  stdout: "ignore",
  stderr: "inherit",
});
const svcUrl = `http://127.0.0.1:${svcPort}`;
await waitFor(svcUrl + "/config");
const api = makeApi(svcUrl);
const acct = await createAccount(api, "bench");
const key = acct.secretKey;
await addVerifiedDomain(api, dns, acct, SENDER_DOMAIN);
const projectRes = await api(`/users/@me/projects/${acct.projectId}`, { method: "PATCH", cookie: acct.cookie, body: { tracking: "ENABLED" } });
if (projectRes.status !== 200) console.error(`tracking ENABLED: ${projectRes.status} (MARKETING mail is tracked by default anyway)`);

const i0 = Date.now();
const PER_FILE = 50_000; // the import takes files up to 5 MB
for (let start = 0; start < N; start += PER_FILE) {
  const lines = ["email,firstName,company"];
  for (let i = start; i < Math.min(N, start + PER_FILE); i++) lines.push(`u${i}@${RCPT_DOMAIN},User${i},Company ${i % 97}`);
  const fd = new FormData();
  fd.append("file", new File([lines.join("\n")], "contacts.csv", { type: "text/csv" }));
  const up = await api("/contacts/import", { key, method: "POST", raw: fd });
  if (up.status !== 202) throw new Error(`import: ${up.status} ${up.text}`);
  for (;;) {
    const s = await api(`/contacts/import/${up.body.jobId}`, { key });
    if (s.body.state === "completed") break;
    if (s.body.state === "failed") throw new Error(`import failed: ${JSON.stringify(s.body)}`);
    await Bun.sleep(200);
  }
}
const importSeconds = (Date.now() - i0) / 1000;

const probe = async () => {
  const t = performance.now();
  const r = await fetch(svcUrl + "/v1/track", {
    method: "POST",
    headers: { authorization: `Bearer ${acct.publicKey}`, "content-type": "application/json" },
    body: JSON.stringify({ email: `probe${Math.floor(Math.random() * 500)}@probe.test`, event: "bench.probe" }),
  });
  await r.arrayBuffer();
  if (!r.ok) throw new Error(`probe failed: ${r.status}`);
  return performance.now() - t;
};
for (let i = 0; i < 50; i++) await probe();

const created = await api("/campaigns", {
  key,
  body: { name: "Bench", subject: 'Hello {{firstName ?? "there"}}, your weekly news', body: html, from: `news@${SENDER_DOMAIN}`, fromName: "Bench News", type: "MARKETING", audienceType: "ALL" },
});
if (created.status !== 201) throw new Error(`create: ${created.status} ${created.text}`);
const campaignId = created.body.data.id as string;

let rssMax = rssMb(svcProc.pid);
const rssIdle = rssMax;
// The peak, and its split into anonymous / file-backed / shared memory read at that moment.
let rssPeakParts = rssParts(svcProc.pid);
let rssPeakMaps = smapsTop(svcProc.pid);
let rssPeakAt = 0;
let tStart = Date.now();
const rssBySecond: number[] = []; // the largest sample of each second since the send
const rssTimer = setInterval(() => {
  const rss = rssMb(svcProc.pid);
  const sec = Math.floor((Date.now() - tStart) / 1000);
  rssBySecond[sec] = Math.max(rssBySecond[sec] ?? 0, rss);
  if (rss > rssMax) {
    rssMax = rss;
    rssPeakAt = (Date.now() - tStart) / 1000;
    rssPeakParts = rssParts(svcProc.pid);
    rssPeakMaps = smapsTop(svcProc.pid);
  }
}, 100);
const latencies: number[] = [];
let running = true;
const prober = (async () => {
  while (running) {
    latencies.push(await probe());
    await Bun.sleep(10);
  }
})();

const cpuServer0 = threadCpu(svcProc.pid);
const cpuSink0 = threadCpu(sinkProc.pid);
const t0 = Date.now();
tStart = t0;
const sent = await api(`/campaigns/${campaignId}/send`, { key, method: "POST" });
if (sent.status !== 200) throw new Error(`send: ${sent.status} ${sent.text}`);
// The campaign row: a read-only SQLite connection, or (PostgreSQL) one pg connection of its own.
const ro = benchAdminUrl() ? null : new Database(dbPath, { readonly: true });
const roPg = benchAdminUrl() ? new pg.Pool({ connectionString: await benchDatabaseUrl(dbPath), max: 1 }) : null;
async function campaignRow<T>(columns: string): Promise<T | undefined> {
  if (ro) return ro.query<T, [string]>(`SELECT ${columns} FROM campaigns WHERE id = ?`).get(campaignId) ?? undefined;
  const r = await roPg!.query(`SELECT ${columns} FROM campaigns WHERE id = $1`, [campaignId]);
  const row = r.rows[0];
  // int8 arrives as text through a plain pg pool
  return row ? (Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v])) as T) : undefined;
}
let fanoutMs = NaN;
let stats = await sinkStats();
const deadline = Date.now() + Number(process.env.BENCH_DEADLINE_S ?? 600) * 1000;
while (Date.now() < deadline) {
  await Bun.sleep(200);
  if (Number.isNaN(fanoutMs)) {
    const row = await campaignRow<{ fanout_done: number; sent_at: number; updated_at: number }>("fanout_done, sent_at, updated_at");
    if (row?.fanout_done) fanoutMs = row.updated_at - row.sent_at;
  }
  stats = await sinkStats();
  // Progress every ~10 s: messages delivered so far and the server's CPU per thread (a rate that falls as the campaign goes on shows here).
  if (Math.floor((Date.now() - t0) / 10_000) !== Math.floor((Date.now() - 200 - t0) / 10_000)) {
    const cpu = threadCpuDelta(cpuServer0, threadCpu(svcProc.pid));
    console.error(`  ${((Date.now() - t0) / 1000).toFixed(0)} s: ${fmt(stats.count)} delivered; RSS ${rssMb(svcProc.pid)} MB (max ${rssMax}); server CPU so far: ${cpu}`);
  }
  if (stats.count >= N) break;
}
// The last outcomes commit just after the sink has the last message, and the SENT check runs in a short window
// after them: wait (up to 10 s) for the campaign to leave SENDING before reading its status.
const readStatus = () => campaignRow<{ status: string; total_recipients: number }>("status, total_recipients");
let status = await readStatus();
for (const until = Date.now() + 10_000; status?.status === "SENDING" && Date.now() < until; status = await readStatus()) await Bun.sleep(100);
ro?.close();
await roPg?.end();
running = false;
await prober;
clearInterval(rssTimer);
const cpuServer = threadCpuDelta(cpuServer0, threadCpu(svcProc.pid));
const cpuSink = threadCpuDelta(cpuSink0, threadCpu(sinkProc.pid));
const elapsed = (stats.lastAt - t0) / 1000;
const rate = stats.count / elapsed;
latencies.sort((a, b) => a - b);
const pct = (p: number) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))]! : 0).toFixed(1);

svcProc.kill("SIGTERM");
await svcProc.exited;
await dropBenchDatabase(dbPath);
sinkProc.kill();
await dns.close();

const ratio = rate / sendFigure;
if (benchAdminUrl()) console.log(`engine: PostgreSQL (BENCH_DATABASE_URL; the /v1/send comparison runs on SQLite)`);
console.log(`RSA-2048 sign, crypto.sign + KeyObject, 1 core      ${fmt(signRate)} /s          (ceiling)`);
console.log(`RSA-2048 sign, crypto.subtle (Bun thread pool)      ${fmt(subtleRate)} /s          (ceiling of the engine's signer)`);
console.log(`smtp-connection -> sink, 10 reused connections       ${fmt(smtpRate)} msg/s      (ceiling, ${(sample.length / 1024).toFixed(1)} KB message)`);
console.log(`scripts/bench/send.ts /v1/send end to end            ${Number.isNaN(sendFigure) ? "not run" : fmt(sendFigure) + " msg/s"}   (same run)`);
console.log(`import of ${fmt(N)} contacts (CSV, 2 files): ${importSeconds.toFixed(1)} s`);
console.log(`fan-out of ${fmt(status?.total_recipients ?? 0)} recipients: ${(fanoutMs / 1000).toFixed(2)} s  (bar < 5 s: ${fanoutMs < 5000 ? "PASS" : "FAIL"})`);
console.log(`campaign end to end: ${fmt(stats.count)} messages (${fmt(stats.unique)} recipients, ${stats.duplicates} duplicates, ${(stats.bytes / Math.max(1, stats.count) / 1024).toFixed(1)} KB avg) in ${elapsed.toFixed(2)} s = ${fmt(rate)} msg/s, campaign ${status?.status}  (bar >= 1,000: ${rate >= 1000 ? "PASS" : "FAIL"}; ${Number.isNaN(ratio) ? "no /v1/send figure" : `${ratio.toFixed(2)}x /v1/send (bar >= 1.25x: ${ratio >= 1.25 ? "PASS" : "FAIL"})`})`);
console.log(`POST /v1/track during the campaign: p50 ${pct(50)} ms, p99 ${pct(99)} ms over ${latencies.length} requests  (bar p99 < 25 ms: ${Number(pct(99)) < 25 ? "PASS" : "FAIL"})`);
console.log(`server RSS max during the campaign: ${rssMax} MB (idle before: ${rssIdle} MB)  (bar < 160 MB: ${rssMax < 160 ? "PASS" : "FAIL"})`);
console.log(`  peak ${rssPeakAt.toFixed(1)} s after the send; largest RSS of each second: ${rssBySecond.map((v) => v ?? "-").join(" ")}`);
console.log(`  RSS at its peak: anon ${rssPeakParts.anon} MB, file ${rssPeakParts.file} MB, shmem ${rssPeakParts.shmem} MB`);
console.log(`  anonymous memory at the peak, largest mappings:\n    ${rssPeakMaps}`);
console.log(`CPU during the campaign (per thread): server ${cpuServer}; sink ${cpuSink}`);
process.exit(0);

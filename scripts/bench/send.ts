// Delivery throughput (issue 5): 20,000 recipients (400 POST /v1/send x 50) with RSA-2048 DKIM and a
// 20 KB HTML body, delivered to a local sink through the real path (dns2 MX lookup, STARTTLS,
// DKIM signing, outbox, SMTP). Printed beside two ceilings measured in the same run: the raw RSA
// sign rate on one core and the raw smtp-connection rate to the same sink. While the send runs,
// /v1/track latency is probed and the server's RSS sampled.
//   bun scripts/bench/send.ts [requests=400] [perRequest=50] [--webhooks]
// --webhooks (issue 18): one outbound webhook endpoint (a local receiver in this process) subscribed
// to every event ("*"): the delivery rate should stay within 10% of the run without it. It runs the
// send BENCH_ROUNDS times (default 3) each way, alternating (without, with), each a fresh server,
// and prints the ratio of the summed rates beside every pair; BENCH_NO_DEFER=1 adds a third run
// per round with MAILSVC_WEBHOOK_MAX_DEFER=0 (webhooks never wait for the mail). --single: one run.
// Knobs (environment): BENCH_PROFILE=<dir> / BENCH_HEAP_PROFILE=<dir> (server CPU / heap profile,
// markdown), BENCH_LOG=<file> (server log), BENCH_BIN=./mailsvc (run the compiled binary instead of src/main.ts), BENCH_SMOL=1 (server runs with --smol),
// BENCH_HTML=<bytes> (HTML body size, default ~20 KB), SINK_NO_TLS=1 (sink without STARTTLS).
import { generateKeyPairSync, sign } from "node:crypto";
import { join } from "node:path";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { createAccount, makeApi } from "../../test/support/server";
import { SmtpClient } from "../../src/mail/smtp/smtp-client";
import { composeAlternative, toWire } from "../../src/mail/message/compose";
import { toSmtpData } from "../../src/mail/smtp/smtp-data";
import { htmlToText } from "../../src/mail/message/html-text";
import { fmt, freePort, ROOT, rssMb, rssParts, tempDir, threadCpu, threadCpuDelta, waitFor } from "./lib";

const ARGS = process.argv.slice(2).filter((a) => !a.startsWith("--"));
const WEBHOOKS = process.argv.includes("--webhooks");

// --webhooks without --single: alternate runs with and without webhooks and compare them.
if (WEBHOOKS && !process.argv.includes("--single")) {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const variants = [
    { name: "without webhooks", args: [] as string[], env: {} as Record<string, string> },
    { name: "with webhooks", args: ["--webhooks"], env: {} },
    ...(process.env.BENCH_NO_DEFER ? [{ name: "with webhooks, MAILSVC_WEBHOOK_MAX_DEFER=0", args: ["--webhooks"], env: { MAILSVC_WEBHOOK_MAX_DEFER: "0" } }] : []),
  ];
  const rates = variants.map(() => [] as number[]);
  let last = "";
  for (let r = 0; r < rounds; r++) {
    for (const [k, v] of variants.entries()) {
      const child = Bun.spawn([process.execPath, import.meta.path, ...ARGS, ...v.args, "--single"], { env: { ...process.env, ...v.env }, stdout: "pipe", stderr: "inherit" });
      const out = await new Response(child.stdout).text();
      if ((await child.exited) !== 0) throw new Error(`${v.name}: the run failed\n${out}`);
      const m = /= ([\d,]+) msg\/s/.exec(out);
      if (!m) throw new Error(`${v.name}: no rate in\n${out}`);
      rates[k]!.push(Number(m[1]!.replace(/,/g, "")));
      console.log(`round ${r + 1}, ${v.name}: ${m[1]} msg/s${v.args.length ? "; " + (out.split("\n").find((l) => l.startsWith("webhooks:")) ?? "") : ""}`);
      if (k === 1) last = out;
    }
  }
  const sum = (l: number[]) => l.reduce((a, b) => a + b, 0);
  console.log(`\nthe last run with webhooks, in full:\n${last}`);
  for (let k = 1; k < variants.length; k++) {
    const ratio = (sum(rates[k]!) / sum(rates[0]!)) * 100;
    const pairs = rates[k]!.map((x, i) => `${((x / rates[0]![i]!) * 100).toFixed(0)}%`).join(", ");
    console.log(`${variants[k]!.name}: ${ratio.toFixed(1)}% of the rate without (${fmtList(rates[k]!)} vs ${fmtList(rates[0]!)} msg/s; pairs ${pairs})${k === 1 ? `  [bar >= 90%: ${ratio >= 90 ? "PASS" : "FAIL"}]` : ""}`);
  }
  process.exit(0);
}
function fmtList(l: number[]): string {
  return l.map((x) => x.toLocaleString("en-US")).join(" / ");
}
const REQUESTS = Number(ARGS[0] ?? 400);
const PER = Number(ARGS[1] ?? 50);
const TOTAL = REQUESTS * PER;
const CONCURRENCY = 8;
const RCPT_DOMAIN = "bench-rcpt.test";
const SENDER_DOMAIN = "bench-sender.test";

// ---- fixtures ----------------------------------------------------------------------------------
function html20k(): string {
  const para = (i: number) =>
    `<tr><td style="padding:8px 16px;font-family:Arial,sans-serif;font-size:14px;color:#333">` +
    `<h3 style="margin:0 0 6px">Section ${i}: what is new for {{ data.company ?? "you" }}</h3>` +
    `<p style="margin:0">Hello {{firstName ?? "there"}}, here is paragraph ${i} of this newsletter with a ` +
    `<a href="https://example.com/articles/${i}?utm_source=mail&amp;utm_campaign=bench">link to article ${i}</a> and some text.</p></td></tr>\n`;
  let body = "";
  for (let i = 0; body.length < Number(process.env.BENCH_HTML ?? 19_500); i++) body += para(i);
  return `<!doctype html><html><head><meta charset="utf-8"><title>News</title></head><body><table width="100%">${body}</table>` +
    `<p style="font-size:11px;color:#999">You receive this because you signed up. {{email}}</p></body></html>`;
}

const sinkPort = await freePort();
const sinkProc = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/send-sink.ts")], {
  env: { ...process.env, PORT: String(sinkPort) },
  stdout: "ignore",
  stderr: "inherit",
});
const sinkUrl = `http://127.0.0.1:${sinkPort}`;
await waitFor(sinkUrl + "/");
type SinkStats = { smtpPort: number; count: number; bytes: number; firstAt: number; lastAt: number; unique: number; duplicates: number };
const sinkStats = async (): Promise<SinkStats> => (await fetch(sinkUrl + "/")).json() as Promise<SinkStats>;
const smtpPort = (await sinkStats()).smtpPort;

const dns = await startDns();
dns.mailDomain(RCPT_DOMAIN);

const html = html20k();

// ---- ceiling 1: RSA-2048 signatures on one core ---------------------------------------------
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
let signs = 0;
const s0 = performance.now();
while (performance.now() - s0 < 2000) {
  sign("sha256", Buffer.from(`data ${signs}`), privateKey);
  signs++;
}
const signRate = signs / ((performance.now() - s0) / 1000);
// What the engine uses: WebCrypto, which Bun runs on its native thread pool.
const cryptoKey = await crypto.subtle.importKey("pkcs8", privateKey.export({ type: "pkcs8", format: "der" }), { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["sign"]);
let subtleSigns = 0;
const p0 = performance.now();
while (performance.now() - p0 < 2000) {
  await Promise.all(Array.from({ length: 64 }, (_, i) => crypto.subtle.sign("RSASSA-PKCS1-v1_5", cryptoKey, Buffer.from(`data ${i}`))));
  subtleSigns += 64;
}
const subtleRate = subtleSigns / ((performance.now() - p0) / 1000);

// ---- ceiling 2: smtp-connection to the same sink, 10 reused connections, same-size message ----
const sample = toSmtpData(toWire(composeAlternative({
  messageId: "ceiling@mailsvc.bench",
  date: new Date(),
  from: { name: "Bench", email: `news@${SENDER_DOMAIN}` },
  to: { email: `x@${RCPT_DOMAIN}` },
  subject: "Hello there",
  html: html.replaceAll(/\{\{[^}]*\}\}/g, "Ann"),
  text: htmlToText(html.replaceAll(/\{\{[^}]*\}\}/g, "Ann")),
})));
const CEIL_SECONDS = 3;
let smtpSent = 0;
const c0 = performance.now();
await Promise.all(
  Array.from({ length: 10 }, async () => {
    const r = await SmtpClient.open({ host: "127.0.0.1", port: smtpPort, clientName: "ceiling.bench" });
    if (!r.ok) throw new Error(`ceiling connection failed: ${r.result.reply}`);
    while (performance.now() - c0 < CEIL_SECONDS * 1000) {
      const res = await r.client.send(`b@${SENDER_DOMAIN}`, `c${smtpSent}@${RCPT_DOMAIN}`, sample);
      if (res.kind !== "delivered") throw new Error(res.reply);
      smtpSent++;
    }
    r.client.close();
  }),
);
const smtpRate = smtpSent / ((performance.now() - c0) / 1000);
await fetch(sinkUrl + "/reset");

// ---- the service ------------------------------------------------------------------------------
// BENCH_PROFILE=<dir> writes a CPU profile (markdown) of the server there; BENCH_HEAP_PROFILE=<dir> an allocation profile.
const profileDir = process.env.BENCH_PROFILE;
const heapDir = process.env.BENCH_HEAP_PROFILE;
const svcPort = await freePort();
const svcProc = Bun.spawn(
  process.env.BENCH_BIN
    ? [process.env.BENCH_BIN, "serve"]
    : [
        process.execPath,
        ...(process.env.BENCH_SMOL ? ["--smol"] : []),
        ...(profileDir ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${profileDir}`] : []),
        ...(heapDir ? ["--heap-prof", "--heap-prof-md", `--heap-prof-dir=${heapDir}`] : []),
        join(ROOT, "src/main.ts"),
        "serve",
      ],
  {
    env: {
      ...process.env,
      MAILSVC_DB: join(tempDir(), "bench.db"),
      MAILSVC_HOST: "127.0.0.1",
      MAILSVC_PORT: String(svcPort),
      MAILSVC_LOG_REQUESTS: "false",
      MAILSVC_RATE_LIMIT: "100000000",
      MAILSVC_DNS_SERVERS: dns.server,
      MAILSVC_MX_PORT: String(smtpPort),
      MAILSVC_HOSTNAME: "mailsvc.bench",
      ...(WEBHOOKS ? { MAILSVC_ALLOW_PRIVATE_WEBHOOKS: "true" } : {}),
    },
    stdout: process.env.BENCH_LOG ? Bun.file(process.env.BENCH_LOG) : "ignore",
    stderr: "inherit",
  },
);
const svc = { url: `http://127.0.0.1:${svcPort}`, pid: svcProc.pid, kill: async () => { svcProc.kill("SIGTERM"); await svcProc.exited; } };
await waitFor(svc.url + "/config");
const api = makeApi(svc.url);
const acct = await createAccount(api, "bench");
await addVerifiedDomain(api, dns, acct, SENDER_DOMAIN);

// --webhooks: a receiver that answers 200 and counts what it gets, subscribed to every event.
const hooks = { count: 0, types: new Map<string, number>(), lastAt: 0, atLastMessage: -1 };
const receiver = WEBHOOKS
  ? Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const body = (await req.json()) as { type: string };
        hooks.count++;
        hooks.lastAt = Date.now();
        hooks.types.set(body.type, (hooks.types.get(body.type) ?? 0) + 1);
        return new Response("ok");
      },
    })
  : null;
if (receiver) {
  const r = await api("/webhook-endpoints", { key: acct.secretKey, body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ["*"] } });
  if (r.status !== 201) throw new Error(`webhook endpoint: ${r.status} ${r.text}`);
}

// Is /v1/track there (issue 3)? Otherwise probe another keyed endpoint.
const trackProbe = (await api("/v1/track", { key: acct.publicKey, body: { email: `probe@${RCPT_DOMAIN}`, event: "bench.probe" } })).status === 200;
let probeSeq = 0;
const probe = async () => {
  const t = performance.now();
  const r = trackProbe
    ? await fetch(svc.url + "/v1/track", {
        method: "POST",
        headers: { authorization: `Bearer ${acct.publicKey}`, "content-type": "application/json" },
        body: JSON.stringify({ email: `probe${probeSeq++ % 500}@${RCPT_DOMAIN}`, event: "bench.probe", data: { n: probeSeq } }),
      })
    : await fetch(svc.url + "/v1/key", { headers: { authorization: `Bearer ${acct.secretKey}` } });
  await r.arrayBuffer();
  if (!r.ok) throw new Error(`probe failed: ${r.status}`);
  return performance.now() - t;
};
for (let i = 0; i < 50; i++) await probe(); // warm-up

const headers = { authorization: `Bearer ${acct.secretKey}`, "content-type": "application/json" };
let rssMax = rssMb(svc.pid);
const rssIdle = rssMax;
let rssAtMax = rssParts(svc.pid);
const rssTimeline: number[] = [];
let rssTick = 0;
const rssTimer = setInterval(() => {
  const v = rssMb(svc.pid);
  if (v > rssMax) {
    rssAtMax = rssParts(svc.pid);
    if (process.env.BENCH_SMAPS) require("node:fs").copyFileSync(`/proc/${svc.pid}/smaps`, process.env.BENCH_SMAPS);
  }
  rssMax = Math.max(rssMax, v);
  if (++rssTick % Number(process.env.BENCH_RSS_EVERY ?? 20) === 0) rssTimeline.push(v);
}, 100);
const latencies: number[] = [];
const apiPhase: number[] = [];
const deliveryPhase: number[] = [];
let accepting = true;
let sending = true;
const prober = (async () => {
  while (sending) {
    const ms = await probe();
    latencies.push(ms);
    (accepting ? apiPhase : deliveryPhase).push(ms);
    await Bun.sleep(10);
  }
})();

const cpu0 = { server: threadCpu(svcProc.pid), sink: threadCpu(sinkProc.pid), bench: threadCpu(process.pid) };
const t0 = Date.now();
let next = 0;
let apiErrors = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (next < REQUESTS) {
      const i = next++;
      const to = Array.from({ length: PER }, (_, j) => ({ email: `u${i * PER + j}@${RCPT_DOMAIN}`, name: `User ${i * PER + j}` }));
      const r = await fetch(svc.url + "/v1/send", {
        method: "POST",
        headers,
        body: JSON.stringify({ to, from: { name: "Bench News", email: `news@${SENDER_DOMAIN}` }, subject: 'Hello {{firstName ?? "there"}}, your weekly news', body: html, data: { firstName: "Ann", company: "Acme" } }),
      });
      const text = await r.text();
      if (r.status !== 200) {
        apiErrors++;
        if (apiErrors < 3) console.error(`send failed: ${r.status} ${text.slice(0, 300)}`);
      }
    }
  }),
);
const accepted = Date.now() - t0;
accepting = false;

let stats = await sinkStats();
const deadline = Date.now() + 180_000;
while (stats.count < TOTAL - apiErrors * PER && Date.now() < deadline) {
  await Bun.sleep(100);
  stats = await sinkStats();
}
sending = false;
hooks.atLastMessage = hooks.count;
await prober;
// Webhooks: every email.sent and email.delivery of the send (2 per recipient) should arrive.
const hookDeadline = Date.now() + 120_000;
while (WEBHOOKS && hooks.count < 2 * stats.count && Date.now() < hookDeadline) await Bun.sleep(100);
clearInterval(rssTimer);
const cpuUsed = {
  server: threadCpuDelta(cpu0.server, threadCpu(svcProc.pid)),
  sink: threadCpuDelta(cpu0.sink, threadCpu(sinkProc.pid)),
  bench: threadCpuDelta(cpu0.bench, threadCpu(process.pid)),
};
const elapsed = (stats.lastAt - t0) / 1000;
const rate = stats.count / elapsed;

latencies.sort((a, b) => a - b);
apiPhase.sort((a, b) => a - b);
deliveryPhase.sort((a, b) => a - b);
const pctOf = (l: number[], p: number) => (l.length ? l[Math.min(l.length - 1, Math.floor((l.length * p) / 100))]! : 0).toFixed(1);
const pct = (p: number) => pctOf(latencies, p);

await svc.kill();
sinkProc.kill();
await dns.close();

console.log(`RSA-2048 sign, crypto.sign + KeyObject, 1 core      ${fmt(signRate)} /s          (ceiling)`);
console.log(`RSA-2048 sign, crypto.subtle (Bun thread pool)      ${fmt(subtleRate)} /s          (ceiling of the engine's signer)`);
console.log(`smtp-connection -> sink, 10 reused connections       ${fmt(smtpRate)} msg/s      (ceiling, ${(sample.length / 1024).toFixed(1)} KB message)`);
console.log(`POST /v1/send ${REQUESTS} x ${PER} = ${fmt(TOTAL)} recipients accepted in ${(accepted / 1000).toFixed(2)} s (${fmt((TOTAL / accepted) * 1000)} recipients/s), ${apiErrors} errors`);
console.log(`end to end: ${fmt(stats.count)} messages (${fmt(stats.unique)} recipients, ${stats.duplicates} duplicates, ${(stats.bytes / stats.count / 1024).toFixed(1)} KB avg) in ${elapsed.toFixed(2)} s = ${fmt(rate)} msg/s  (bar >= 1,000: ${rate >= 1000 ? "PASS" : "FAIL"})`);
console.log(`${trackProbe ? "POST /v1/track" : "GET /v1/key (no /v1/track on this build)"} during the send: p50 ${pct(50)} ms, p99 ${pct(99)} ms over ${latencies.length} requests (while the API accepted the 400 sends: p99 ${pctOf(apiPhase, 99)} ms over ${apiPhase.length}; afterwards, while delivering: p99 ${pctOf(deliveryPhase, 99)} ms over ${deliveryPhase.length})  (bar p99 < 25 ms: ${Number(pct(99)) < 25 ? "PASS" : "FAIL"})`);
console.log(`server RSS max during the send: ${rssMax} MB (at the peak: anonymous ${rssAtMax.anon} MB, file-backed ${rssAtMax.file} MB, shared ${rssAtMax.shmem} MB; idle before: ${rssIdle} MB; every 2 s: ${rssTimeline.join(" ")})  (bar < 200 MB: ${rssMax < 200 ? "PASS" : "FAIL"})`);
console.log(`CPU from the first send to the last webhook/message (per thread): server ${cpuUsed.server}; sink ${cpuUsed.sink}; this process (load${WEBHOOKS ? ", webhook receiver" : ""}) ${cpuUsed.bench}`);
if (WEBHOOKS) {
  console.log(`webhooks: ${fmt(hooks.count)} POSTs received (${[...hooks.types].map(([t, n]) => `${t} ${fmt(n)}`).join(", ")}), ${fmt(hooks.atLastMessage)} of them by the end of the send, the last ${((hooks.lastAt - stats.lastAt) / 1000).toFixed(2)} s after the last message; ${fmt(hooks.count / ((hooks.lastAt - t0) / 1000))} webhooks/s`);
  receiver?.stop(true);
}
if (process.env.BENCH_VERBOSE) console.log(`probe latencies while the API accepted (ms): ${apiPhase.map((x) => x.toFixed(1)).join(" ")}`);
process.exit(0);

// SMTP submission throughput (issue 34) beside POST /v1/send, in the same run against the same
// server: 50 connections each way, a 20 KB HTML message to one recipient per message, RSA-2048 DKIM,
// delivered to a local sink (its own process) through the real path (dns2 MX lookup, STARTTLS to the
// sink, signing, outbox). /v1/send: 50 keep-alive HTTP connections, one POST per message. Submission:
// 50 smtp-connection sessions (AUTH PLAIN once, over loopback without TLS as a local app would; with
// BENCH_TLS=1 over STARTTLS), MAIL/RCPT/DATA per message. Each phase: messages accepted per second
// (the client's 200 / 250) and end to end (first request to the last message at the sink).
// The bar: submission end to end >= 0.7x /v1/send.
//   bun scripts/bench/submission.ts [messagesPerConnection=100] [connections=50]
// Knobs: BENCH_ROUNDS (default 2; the order alternates per round), BENCH_ORDER=smtp-first (the first round's SMTP
// phase first), BENCH_TLS=1, BENCH_SERVER_LOG=<file>.
import MailComposer from "nodemailer/lib/mail-composer";
import SMTPConnection from "nodemailer/lib/smtp-connection";
import { join } from "node:path";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { createAccount, makeApi } from "../../test/support/server";
import { makeCa } from "../../test/support/certs";
import { fmt, freePort, ROOT, startMailsvc, threadCpu, threadCpuDelta, waitFor } from "./lib";

const PER_CONNECTION = Number(process.argv[2] ?? 100);
const CONNECTIONS = Number(process.argv[3] ?? 50);
const TOTAL = PER_CONNECTION * CONNECTIONS;
const RCPT_DOMAIN = "bench-rcpt.test";
const SENDER_DOMAIN = "bench-sender.test";
const FROM = `news@${SENDER_DOMAIN}`;
const TLS = !!process.env.BENCH_TLS;

function html20k(): string {
  const para = (i: number) =>
    `<tr><td style="padding:8px 16px;font-family:Arial,sans-serif;font-size:14px;color:#333">` +
    `<h3 style="margin:0 0 6px">Section ${i}: what is new this week</h3>` +
    `<p style="margin:0">Hello there, here is paragraph ${i} of this message with a ` +
    `<a href="https://example.com/articles/${i}?utm_source=mail&amp;utm_campaign=bench">link to article ${i}</a> and some text.</p></td></tr>\n`;
  let body = "";
  for (let i = 0; body.length < 19_500; i++) body += para(i);
  return `<!doctype html><html><head><meta charset="utf-8"><title>News</title></head><body><table width="100%">${body}</table></body></html>`;
}
const html = html20k();
const subject = "Your weekly news";

// ---- the sink, DNS and the service --------------------------------------------------------------
const sinkPort = await freePort();
const sinkProc = Bun.spawn([process.execPath, join(ROOT, "scripts/bench/send-sink.ts")], { env: { ...process.env, PORT: String(sinkPort) }, stdout: "ignore", stderr: "inherit" });
const sinkUrl = `http://127.0.0.1:${sinkPort}`;
await waitFor(sinkUrl + "/");
type SinkStats = { smtpPort: number; count: number; bytes: number; firstAt: number; lastAt: number; unique: number; duplicates: number };
const sinkStats = async (): Promise<SinkStats> => (await fetch(sinkUrl + "/")).json() as Promise<SinkStats>;
const dns = await startDns();
dns.mailDomain(RCPT_DOMAIN);

const submissionPort = await freePort();
const ca = TLS ? makeCa() : null;
const cert = ca?.issue(["mailsvc.bench"]);
const svc = await startMailsvc({
  MAILSVC_DNS_SERVERS: dns.server,
  MAILSVC_MX_PORT: String((await sinkStats()).smtpPort),
  MAILSVC_HOSTNAME: "mailsvc.bench",
  MAILSVC_SUBMISSION_PORT: String(submissionPort),
  // A delivery the overloaded sink defers is retried within seconds, not minutes (both phases alike).
  MAILSVC_RETRY_SCHEDULE: "1s,2s,5s",
  ...(cert ? { MAILSVC_TLS_CERT: cert.certFile, MAILSVC_TLS_KEY: cert.keyFile } : {}),
});
const api = makeApi(svc.url);
const acct = await createAccount(api, "bench");
await addVerifiedDomain(api, dns, acct, SENDER_DOMAIN);

/** Each phase mails new addresses (new contacts), so no phase finds the contacts of another. */
let phaseNo = 0;

// ---- the two clients ----------------------------------------------------------------------------
const sendBody = (to: string) => JSON.stringify({ to, from: { name: "Bench News", email: FROM }, subject, body: html });
const headers = { authorization: `Bearer ${acct.secretKey}`, "content-type": "application/json" };

async function httpClient(conn: number, first: number, count: number): Promise<number> {
  let errors = 0;
  for (let i = 0; i < count; i++) {
    const r = await fetch(svc.url + "/v1/send", { method: "POST", headers, body: sendBody(`h${phaseNo}-${conn}-${first + i}@${RCPT_DOMAIN}`) });
    const text = await r.text();
    if (r.status !== 200 && ++errors < 3) console.error(`/v1/send: ${r.status} ${text.slice(0, 200)}`);
  }
  return errors;
}

// One message (HTML only, like the /v1/send body; the engine derives the text part either way), built once.
const raw = await new MailComposer({ from: { name: "Bench News", address: FROM }, to: `subscriber@${RCPT_DOMAIN}`, subject, html }).compile().build();

async function smtpClient(conn: number, first: number, count: number): Promise<number> {
  const c = new SMTPConnection({
    host: "127.0.0.1",
    port: submissionPort,
    secure: false,
    ignoreTLS: !TLS,
    requireTLS: TLS,
    tls: { ca: ca?.caPem, servername: "mailsvc.bench" },
    connectionTimeout: 10_000,
    socketTimeout: 120_000,
  } as never);
  c.on("error", () => {});
  await new Promise<void>((resolve, reject) => c.connect((err?: Error) => (err ? reject(err) : resolve())));
  await new Promise<void>((resolve, reject) => c.login({ user: "bench", pass: acct.secretKey } as never, (err: Error | null) => (err ? reject(err) : resolve())));
  let errors = 0;
  for (let i = 0; i < count; i++) {
    await new Promise<void>((resolve) =>
      c.send({ from: FROM, to: [`s${phaseNo}-${conn}-${first + i}@${RCPT_DOMAIN}`] } as never, raw, (err: any) => {
        if (err && ++errors < 3) console.error(`submission: ${err.response ?? err.message}`);
        resolve();
      }),
    );
  }
  c.quit();
  return errors;
}

interface Phase {
  name: string;
  accepted: number;
  acceptRate: number;
  endToEnd: number;
  errors: number;
  delivered: number;
  cpu: string;
  clientCpu: string;
}

async function phase(name: string, client: (conn: number, first: number, count: number) => Promise<number>): Promise<Phase> {
  phaseNo++;
  await fetch(sinkUrl + "/reset");
  const cpu0 = threadCpu(svc.pid);
  const client0 = threadCpu(process.pid);
  const t0 = Date.now();
  const errors = (await Promise.all(Array.from({ length: CONNECTIONS }, (_, conn) => client(conn, 0, PER_CONNECTION)))).reduce((a, b) => a + b, 0);
  const acceptedMs = Date.now() - t0;
  const want = TOTAL - errors;
  let stats = await sinkStats();
  const deadline = Date.now() + 300_000;
  while (stats.count < want && Date.now() < deadline) {
    await Bun.sleep(50);
    stats = await sinkStats();
  }
  if (stats.duplicates) console.error(`${name}: ${stats.duplicates} duplicates at the sink`);
  if (stats.count < want) console.error(`${name}: ${want - stats.count} messages missing at the sink; emails not DELIVERED: ${await undelivered()}`);
  const phaseResult = {
    name,
    accepted: want,
    acceptRate: (want / acceptedMs) * 1000,
    endToEnd: (stats.count / (stats.lastAt - t0)) * 1000,
    errors,
    delivered: stats.count,
    cpu: threadCpuDelta(cpu0, threadCpu(svc.pid)),
    clientCpu: threadCpuDelta(client0, threadCpu(process.pid)),
  };
  // The outbox settles (DELIVERED commits, webhooks of nothing) before the next phase starts.
  await Bun.sleep(1000);
  return phaseResult;
}

/** The project's emails by status, those not DELIVERED, with a sample reply. */
async function undelivered(): Promise<string> {
  const out: string[] = [];
  for (const status of ["PENDING", "DEFERRED", "FAILED", "BOUNCED", "SUPPRESSED"]) {
    const r = await api(`/emails?status=${status}&limit=1`, { key: acct.secretKey });
    if (r.body?.total) out.push(`${status} ${r.body.total} (${r.body.data?.[0]?.lastReply ?? "no reply"})`);
  }
  return out.join(", ") || "none";
}

// A short warm-up of both paths (JIT, the DKIM key cache, the sink's connections).
await Promise.all(Array.from({ length: 5 }, (_, c) => httpClient(1000 + c, 0, 4)));
await Promise.all(Array.from({ length: 5 }, (_, c) => smtpClient(1000 + c, 0, 4)));
for (let i = 0; i < 300 && (await sinkStats()).count < 40; i++) await Bun.sleep(100);
await Bun.sleep(1000);

// BENCH_ROUNDS rounds (default 2), the order alternating (the machine is shared: its load drifts within a run).
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const smtpFirst = process.env.BENCH_ORDER === "smtp-first";
const results: Phase[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const order = (round % 2 === 0) !== smtpFirst ? ["http", "smtp"] : ["smtp", "http"];
  for (const p of order) results.push(p === "http" ? await phase("POST /v1/send", httpClient) : await phase(`SMTP submission${TLS ? " (STARTTLS)" : ""}`, smtpClient));
}
const http = results.filter((r) => r.name.startsWith("POST"));
const smtp = results.filter((r) => r.name.startsWith("SMTP"));
const sum = (l: Phase[], k: "endToEnd" | "acceptRate") => l.reduce((a, r) => a + r[k], 0);

await svc.kill();
sinkProc.kill();
await dns.close();

console.log(`${CONNECTIONS} connections x ${PER_CONNECTION} messages = ${fmt(TOTAL)} per phase, ${(html.length / 1024).toFixed(1)} KB HTML, RSA-2048 DKIM, ${ROUNDS} round(s), phases in this order:`);
for (const r of results) {
  console.log(
    `${r.name.padEnd(32)} accepted ${fmt(r.acceptRate).padStart(6)} msg/s   end to end ${fmt(r.endToEnd).padStart(6)} msg/s   (${fmt(r.delivered)} delivered, ${r.errors} errors; CPU: server ${r.cpu}; clients ${r.clientCpu})`,
  );
}
const ratio = sum(smtp, "endToEnd") / sum(http, "endToEnd");
const acceptRatio = sum(smtp, "acceptRate") / sum(http, "acceptRate");
console.log(`ratio submission / /v1/send (summed over the rounds): end to end ${ratio.toFixed(2)}x, accepted ${acceptRatio.toFixed(2)}x  (bar end to end >= 0.7x: ${ratio >= 0.7 ? "PASS" : "FAIL"})`);
process.exit(0);

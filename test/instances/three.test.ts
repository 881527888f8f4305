// Three `serve` processes on one PostgreSQL database (issue 32, first and fifth bars): one DNS server,
// one SMTP sink. A 20,000-recipient campaign, /v1/send traffic spread over the three and 200 workflow
// executions waiting in a 5 s DELAY; kill -9 one instance mid-send, a second a few seconds later, start
// one back: every recipient gets its message once, the campaign ends SENT, nothing stays claimed. Then a
// rolling restart (SIGTERM one at a time) during a second campaign loses and duplicates nothing.
// PostgreSQL only: on SQLite one instance owns its file (several processes on one SQLite file are not a
// supported setup), so there is nothing to share.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { uploadCsv } from "../audience/support";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { startPeers, type Peers } from "../support/instances";
import { TEST_ENGINE } from "../support/postgres";
import { createAccount, type Account, type Api } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { must } from "../workflows/support";

const PG = TEST_ENGINE === "postgres";
const dir = mkdtempSync(join(tmpdir(), "mailsvc-three-"));
const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const CAMPAIGN = 20_000;
const SENDS = 300;
const DELAYS = 200;
const ROLLING = 3_000;
const LEASE_MS = 4_000;
/** Messages a kill -9 can leave delivered but not recorded (on the wire at that moment): per instance, per destination. */
const CONNECTIONS = 20;

const t0 = Date.now();
const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;

let dns: TestDns;
let sink: SmtpSink;
let peers: Peers;
let firstDone = false;

/** Copies per recipient at the sink, for the addresses on `domain`. */
function copies(domain: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const msg of sink.messages) for (const to of msg.to) if (to.endsWith("@" + domain)) m.set(to, (m.get(to) ?? 0) + 1);
  return m;
}

/** Nothing stays claimed once the leases end (live instances may hold a claim for a moment). */
async function expectNothingClaimed(): Promise<void> {
  const url = (await peers.databaseUrl())!;
  const rows = await waitFor(() => claimedRows(url), {
    until: (r) => r.emailsLocked === 0 && r.emailsSending === 0 && r.jobsLocked === 0 && r.webhooksLocked === 0,
    intervalMs: 100,
    timeoutMs: 2 * LEASE_MS,
    what: "no row claimed",
  });
  expect(rows).toEqual({ emailsLocked: 0, emailsSending: 0, jobsLocked: 0, webhooksLocked: 0, jobs: [] });
}

/** The Message-ID header of a raw message. */
function messageIdOf(raw: Buffer): string {
  const m = /^message-id:\s*(<[^>]+>)/im.exec(raw.subarray(0, 16_384).toString("latin1"));
  if (!m) throw new Error("a message without a Message-ID");
  return m[1]!;
}

/** Messages received per 10 s window from `from` on (a figure for the report). */
function rates(from: number): number[] {
  const out: number[] = [];
  for (const m of sink.messages) {
    const w = Math.floor((m.receivedAt - from) / 10_000);
    if (w >= 0) out[w] = (out[w] ?? 0) + 1;
  }
  return Array.from(out, (n) => n ?? 0);
}

async function importContacts(api: Api, acct: Account, emails: string[]) {
  const up = await uploadCsv(api, acct.secretKey, ["email", ...emails].join("\n"));
  expect(up.status).toBe(202);
  return up.body.jobId as string;
}

/** The same call on the next live instance; a connection refused (a killed instance) tries the next. */
async function anyLive<T>(call: (api: Api) => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await call(peers.next());
    } catch (e) {
      if (i > 10) throw e;
      await Bun.sleep(100);
    }
  }
}

async function campaignOf(acct: Account, id: string) {
  return (await anyLive((api) => api(`/campaigns/${id}`, { key: acct.secretKey }))).body;
}

/** Runs `fn` over `items` with at most `n` at once. */
async function pool<T>(items: T[], n: number, fn: (x: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  }));
}

async function claimedRows(url: string) {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const q = async (sql: string) => Number((await c.query(sql)).rows[0].n);
    return {
      emailsLocked: await q("SELECT count(*) AS n FROM emails WHERE locked_by IS NOT NULL"),
      emailsSending: await q("SELECT count(*) AS n FROM emails WHERE status = 'SENDING'"),
      jobsLocked: await q("SELECT count(*) AS n FROM jobs WHERE locked_by IS NOT NULL OR state = 'active'"),
      webhooksLocked: await q("SELECT count(*) AS n FROM webhook_deliveries WHERE locked_by IS NOT NULL"),
      // What holds a job, when one does (shown by a failure).
      jobs: (await c.query("SELECT type, state, locked_by, lease_until - $1::bigint AS lease_left_ms FROM jobs WHERE locked_by IS NOT NULL OR state = 'active' LIMIT 5", [Date.now()])).rows,
    };
  } finally {
    await c.end();
  }
}

let rollingAcct: Account;
let rollingImport: string;

test.skipIf(!PG)("three instances: kill -9 two mid-send, start one back: one message per recipient, campaign SENT, nothing stays claimed", async () => {
  dns = await startDns();
  cleanups.push(() => dns.close());
  for (const d of ["camp.test", "send.test", "wf.test", "roll.test"]) dns.mailDomain(d);
  sink = await startSmtpSink();
  cleanups.push(() => sink.close());

  const env = {
    MAILSVC_DB: join(dir, "three.db"),
    MAILSVC_DNS_SERVERS: dns.server,
    MAILSVC_MX_PORT: String(sink.port),
    MAILSVC_HOSTNAME: "mailsvc.three",
    MAILSVC_RATE_LIMIT: "1000000",
    MAILSVC_LEASE: `${LEASE_MS}ms`,
    MAILSVC_RETRY_SCHEDULE: "1s,2s",
    MAILSVC_CAMPAIGN_BATCH_SIZE: "1000",
  };
  peers = await startPeers(3, env, "three");
  cleanups.push(() => peers.close());
  console.log(`three instances up: ${elapsed()}`);

  // One project per kind of traffic (the campaign's audience is exactly its 20,000 contacts).
  const api0 = peers.peers[0]!.api!;
  const camp = await createAccount(api0, "Campaign");
  const send = await createAccount(peers.peers[1]!.api!, "Send");
  const wf = await createAccount(peers.peers[2]!.api!, "Workflow");
  rollingAcct = await createAccount(api0, "Rolling");
  await addVerifiedDomain(api0, dns, camp, "camp.sender.test");
  await addVerifiedDomain(peers.peers[1]!.api!, dns, send, "send.sender.test");
  await addVerifiedDomain(peers.peers[2]!.api!, dns, wf, "wf.sender.test");
  await addVerifiedDomain(api0, dns, rollingAcct, "roll.sender.test");

  const campRcpts = Array.from({ length: CAMPAIGN }, (_, i) => `c${i}@camp.test`);
  const sendRcpts = Array.from({ length: SENDS }, (_, i) => `s${i}@send.test`);
  const wfRcpts = Array.from({ length: DELAYS }, (_, i) => `w${i}@wf.test`);
  const rollRcpts = Array.from({ length: ROLLING }, (_, i) => `r${i}@roll.test`);
  const campImport = await importContacts(peers.next(), camp, campRcpts);
  rollingImport = await importContacts(peers.next(), rollingAcct, rollRcpts);
  await waitFor(async () => (await anyLive((api) => api(`/contacts/import/${campImport}`, { key: camp.secretKey }))).body.state, {
    until: (s) => s === "completed",
    intervalMs: 200,
    timeoutMs: 120_000,
    what: "the 20,000-contact import",
  });
  console.log(`20,000 contacts imported: ${elapsed()}`);

  // The workflow: event -> DELAY 5 s -> SEND_EMAIL.
  const key = wf.secretKey;
  const tpl = await must(api0("/templates", { key, body: { name: "T", subject: "Delayed {{email}}", body: "<p>hi</p>", from: "hi@wf.sender.test", type: "TRANSACTIONAL" } }), 201);
  const flow = await must(api0("/workflows", { key, body: { name: "Delay", triggerConfig: { eventName: "three-start" } } }), 201);
  const delay = await must(api0(`/workflows/${flow.id}/steps`, { key, body: { type: "DELAY", config: { amount: 5 / 60, unit: "minutes" } } }), 201);
  const sendStep = await must(api0(`/workflows/${flow.id}/steps`, { key, body: { type: "SEND_EMAIL", config: { templateId: tpl.id } } }), 201);
  await must(api0(`/workflows/${flow.id}/transitions`, { key, body: { fromStepId: delay.id, toStepId: sendStep.id } }), 201);
  await must(api0(`/workflows/${flow.id}`, { method: "PATCH", key, body: { enabled: true } }), 200);

  const c = await must(api0("/campaigns", { key: camp.secretKey, body: { name: "Twenty thousand", subject: "Hi {{email}}", body: "<p>Hello</p>", from: "news@camp.sender.test", audienceType: "ALL" } }), 201);
  await must(peers.next()(`/campaigns/${c.data.id}/send`, { key: camp.secretKey, method: "POST" }), 200);
  const campaignId = c.data.id as string;
  const sentAt = Date.now();
  console.log(`campaign sent: ${elapsed()}`);

  // /v1/send and the workflow triggers, round-robin over the three (all accepted before the first kill).
  await Promise.all([
    pool(sendRcpts, 6, async (to) => {
      await must(peers.next()("/v1/send", { key: send.secretKey, body: { to, from: "hello@send.sender.test", subject: "Sent {{email}}", body: "<p>hi</p>" } }), 200);
    }),
    pool(wfRcpts, 6, async (email) => {
      await must(peers.next()("/v1/track", { key: wf.publicKey, body: { email, event: "three-start" } }), 200);
    }),
  ]);
  console.log(`${SENDS} sends and ${DELAYS} tracks accepted: ${elapsed()}; ${sink.messages.length} messages at the sink`);

  // Mid-send: kill -9 one instance, a second one a few seconds later, start the first back.
  await waitFor(() => copies("camp.test").size, { until: (n) => n >= 1_000, intervalMs: 20, timeoutMs: 120_000, what: "1,000 campaign messages" });
  const waiting = (await must(peers.next()(`/workflows/${flow.id}/executions?status=WAITING&pageSize=1`, { key }), 200)).total as number;
  console.log(`executions WAITING in their DELAY at the first kill: ${waiting} of ${DELAYS}`);
  const kills = [Date.now()];
  await peers.kill(1);
  console.log(`kill -9 ${peers.peers[1]!.id}: ${elapsed()}; ${sink.messages.length} messages`);
  await Bun.sleep(3_000);
  kills.push(Date.now());
  await peers.kill(2);
  console.log(`kill -9 ${peers.peers[2]!.id}: ${elapsed()}; ${sink.messages.length} messages`);
  await Bun.sleep(2_000);
  await peers.start(1);
  console.log(`${peers.peers[1]!.id} back: ${elapsed()}; ${sink.messages.length} messages`);

  const final = await waitFor(() => campaignOf(camp, campaignId), { until: (x) => x.status === "SENT", intervalMs: 250, timeoutMs: 150_000, what: "the campaign SENT" });
  expect(final.status).toBe("SENT");
  expect(final.totalRecipients).toBe(CAMPAIGN);
  await waitFor(() => copies("camp.test").size + copies("send.test").size + copies("wf.test").size, {
    until: (n) => n >= CAMPAIGN + SENDS + DELAYS,
    intervalMs: 100,
    timeoutMs: 60_000,
    what: "every recipient reached",
  });
  console.log(`every recipient reached: ${elapsed()}`);
  // Leases end; anything a dead instance held is taken back by now; a late duplicate would show up here.
  await Bun.sleep(LEASE_MS + 1_000);

  const report: Record<string, unknown> = {};
  for (const [domain, rcpts] of [["camp.test", campRcpts], ["send.test", sendRcpts], ["wf.test", wfRcpts]] as const) {
    const got = copies(domain);
    const missing = rcpts.filter((r) => !got.has(r));
    const dup = rcpts.filter((r) => (got.get(r) ?? 0) > 1);
    report[domain] = { recipients: rcpts.length, missing: missing.length, duplicated: dup.length };
    expect(missing).toEqual([]);
    expect([...got.keys()].length).toBe(rcpts.length);
    // A kill -9 can repeat only a message that was on the wire at that moment (the MX said 250, the
    // process died before committing it): at most one per connection of the killed instance to that
    // destination, each once, received around a kill.
    expect(dup.length).toBeLessThanOrEqual(kills.length * CONNECTIONS);
    for (const r of dup) {
      expect(got.get(r)).toBe(2);
      // The same email sent again (one Message-ID): a receiving server or client that deduplicates by
      // Message-ID shows the recipient one message.
      expect(new Set(sink.byRecipient(r).map((m) => messageIdOf(m.raw))).size).toBe(1);
      const first = sink.byRecipient(r)[0]!.receivedAt;
      expect(kills.some((k) => first >= k - 10_000 && first <= k + 1_000)).toBe(true);
    }
    report[domain + ".dups"] = dup.slice(0, 5);
  }
  console.log(`kill -9 test: ${JSON.stringify(report)}; ${elapsed()}`);
  console.log(`messages at the sink per 10 s since the campaign was sent: ${rates(sentAt).join(" ")}`);

  // The workflow executions all completed, each once.
  const execs = await must(peers.next()(`/workflows/${flow.id}/executions?status=COMPLETED&pageSize=1`, { key }), 200);
  expect(execs.total).toBe(DELAYS);
  expect((await must(peers.next()(`/workflows/${flow.id}/executions?pageSize=1`, { key }), 200)).total).toBe(DELAYS);

  // Nothing stays claimed after the leases end (live instances may hold a claim for a moment).
  await expectNothingClaimed();
  firstDone = true;
}, 240_000);

test.skipIf(!PG)("a rolling restart of all three (SIGTERM one at a time) during a campaign loses and duplicates nothing", async () => {
  expect(firstDone).toBe(true);
  for (let i = 0; i < 3; i++) if (!peers.peers[i]!.api) await peers.start(i);
  const key = rollingAcct.secretKey;
  await waitFor(async () => (await anyLive((api) => api(`/contacts/import/${rollingImport}`, { key }))).body.state, { until: (s) => s === "completed", intervalMs: 100, timeoutMs: 60_000, what: "the 3,000-contact import" });
  const rollRcpts = Array.from({ length: ROLLING }, (_, i) => `r${i}@roll.test`);
  const c = await must(peers.next()("/campaigns", { key, body: { name: "Rolling", subject: "Roll {{email}}", body: "<p>Hello</p>", from: "news@roll.sender.test", audienceType: "ALL" } }), 201);
  await must(peers.next()(`/campaigns/${c.data.id}/send`, { key, method: "POST" }), 200);
  const t = Date.now();
  for (let i = 0; i < 3; i++) {
    await waitFor(() => copies("roll.test").size, { until: (n) => n >= (i + 1) * 300, intervalMs: 10, timeoutMs: 60_000, what: `${(i + 1) * 300} messages` });
    await peers.kill(i, "SIGTERM");
    await peers.start(i);
    console.log(`rolled ${peers.peers[i]!.id}: ${((Date.now() - t) / 1000).toFixed(1)}s; ${copies("roll.test").size} of ${ROLLING}`);
  }
  const final = await waitFor(() => campaignOf(rollingAcct, c.data.id), { until: (x) => x.status === "SENT", intervalMs: 200, timeoutMs: 60_000, what: "the campaign SENT" });
  expect(final.totalRecipients).toBe(ROLLING);
  await waitFor(() => copies("roll.test").size, { until: (n) => n >= ROLLING, intervalMs: 50, timeoutMs: 30_000, what: "every recipient reached" });
  await Bun.sleep(1_000);
  const got = copies("roll.test");
  expect(rollRcpts.filter((r) => !got.has(r))).toEqual([]);
  expect([...got.entries()].filter(([, n]) => n > 1)).toEqual([]);
  expect(got.size).toBe(ROLLING);
  await expectNothingClaimed();
  console.log(`rolling restart: ${ROLLING} recipients, one message each, ${((Date.now() - t) / 1000).toFixed(1)}s; whole file ${elapsed()}`);
}, 120_000);

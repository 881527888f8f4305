// kill -9 during a campaign's fan-out and again during its delivery, restart on the same file:
// every recipient has exactly one email row (the keyset checkpoint moves in the transaction that
// writes the batch), every recipient gets the message, a second copy only from the unavoidable
// in-flight window (the MX said 250, the process died before committing it), and the campaign
// ends SENT.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { uploadCsv } from "../audience/support";
import { addVerifiedDomain } from "../domains/support";
import { startDns } from "../support/dns";
import { createAccount, makeApi, spawnServer, type Api, type SpawnedServer } from "../support/server";
import { startSmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";

const dir = mkdtempSync(join(tmpdir(), "mailsvc-camp-crash-"));
const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const N = 1500;
const CONNECTIONS = 20;

async function allEmails(api: Api, key: string, campaignId: string) {
  const out: { to: string; status: string }[] = [];
  let cursor: string | null = null;
  for (;;) {
    const r: any = await api(`/emails?campaignId=${campaignId}&limit=100${cursor ? `&cursor=${cursor}` : ""}`, { key });
    out.push(...r.body.data);
    if (!r.body.hasMore) return out;
    cursor = r.body.cursor;
  }
}

test("kill -9 mid fan-out and mid delivery: one email row per recipient, every recipient reached, campaign SENT", async () => {
  const dns = await startDns();
  cleanups.push(() => dns.close());
  dns.mailDomain("crash.test");
  const sink = await startSmtpSink();
  cleanups.push(() => sink.close());
  sink.delayMs = 5;

  const env = {
    MAILSVC_DB: join(dir, "camp.db"),
    MAILSVC_DNS_SERVERS: dns.server,
    MAILSVC_MX_PORT: String(sink.port),
    MAILSVC_HOSTNAME: "mailsvc.crash",
    MAILSVC_RATE_LIMIT: "1000000",
    // A stable id across the restarts: on PostgreSQL a restarted instance takes back its own claims at once.
    MAILSVC_INSTANCE_ID: "campaign-crash",
    MAILSVC_CAMPAIGN_BATCH_SIZE: "10", // many small fan-out transactions: the kill lands in the middle
  };
  let srv: SpawnedServer = await spawnServer(env);
  cleanups.push(() => srv.kill());
  let api = makeApi(srv.url);
  const acct = await createAccount(api);
  const key = acct.secretKey;
  await addVerifiedDomain(api, dns, acct, "sender.test");

  const recipients = Array.from({ length: N }, (_, i) => `r${i}@crash.test`);
  const up = await uploadCsv(api, key, ["email,firstName", ...recipients.map((e, i) => `${e},F${i}`)].join("\n"));
  expect(up.status).toBe(202);
  const importState = async () => (await api(`/contacts/import/${up.body.jobId}`, { key })).body.state;
  await waitFor(importState, { until: (s) => s === "completed", intervalMs: 50, timeoutMs: 30_000, what: "the import to complete" });

  const c = (await api("/campaigns", { key, body: { name: "Crash", subject: "Hi {{firstName}}", body: "<p>Hello {{firstName}}</p>", from: "news@sender.test", audienceType: "ALL" } })).body.data;
  expect((await api(`/campaigns/${c.id}/send`, { key, method: "POST" })).status).toBe(200);

  // 1) kill -9 while the fan-out is writing batches.
  const fanout = async () => ({
    rows: (await api(`/emails?campaignId=${c.id}&limit=1`, { key })).body.total as number,
    totalRecipients: (await api(`/campaigns/${c.id}`, { key })).body.totalRecipients as number,
  });
  const started = await waitFor(fanout, { until: (f) => f.rows > 0, intervalMs: 2, what: "the fan-out's first batch" });
  const midFanout = started.totalRecipients === 0 && started.rows < N;
  await srv.kill("SIGKILL");
  srv = await spawnServer(env);
  api = makeApi(srv.url);

  // 2) kill -9 again while messages are being delivered.
  await sink.waitFor(Math.min(sink.messages.length + 300, N), 30_000);
  const killedAt = Date.now();
  await srv.kill("SIGKILL");
  srv = await spawnServer(env);
  api = makeApi(srv.url);

  const campaign = async () => (await api(`/campaigns/${c.id}`, { key })).body;
  const camp = await waitFor(campaign, { until: (c) => c.status === "SENT", intervalMs: 50, timeoutMs: 60_000, what: `campaign ${c.id} SENT` });
  expect(camp.status).toBe("SENT");
  expect(camp.totalRecipients).toBe(N);

  const rows = await allEmails(api, key, c.id);
  expect(rows.length).toBe(N);
  expect(new Set(rows.map((r) => r.to)).size).toBe(N);
  expect(rows.every((r) => r.status === "DELIVERED")).toBe(true);

  const copies = new Map<string, number>();
  for (const m of sink.messages) for (const t of m.to) copies.set(t, (copies.get(t) ?? 0) + 1);
  const missing = recipients.filter((r) => !copies.has(r));
  const duplicated = recipients.filter((r) => (copies.get(r) ?? 0) > 1);
  console.log(`campaign crash test: kill landed mid fan-out: ${midFanout}; ${sink.messages.length} messages for ${N} recipients, ${duplicated.length} duplicates (in-flight window, cap ${2 * CONNECTIONS})`);
  expect(missing).toEqual([]);
  // Each kill can repeat at most the messages on the wire at that moment (one per connection).
  expect(duplicated.length).toBeLessThanOrEqual(2 * CONNECTIONS);
  for (const r of duplicated) {
    expect(copies.get(r)).toBeLessThanOrEqual(2);
    expect(sink.messages.find((m) => m.to.includes(r))!.receivedAt).toBeLessThanOrEqual(killedAt + 1000);
  }
}, 120_000);

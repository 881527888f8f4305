// A scheduled campaign survives a restart that spans its moment and starts once; MAILSVC_SEND_RATE
// paces a project's messages (IP warm-up).
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../src/clock";
import { addVerifiedDomain } from "../domains/support";
import { startDns } from "../support/dns";
import { createAccount, startServer } from "../support/server";
import { startSmtpSink } from "../support/smtp-sink";
import { sendEnv } from "../send/support";
import { addContacts, createCampaign, RCPT, SENDER, waitForCampaign } from "./support";

test("a restart spanning scheduledFor: the campaign starts by itself, once", async () => {
  const dir = mkdtempSync(join(tmpdir(), "mailsvc-camp-sched-"));
  const dbPath = join(dir, "s.db");
  const dns = await startDns();
  dns.mailDomain(RCPT);
  const sink = await startSmtpSink();
  const config = { dnsServers: [dns.server], mxPort: sink.port };
  const clock = new ManualClock();
  let srv = await startServer({ dbPath, clock, config });
  const acct = await createAccount(srv.api);
  await addVerifiedDomain(srv.api, dns, acct, SENDER);
  const key = acct.secretKey;
  for (const email of [`a@${RCPT}`, `b@${RCPT}`]) await srv.api("/contacts", { key, body: { email } });
  const c = (await srv.api("/campaigns", { key, body: { name: "S", subject: "s", body: "<p>{{email}}</p>", from: `news@${SENDER}`, audienceType: "ALL" } })).body.data;
  const at = new Date(clock.now() + 10 * 60_000).toISOString();
  expect((await srv.api(`/campaigns/${c.id}/send`, { key, body: { scheduledFor: at } })).body.data.status).toBe("SCHEDULED");
  await srv.close();

  clock.advance(15 * 60_000); // the service was down at the moment
  srv = await startServer({ dbPath, clock, config });
  const env = { srv, acct } as never;
  const done = await waitForCampaign(env, c.id, "SENT");
  expect(done.totalRecipients).toBe(2);
  await srv.close();
  srv = await startServer({ dbPath, clock, config });
  await Bun.sleep(300);
  expect(sink.messages.flatMap((m) => m.to).sort()).toEqual([`a@${RCPT}`, `b@${RCPT}`]);
  await srv.close();
  await sink.close();
  await dns.close();
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

test("MAILSVC_SEND_RATE: at most that many messages per second per project", async () => {
  const env = await sendEnv({ config: { sendRate: 4 } });
  try {
    await addContacts(env, Array.from({ length: 10 }, (_, i) => ({ email: `r${i}@${RCPT}` })));
    const c = await createCampaign(env);
    const t0 = Date.now();
    await env.srv.api(`/campaigns/${c.id}/send`, { key: env.acct.secretKey, method: "POST" });
    await waitForCampaign(env, c.id, "SENT", 20_000);
    const times = env.sink.messages.map((m) => m.receivedAt).sort((a, b) => a - b);
    expect(times.length).toBe(10);
    // A burst of one second's worth (4), then 4 per second: the last 6 need at least 1.5 s.
    expect(times[9]! - t0).toBeGreaterThanOrEqual(1400);
  } finally {
    await env.close();
  }
}, 30_000);

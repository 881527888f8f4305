// kill -9 while executions wait (and while triggers are still being consumed), restart on the same
// file: every execution resumes once, completes, and each contact gets exactly one email.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addVerifiedDomain } from "../domains/support";
import { startDns } from "../support/dns";
import { createAccount, makeApi, spawnServer, type SpawnedServer } from "../support/server";
import { startSmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { must } from "./support";

const dir = mkdtempSync(join(tmpdir(), "mailsvc-wf-crash-"));
const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const N = 30;

test("kill -9 while executions wait: each resumes once and sends once", async () => {
  const dns = await startDns();
  cleanups.push(() => dns.close());
  dns.mailDomain("wfcrash.test");
  const sink = await startSmtpSink();
  cleanups.push(() => sink.close());
  const env = {
    MAILSVC_DB: join(dir, "wf.db"),
    MAILSVC_DNS_SERVERS: dns.server,
    MAILSVC_MX_PORT: String(sink.port),
    MAILSVC_HOSTNAME: "mailsvc.wfcrash",
    MAILSVC_RATE_LIMIT: "1000000",
    // A stable id across the restarts: on PostgreSQL a restarted instance takes back its own claims at once.
    MAILSVC_INSTANCE_ID: "workflow-crash",
  };
  let srv: SpawnedServer = await spawnServer(env);
  cleanups.push(() => srv.kill());
  let api = makeApi(srv.url);
  const acct = await createAccount(api);
  await addVerifiedDomain(api, dns, acct, "sender.test");
  const key = acct.secretKey;
  const tpl = await must(api("/templates", { key, body: { name: "T", subject: "Hello {{email}}", body: "<p>hi</p>", from: "hi@sender.test", type: "TRANSACTIONAL" } }), 201);
  const wf = await must(api("/workflows", { key, body: { name: "Crash", triggerConfig: { eventName: "crash-start" } } }), 201);
  // 0.05 minutes = 3 s of real time.
  const delay = await must(api(`/workflows/${wf.id}/steps`, { key, body: { type: "DELAY", config: { amount: 0.05, unit: "minutes" } } }), 201);
  const send = await must(api(`/workflows/${wf.id}/steps`, { key, body: { type: "SEND_EMAIL", config: { templateId: tpl.id } } }), 201);
  await must(api(`/workflows/${wf.id}/transitions`, { key, body: { fromStepId: delay.id, toStepId: send.id } }), 201);
  await must(api(`/workflows/${wf.id}`, { method: "PATCH", key, body: { enabled: true } }), 200);

  const recipients = Array.from({ length: N }, (_, i) => `c${i}@wfcrash.test`);
  for (const email of recipients.slice(0, N / 2)) await must(api("/v1/track", { key: acct.publicKey, body: { email, event: "crash-start" } }), 200);
  // The first half waits in its DELAY ...
  const inStatus = (status: string) => async () => (await must(api(`/workflows/${wf.id}/executions?status=${status}&pageSize=1`, { key }), 200)).total as number;
  await waitFor(inStatus("WAITING"), { until: (n) => n >= N / 2, intervalMs: 25, what: `${N / 2} WAITING executions` });
  // ... the second half is tracked right before the kill: its triggers may not be consumed yet.
  for (const email of recipients.slice(N / 2)) await must(api("/v1/track", { key: acct.publicKey, body: { email, event: "crash-start" } }), 200);
  await srv.kill("SIGKILL");
  expect(sink.messages.length).toBe(0);

  srv = await spawnServer(env);
  api = makeApi(srv.url);
  await sink.waitFor(N, 20_000);
  // Let anything that would be a duplicate show up.
  await waitFor(inStatus("COMPLETED"), { until: (n) => n >= N, intervalMs: 50, what: `${N} COMPLETED executions` });
  await Bun.sleep(500);
  const copies = new Map<string, number>();
  for (const m of sink.messages) for (const to of m.to) copies.set(to, (copies.get(to) ?? 0) + 1);
  expect([...copies.keys()].sort()).toEqual([...recipients].sort());
  expect([...copies.values()].every((n) => n === 1)).toBe(true);
  const all = await must(api(`/workflows/${wf.id}/executions?pageSize=100`, { key }), 200);
  expect(all.total).toBe(N);
  for (const e of all.data) {
    expect(e.status).toBe("COMPLETED");
    const detail = await must(api(`/workflows/${wf.id}/executions/${e.id}`, { key }), 200);
    expect(detail.steps.map((s: any) => [s.type, s.status])).toEqual([
      ["DELAY", "COMPLETED"],
      ["SEND_EMAIL", "COMPLETED"],
    ]);
  }
}, 60_000);

// kill -9 in the middle of a 500-recipient send, restart on the same file: nothing is lost, and a
// recipient gets a second copy only if its message was in the unavoidable window (the remote said
// 250, we died before committing DELIVERED): at most one message per open connection.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addVerifiedDomain } from "../domains/support";
import { startDns } from "../support/dns";
import { createAccount, makeApi, spawnServer, type SpawnedServer } from "../support/server";
import { startSmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";

const dir = mkdtempSync(join(tmpdir(), "mailsvc-crash-"));
const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

const CONNECTIONS = 20; // the engine's per-destination connection cap

test("kill -9 mid-send, restart: every recipient gets its message, duplicates only from the in-flight window", async () => {
  const dns = await startDns();
  cleanups.push(() => dns.close());
  dns.mailDomain("crash.test");
  const sink = await startSmtpSink();
  cleanups.push(() => sink.close());
  sink.delayMs = 15; // a slow MX: each message waits before its 250

  const env = {
    MAILSVC_DB: join(dir, "crash.db"),
    MAILSVC_DNS_SERVERS: dns.server,
    MAILSVC_MX_PORT: String(sink.port),
    MAILSVC_HOSTNAME: "mailsvc.crash",
    MAILSVC_RATE_LIMIT: "1000000",
    // A stable id across the restart: on PostgreSQL the restarted instance takes back its own SENDING
    // emails at once (another id would wait for their lease to end, MAILSVC_LEASE).
    MAILSVC_INSTANCE_ID: "crash-instance",
  };
  let srv: SpawnedServer = await spawnServer(env);
  cleanups.push(() => srv.kill());
  const api = makeApi(srv.url);
  const acct = await createAccount(api);
  await addVerifiedDomain(api, dns, acct, "sender.test");

  const recipients: string[] = [];
  for (let i = 0; i < 10; i++) {
    const to = Array.from({ length: 50 }, (_, j) => `r${i * 50 + j}@crash.test`);
    recipients.push(...to);
    const r = await api("/v1/send", { key: acct.secretKey, body: { to, from: "news@sender.test", subject: "Hi {{email}}", body: "<p>Hello {{email}}</p>" } });
    expect(r.status).toBe(200);
  }

  await sink.waitFor(120, 15_000);
  const killedAt = Date.now();
  await srv.kill("SIGKILL");
  const beforeRestart = sink.messages.length;

  srv = await spawnServer(env);
  const notReached = () => {
    const reached = new Set(sink.messages.flatMap((m) => m.to));
    return recipients.filter((r) => !reached.has(r));
  };
  await waitFor(notReached, { until: (left) => left.length === 0, intervalMs: 25, timeoutMs: 15_000, what: "every recipient at the sink" });

  const copies = new Map<string, number>();
  for (const m of sink.messages) for (const t of m.to) copies.set(t, (copies.get(t) ?? 0) + 1);
  const missing = recipients.filter((r) => !copies.has(r));
  const duplicated = recipients.filter((r) => (copies.get(r) ?? 0) > 1);
  console.log(`crash test: ${beforeRestart} delivered before kill -9, ${sink.messages.length} in total, ${duplicated.length} duplicates (window cap ${CONNECTIONS})`);
  expect(missing).toEqual([]);
  expect(duplicated.length).toBeLessThanOrEqual(CONNECTIONS);
  for (const r of duplicated) {
    expect(copies.get(r)).toBe(2);
    // The first copy was accepted by the MX before the kill: it was in the window, not resent by mistake.
    expect(sink.messages.find((m) => m.to.includes(r))!.receivedAt).toBeLessThanOrEqual(killedAt + 1000);
  }

  // The log agrees: every email DELIVERED, none stuck (the last outcomes commit just after the sink's 250).
  const api2 = makeApi(srv.url);
  const delivered = await waitFor(async () => (await api2("/emails?status=DELIVERED&limit=1", { key: acct.secretKey })).body.total, {
    until: (n) => n === recipients.length,
    what: "every email DELIVERED in the log",
  });
  expect(delivered).toBe(recipients.length);
}, 30_000);

// kill -9 with webhook deliveries pending (some in flight, some not yet written by the feed), restart
// on the same file: every delivery arrives (at least once), none is lost.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAccount, makeApi, spawnServer, type SpawnedServer } from "../support/server";
import { waitFor } from "../support/wait";
import { startReceiver, verify } from "./support";

const dir = mkdtempSync(join(tmpdir(), "mailsvc-webhook-crash-"));
const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  rmSync(dir, { recursive: true, force: true });
});

test("kill -9 with deliveries pending, restart: each one is delivered", async () => {
  const rx = startReceiver();
  cleanups.push(() => rx.close());
  rx.delayMs = 60_000; // the endpoint hangs: the first attempts are in flight when the process dies
  const env = {
    MAILSVC_DB: join(dir, "crash.db"),
    MAILSVC_ALLOW_PRIVATE_WEBHOOKS: "true",
    MAILSVC_WEBHOOK_RETRY_SCHEDULE: "1s",
    MAILSVC_RATE_LIMIT: "1000000",
    // A stable id across the restart: on PostgreSQL the restarted instance sends again at once what it
    // had claimed (another id would wait for the claims' lease to end, MAILSVC_LEASE).
    MAILSVC_INSTANCE_ID: "webhook-crash-instance",
  };
  let srv: SpawnedServer = await spawnServer(env);
  cleanups.push(() => srv.kill());
  let api = makeApi(srv.url);
  const acct = await createAccount(api);
  const ep = (await api("/webhook-endpoints", { key: acct.secretKey, body: { url: rx.url + "/hook", events: ["contact.unsubscribed"] } })).body;
  const N = 30;
  for (let i = 0; i < N; i++) {
    const c = await api("/contacts", { key: acct.secretKey, body: { email: `k${i}@crash.test`, subscribed: true } });
    await api(`/contacts/${c.body.id}`, { method: "PATCH", key: acct.secretKey, body: { subscribed: false } });
  }
  await rx.waitFor(1);
  await srv.kill("SIGKILL");
  expect(rx.received.length).toBeLessThan(N); // the per-endpoint cap kept the rest waiting

  rx.delayMs = 0;
  srv = await spawnServer(env);
  api = makeApi(srv.url);
  await waitFor(() => new Set(rx.received.map((r) => r.headers["webhook-id"])).size, { until: (n) => n >= N, timeoutMs: 15_000, what: `${N} distinct webhook-ids` });
  const ids = new Set(rx.received.map((r) => r.headers["webhook-id"]));
  expect(ids.size).toBe(N);
  const emails = new Set(rx.received.map((r) => r.json.data.contactEmail));
  expect(emails.size).toBe(N);
  for (const r of rx.received) verify(ep.secret, r);
  const log = await waitFor(async () => (await api(`/webhook-endpoints/${ep.id}/deliveries?limit=100`, { key: acct.secretKey })).body, {
    until: (d) => d.data.length === N && d.data.every((x: { status: string }) => x.status === "DELIVERED"),
    what: `${N} DELIVERED deliveries recorded`,
  });
  expect(new Set(log.data.map((x: { id: string }) => x.id))).toEqual(ids);
}, 60_000);

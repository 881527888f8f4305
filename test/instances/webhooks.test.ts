// Webhook deliveries with two instances on one PostgreSQL database (issue 32): each due delivery is
// claimed by one instance before it is sent, so the receiver gets each once. (A SQLite file is one
// instance's: nothing to share there.)
import { afterAll, beforeAll, expect, test } from "bun:test";
import { TEST_ENGINE } from "../support/postgres";
import { createAccount, startServer, type TestServer } from "../support/server";
import { startReceiver, type Receiver } from "../webhooks/support";

let a: TestServer;
let b: TestServer;
let rx: Receiver;
beforeAll(async () => {
  if (TEST_ENGINE !== "postgres") return;
  rx = startReceiver();
  a = await startServer({ config: { allowPrivateWebhooks: true, instanceId: "instance-a" } });
  b = await startServer({ dbPath: a.dbPath, clock: a.clock, config: { allowPrivateWebhooks: true, instanceId: "instance-b" } });
});
afterAll(async () => {
  if (TEST_ENGINE !== "postgres") return;
  await b.close();
  await a.close();
  rx.close();
});

test.skipIf(TEST_ENGINE !== "postgres")("two instances deliver each webhook once", async () => {
  const acct = await createAccount(a.api);
  const ep = await a.api("/webhook-endpoints", { key: acct.secretKey, body: { url: rx.url + "/hook", events: ["contact.unsubscribed"] } });
  expect(ep.status).toBe(201);
  rx.delayMs = 50; // slow answers: both dispatchers find due rows while others are on the wire
  const N = 20;
  for (let i = 0; i < N; i++) {
    const api = i % 2 ? b.api : a.api;
    const c = await api("/contacts", { key: acct.secretKey, body: { email: `w${i}@instances.test`, subscribed: true } });
    expect((await api(`/contacts/${c.body.id}`, { method: "PATCH", key: acct.secretKey, body: { subscribed: false } })).status).toBe(200);
  }
  await rx.waitFor(N, undefined, 20_000);
  await Bun.sleep(1_500); // a second delivery of any would arrive by now
  const ids = rx.received.map((r) => r.headers["webhook-id"]);
  expect(ids).toHaveLength(N);
  expect(new Set(ids).size).toBe(N);
  const rows = await a.ctx.db.selectFrom("webhook_deliveries").select(["status", "attempts", "locked_by"]).where("project_id", "=", acct.projectId).execute();
  expect(rows).toHaveLength(N);
  expect(rows.every((r) => r.status === "DELIVERED" && r.attempts === 1 && r.locked_by === null)).toBe(true);
});

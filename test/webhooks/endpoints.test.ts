import { afterAll, beforeAll, setDefaultTimeout, describe, expect, test } from "bun:test";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { startReceiver, verify, type Receiver } from "./support";

setDefaultTimeout(30_000);

let srv: TestServer;
let dns: TestDns;
let acct: Account;
let other: Account;
let rx: Receiver;

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000, 4000], dnsServers: [dns.server] } });
  acct = await createAccount(srv.api, "hooks");
  other = await createAccount(srv.api, "other");
  rx = startReceiver();
}, 60_000);
afterAll(async () => {
  rx.close();
  await srv.close();
  await dns.close();
});

async function endpoint(a: Account, body: Record<string, unknown>) {
  const r = await srv.api("/webhook-endpoints", { key: a.secretKey, body });
  expect(r.status).toBe(201);
  return r.body as { id: string; secret: string; url: string; events: string[]; enabled: boolean };
}

let contactSeq = 0;
/** Creates a subscribed contact and unsubscribes it: one contact.unsubscribed event. Returns the contact id. */
async function unsubscribeOne(a: Account): Promise<string> {
  const c = await srv.api("/contacts", { key: a.secretKey, body: { email: `c${++contactSeq}@hooks.test`, subscribed: true } });
  expect(c.status).toBe(201);
  const p = await srv.api(`/contacts/${c.body.id}`, { method: "PATCH", key: a.secretKey, body: { subscribed: false } });
  expect(p.status).toBe(200);
  return c.body.id;
}

const deliveries = async (a: Account, id: string, q = "") => (await srv.api(`/webhook-endpoints/${id}/deliveries${q}`, { key: a.secretKey })).body;

describe("endpoints CRUD", () => {
  test("create answers 201 with a whsec_ secret; get, list, patch, delete", async () => {
    const r = await srv.api("/webhook-endpoints", { key: acct.secretKey, body: { url: rx.url + "/crud", events: ["email.*", "contact.subscribed", "contact.subscribed"], description: "crm" } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ url: rx.url + "/crud", events: ["email.*", "contact.subscribed"], description: "crm", enabled: true });
    expect(r.body.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(Object.keys(r.body).sort()).toEqual(["createdAt", "description", "enabled", "events", "id", "secret", "updatedAt", "url"]);
    const id = r.body.id;

    const g = await srv.api(`/webhook-endpoints/${id}`, { key: acct.secretKey });
    expect(g.status).toBe(200);
    expect(g.body).toEqual(r.body);

    const l = await srv.api("/webhook-endpoints", { key: acct.secretKey });
    expect(l.status).toBe(200);
    expect(l.body).toMatchObject({ hasMore: false, cursor: null });
    expect(l.body.data.map((e: { id: string }) => e.id)).toContain(id);

    const p = await srv.api(`/webhook-endpoints/${id}`, { method: "PATCH", key: acct.secretKey, body: { events: ["segment.vip-users.entry", "segment.vip-users.exit"], enabled: false, description: null } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ id, events: ["segment.vip-users.entry", "segment.vip-users.exit"], enabled: false, description: null, secret: r.body.secret });

    const d = await srv.api(`/webhook-endpoints/${id}`, { method: "DELETE", key: acct.secretKey });
    expect(d.status).toBe(200);
    expect((await srv.api(`/webhook-endpoints/${id}`, { key: acct.secretKey })).status).toBe(404);
    expect((await srv.api(`/webhook-endpoints/${id}`, { method: "DELETE", key: acct.secretKey })).status).toBe(404);
  });

  test("validation: unknown event names, bad URLs and missing fields are 422; malformed JSON 400; nothing is written", async () => {
    const bad = [
      [{ url: rx.url, events: ["email.sent", "user.created"] }, "events[1]"],
      [{ url: rx.url, events: [] }, "events"],
      [{ url: rx.url, events: ["segment.Bad Slug.entry"] }, "events[0]"],
      [{ url: "ftp://example.com/x", events: ["*"] }, "url"],
      [{ url: "not a url", events: ["*"] }, "url"],
      [{ url: "https://user:pw@example.com/x", events: ["*"] }, "url"],
      [{ events: ["*"] }, "url"],
      [{ url: rx.url }, "events"],
    ] as const;
    for (const [body, field] of bad) {
      const r = await srv.api("/webhook-endpoints", { key: other.secretKey, body });
      expect(r.status).toBe(422);
      expect(r.body.success).toBe(false);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
    const mal = await srv.api("/webhook-endpoints", { key: other.secretKey, raw: "{nope", headers: { "content-type": "application/json" } });
    expect(mal.status).toBe(400);
    const l = await srv.api("/webhook-endpoints", { key: other.secretKey });
    expect(l.body.total).toBe(0);
    const q = await srv.api(`/webhook-endpoints/${Bun.randomUUIDv7()}/deliveries?status=WHATEVER`, { key: other.secretKey });
    expect(q.status).toBe(400);
  });

  test("auth and tenant isolation: other projects see 404, public key and no key are 401", async () => {
    const ep = await endpoint(acct, { url: rx.url + "/iso", events: ["*"] });
    for (const [method, path] of [
      ["GET", `/webhook-endpoints/${ep.id}`],
      ["PATCH", `/webhook-endpoints/${ep.id}`],
      ["DELETE", `/webhook-endpoints/${ep.id}`],
      ["GET", `/webhook-endpoints/${ep.id}/deliveries`],
      ["POST", `/webhook-endpoints/${ep.id}/test`],
    ] as const) {
      const r = await srv.api(path, { method, key: other.secretKey, body: method === "PATCH" ? { enabled: false } : undefined });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
    expect((await srv.api("/webhook-endpoints", { key: other.secretKey })).body.data.map((e: { id: string }) => e.id)).not.toContain(ep.id);
    expect((await srv.api("/webhook-endpoints", { key: acct.publicKey })).status).toBe(401);
    expect((await srv.api("/webhook-endpoints")).status).toBe(401);
    const s = await srv.api(`/webhook-endpoints/${ep.id}`, { cookie: acct.cookie, headers: { "x-project-id": acct.projectId } });
    expect(s.status).toBe(200);
    await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("loopback and private targets are refused without MAILSVC_ALLOW_PRIVATE_WEBHOOKS", async () => {
    srv.ctx.config.allowPrivateWebhooks = false;
    try {
      for (const url of ["http://127.0.0.1:8080/x", "http://localhost/x", "http://10.0.0.5/x", "http://[::1]/x", "http://169.254.169.254/latest", "http://[::ffff:192.168.0.1]/"]) {
        const r = await srv.api("/webhook-endpoints", { key: acct.secretKey, body: { url, events: ["*"] } });
        expect(r.status).toBe(422);
        expect(r.body.error.errors[0]).toMatchObject({ field: "url", code: "refused" });
      }
      // A name that resolves to loopback is accepted as a URL but refused when delivering.
      dns.set("internal.hooks.test", "A", ["127.0.0.1"]);
      const ep = await endpoint(acct, { url: `http://internal.hooks.test:${rx.port}/private`, events: ["contact.unsubscribed"] });
      await unsubscribeOne(acct);
      const log = await waitFor(() => deliveries(acct, ep.id), { until: (d) => d.data.length > 0 && d.data[0].status !== "PENDING", what: "the delivery to be settled" });
      expect(log.data[0]).toMatchObject({ event: "contact.unsubscribed", status: "FAILED", attempts: 1, responseStatus: null });
      expect(log.data[0].error).toContain("127.0.0.1");
      expect(rx.received.filter((r) => r.path === "/private")).toHaveLength(0);
      const t = await srv.api(`/webhook-endpoints/${ep.id}/test`, { method: "POST", key: acct.secretKey });
      expect(t.body).toMatchObject({ success: false, delivery: { status: "FAILED", event: "webhook.test" } });
      await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
    } finally {
      srv.ctx.config.allowPrivateWebhooks = true;
    }
  });
});

describe("deliveries", () => {
  test("each endpoint gets exactly the events it subscribed to, signed per Standard Webhooks", async () => {
    const unsubOnly = await endpoint(acct, { url: rx.url + "/unsub", events: ["contact.unsubscribed"] });
    const all = await endpoint(acct, { url: rx.url + "/all", events: ["*"] });
    const emailOnly = await endpoint(acct, { url: rx.url + "/email", events: ["email.*"] });
    const otherProject = await endpoint(other, { url: rx.url + "/other", events: ["*"] });
    const eventsFrom = srv.clock.now();
    // Client events are never delivered, even to "*".
    await srv.api("/v1/track", { key: acct.publicKey, body: { event: "signed-up", email: "tracked@hooks.test" } });
    const contactId = await unsubscribeOne(acct);
    await srv.api(`/contacts/${contactId}`, { method: "PATCH", key: acct.secretKey, body: { subscribed: true } });

    const got = await rx.waitFor(3, (r) => r.path === "/unsub" || r.path === "/all");
    await Bun.sleep(300); // nothing more should come
    const unsub = rx.received.filter((r) => r.path === "/unsub");
    const allGot = rx.received.filter((r) => r.path === "/all");
    expect(got.length).toBe(3);
    expect(unsub.map((r) => r.json.type)).toEqual(["contact.unsubscribed"]);
    expect(allGot.map((r) => r.json.type).sort()).toEqual(["contact.subscribed", "contact.unsubscribed"]);
    expect(rx.received.filter((r) => r.path === "/email" || r.path === "/other")).toHaveLength(0);

    const r = unsub[0]!;
    expect(verify(unsubOnly.secret, r)).toEqual(r.json);
    expect(() => verify(all.secret, r)).toThrow();
    expect(r.headers["content-type"]).toContain("application/json");
    expect(r.json).toMatchObject({ type: "contact.unsubscribed", data: { contactId, contactEmail: expect.stringMatching(/@hooks\.test$/) } });
    expect(Object.keys(r.json).sort()).toEqual(["data", "timestamp", "type"]);
    expect(new Date(r.json.timestamp).toISOString()).toBe(r.json.timestamp);
    for (const x of allGot) verify(all.secret, x);

    const log = await waitFor(() => deliveries(acct, unsubOnly.id), { until: (d) => d.data.length === 1 && d.data[0].status === "DELIVERED", what: "one DELIVERED delivery" });
    expect(log).toMatchObject({ total: 1, hasMore: false, cursor: null });
    expect(log.data[0]).toMatchObject({ id: r.headers["webhook-id"], event: "contact.unsubscribed", status: "DELIVERED", attempts: 1, responseStatus: 200 });
    const createdAt = expectTimeBetween(log.data[0].createdAt, eventsFrom, srv.clock.now());
    expectTimeBetween(log.data[0].deliveredAt, createdAt, srv.clock.now());
    for (const ep of [unsubOnly, all, emailOnly]) await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
    await srv.api(`/webhook-endpoints/${otherProject.id}`, { method: "DELETE", key: other.secretKey });
  });

  test("non-2xx answers are retried on the schedule with the same webhook-id, then the delivery is failed", async () => {
    const ep = await endpoint(acct, { url: rx.url + "/retry", events: ["contact.unsubscribed"] });
    rx.answers = [500, 503];
    await unsubscribeOne(acct);
    await rx.waitFor(1, (r) => r.path === "/retry");
    srv.clock.advance(1000);
    await rx.waitFor(2, (r) => r.path === "/retry");
    srv.clock.advance(2000);
    const three = await rx.waitFor(3, (r) => r.path === "/retry");
    expect(new Set(three.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect(new Set(three.map((r) => r.body)).size).toBe(1);
    for (const r of three) verify(ep.secret, r);
    const ok = await waitFor(async () => (await deliveries(acct, ep.id)).data[0], { until: (d) => d?.status === "DELIVERED", what: "the retried delivery DELIVERED" });
    expect(ok).toMatchObject({ attempts: 3, responseStatus: 200 });

    // Always failing: 1 + 3 retries, then FAILED, and nothing more.
    rx.answers = [500, 500, 500, 500, 500];
    await unsubscribeOne(acct);
    for (const [i, wait] of [1000, 2000, 4000].entries()) {
      await rx.waitFor(3 + i + 1, (r) => r.path === "/retry");
      await waitFor(async () => (await deliveries(acct, ep.id, "?status=PENDING")).data[0], { until: (d) => d?.attempts === i + 1, what: `a PENDING delivery with ${i + 1} attempts` });
      srv.clock.advance(wait);
    }
    await rx.waitFor(7, (r) => r.path === "/retry");
    const failed = await waitFor(async () => (await deliveries(acct, ep.id, "?status=FAILED")).data[0], { what: "a FAILED delivery" });
    expect(failed).toMatchObject({ status: "FAILED", attempts: 4, responseStatus: 500, deliveredAt: null });
    srv.clock.advance(60_000);
    await Bun.sleep(700);
    expect(rx.received.filter((r) => r.path === "/retry")).toHaveLength(7);
    await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("nothing is sent to a disabled or deleted endpoint, retries included", async () => {
    const control = await endpoint(acct, { url: rx.url + "/control", events: ["contact.unsubscribed"] });
    const disabled = await endpoint(acct, { url: rx.url + "/disabled", events: ["contact.unsubscribed"], enabled: false });
    const toDisable = await endpoint(acct, { url: rx.url + "/to-disable", events: ["contact.unsubscribed"] });
    const toDelete = await endpoint(acct, { url: rx.url + "/to-delete", events: ["contact.unsubscribed"] });
    // One event reaches all three enabled endpoints; then one is disabled and one deleted, and the next event reaches only the control.
    rx.answers = [];
    const failFirst = new Set(["/to-disable", "/to-delete"]);
    const orig = rx.received.length;
    await unsubscribeOne(acct);
    await rx.waitFor(1, (r) => r.path === "/control");
    await rx.waitFor(2, (r) => failFirst.has(r.path));
    await srv.api(`/webhook-endpoints/${toDisable.id}`, { method: "PATCH", key: acct.secretKey, body: { enabled: false } });
    await srv.api(`/webhook-endpoints/${toDelete.id}`, { method: "DELETE", key: acct.secretKey });
    await unsubscribeOne(acct);
    await rx.waitFor(2, (r) => r.path === "/control");
    srv.clock.advance(10_000);
    await Bun.sleep(700);
    const after = rx.received.slice(orig);
    expect(after.filter((r) => r.path === "/disabled")).toHaveLength(0);
    expect(after.filter((r) => r.path === "/to-disable")).toHaveLength(1);
    expect(after.filter((r) => r.path === "/to-delete")).toHaveLength(1);
    expect((await deliveries(acct, disabled.id)).data).toHaveLength(0);
    for (const ep of [control, disabled, toDisable]) await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("a hanging endpoint delays only itself: other endpoints and the API go on", async () => {
    const hang = await endpoint(acct, { url: rx.url + "/hang", events: ["contact.unsubscribed"] });
    const fast = await endpoint(acct, { url: rx.url + "/fast", events: ["contact.unsubscribed"] });
    const before = rx.received.filter((r) => r.path === "/hang").length;
    for (let i = 0; i < 12; i++) await unsubscribeOne(acct);
    await rx.waitFor(12, (r) => r.path === "/fast");
    expect((await srv.api("/contacts?limit=1", { key: acct.secretKey })).status).toBe(200);
    // At most 8 requests in flight to one endpoint; the rest wait their turn.
    await rx.waitFor(before + 8, (r) => r.path === "/hang");
    await Bun.sleep(300);
    expect(rx.received.filter((r) => r.path === "/hang").length - before).toBe(8);
    const pending = await deliveries(acct, hang.id, "?status=PENDING&limit=100");
    expect(pending.total).toBe(12);
    for (const ep of [hang, fast]) await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("pending retries of an endpoint that gets disabled are failed, not sent", async () => {
    const ep = await endpoint(acct, { url: rx.url + "/pending", events: ["contact.unsubscribed"] });
    rx.answers = [500];
    await unsubscribeOne(acct);
    await rx.waitFor(1, (r) => r.path === "/pending");
    await waitFor(async () => (await deliveries(acct, ep.id, "?status=PENDING")).data[0], { until: (d) => d?.attempts === 1, what: "a PENDING delivery with 1 attempt" });
    await srv.api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", key: acct.secretKey, body: { enabled: false } });
    srv.clock.advance(5000);
    await Bun.sleep(700);
    expect(rx.received.filter((r) => r.path === "/pending")).toHaveLength(1);
    const d = await deliveries(acct, ep.id);
    expect(d.data[0]).toMatchObject({ status: "FAILED", error: "endpoint disabled" });
    await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("segment entry and exit events reach an endpoint subscribed to that segment", async () => {
    const seg = await srv.api("/segments", {
      key: acct.secretKey,
      body: { name: "Pro Users", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
    });
    expect(seg.status).toBe(201);
    const slug = seg.body.slug;
    const ep = await endpoint(acct, { url: rx.url + "/segment", events: [`segment.${slug}.entry`, `segment.${slug}.exit`] });
    const c = await srv.api("/contacts", { key: acct.secretKey, body: { email: "pro@hooks.test", data: { plan: "pro" } } });
    expect(c.status).toBe(201); // a new contact: created
    await srv.api(`/segments/${seg.body.id}/compute`, { method: "POST", key: acct.secretKey });
    const [entry] = await rx.waitFor(1, (r) => r.path === "/segment");
    expect(verify(ep.secret, entry!)).toMatchObject({ type: `segment.${slug}.entry`, data: { segmentId: seg.body.id, contactEmail: "pro@hooks.test" } });
    await srv.api(`/contacts/${c.body.id}`, { method: "PATCH", key: acct.secretKey, body: { data: { plan: "free" } } });
    await srv.api(`/segments/${seg.body.id}/compute`, { method: "POST", key: acct.secretKey });
    const both = await rx.waitFor(2, (r) => r.path === "/segment");
    expect(both[1]!.json.type).toBe(`segment.${slug}.exit`);
    await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("test ping: one signed webhook.test now, logged as a delivery", async () => {
    const ep = await endpoint(acct, { url: rx.url + "/ping", events: ["email.sent"] });
    const r = await srv.api(`/webhook-endpoints/${ep.id}/test`, { method: "POST", key: acct.secretKey });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, delivery: { event: "webhook.test", status: "DELIVERED", attempts: 1, responseStatus: 200 } });
    const [got] = await rx.waitFor(1, (x) => x.path === "/ping");
    expect(verify(ep.secret, got!)).toMatchObject({ type: "webhook.test", data: { endpointId: ep.id } });
    expect(got!.headers["webhook-id"]).toBe(r.body.delivery.id);
    rx.answers = [404];
    const f = await srv.api(`/webhook-endpoints/${ep.id}/test`, { method: "POST", key: acct.secretKey });
    expect(f.body).toMatchObject({ success: false, delivery: { status: "FAILED", responseStatus: 404 } });
    const log = await deliveries(acct, ep.id, "?limit=1");
    expect(log).toMatchObject({ total: 2, hasMore: true });
    const page2 = await deliveries(acct, ep.id, `?limit=1&cursor=${log.cursor}`);
    expect(page2).toMatchObject({ hasMore: false, total: 0 });
    expect(page2.data[0].id).not.toBe(log.data[0].id);
    await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
  });

  test("project reset empties the delivery log and keeps the endpoints (configuration, like keys and domains)", async () => {
    const a = await createAccount(srv.api, "reset");
    const ep = await endpoint(a, { url: rx.url + "/reset", events: ["*"] });
    expect((await srv.api(`/webhook-endpoints/${ep.id}/test`, { method: "POST", key: a.secretKey })).body.success).toBe(true);
    expect((await deliveries(a, ep.id)).total).toBe(1);
    const r = await srv.api(`/users/@me/projects/${a.projectId}/reset`, { method: "POST", cookie: a.cookie, body: {} });
    expect(r.status).toBe(200);
    expect((await srv.api(`/webhook-endpoints/${ep.id}`, { key: a.secretKey })).status).toBe(200);
    expect((await deliveries(a, ep.id)).total).toBe(0);
  });

  test("while mail goes out in bulk, deliveries wait for it: until it slows down, at most MAILSVC_WEBHOOK_MAX_DEFER", async () => {
    const ep = await endpoint(acct, { url: rx.url + "/bulk", events: ["contact.unsubscribed"] });
    // A bulk send as the load signal sees it: the delivery engine's attempt counter moving at 1,000/s
    // (driving 100+ real deliveries a second through the test sink would make this test slow).
    const load = setInterval(() => (srv.ctx.metrics.mailAttempts += 50), 50);
    try {
      await waitFor(async () => srv.ctx.metrics.mailLoad.busy(), { until: (b) => b, what: "the mail load signal busy" });
      const firstId = await unsubscribeOne(acct);
      await Bun.sleep(1200);
      expect(rx.received.filter((r) => r.path === "/bulk")).toHaveLength(0);
      expect((await deliveries(acct, ep.id)).data).toMatchObject([{ status: "PENDING", attempts: 0 }]);
      // Waited as long as it may (30 s by default): it goes, though the mail still flows.
      srv.clock.advance(srv.ctx.config.webhookMaxDeferMs);
      const [first] = await rx.waitFor(1, (r) => r.path === "/bulk");
      expect(first!.json.data.contactId).toBe(firstId);
      const secondId = await unsubscribeOne(acct);
      await Bun.sleep(1200);
      expect(rx.received.filter((r) => r.path === "/bulk")).toHaveLength(1);
      clearInterval(load);
      // The bulk send is over: it goes within a second or two, no clock moved.
      const got = await rx.waitFor(2, (r) => r.path === "/bulk", 5000);
      expect(got[1]!.json.data.contactId).toBe(secondId);
      expect(srv.ctx.metrics.mailLoad.busy()).toBe(false);
    } finally {
      clearInterval(load);
      await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: acct.secretKey });
    }
  });
});

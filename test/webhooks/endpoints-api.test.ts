// Black-box: outbound webhook endpoints (create, list, update, delete, signatures, deliveries, retries). Written
// from api-spec.md, decisions.md ("Outbound webhooks") and docs/api.md (the API guide); never from the code.
// Moved here from blackbox/analytics-billing.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { expectCursorPage, expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "../blackbox/support";
import { addVerifiedDomain } from "../domains/support";
import { addresses, items } from "../support/api";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import type { TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";

const RCPT_DOMAIN = "wh-inbox.example";
let env: DeliveryEnv, srv: TestServer, dns: TestDns, acc: Account;
beforeAll(async () => {
  env = await deliveryEnv({ name: "BB webhooks", mailDomain: RCPT_DOMAIN, config: { allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000] } });
  ({ srv, dns, acct: acc } = env);
});
afterAll(() => env?.close());

const rcpt = addresses(RCPT_DOMAIN);
/** Asynchronous work (delivery, feed consumers, webhooks) is moved along and `read` polled until `ok`. */
function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  return waitFor(async () => (await srv.drainJobs(), read()), { until: ok, what });
}
const asSession = (a: Account) => ({ cookie: a.cookie, headers: { "x-project-id": a.projectId } });
const sendOne = (a: Account, from: string, to: string | string[], body = "<p>Hi</p>") =>
  srv.api("/v1/send", { key: a.secretKey, body: { to, from, subject: "Hello", body } });

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}

describe("outbound webhook endpoints", () => {
  let w: Account;
  let receiver: ReturnType<typeof Bun.serve>;
  const received: Received[] = [];
  let base: string;

  beforeAll(async () => {
    w = await newProject(srv.api, acc, "Webhooks");
    await addVerifiedDomain(srv.api, dns, w, "wh.bb.example");
    receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => {
        const path = new URL(req.url).pathname;
        received.push({ path, headers: Object.fromEntries(req.headers), body: await req.text() });
        return path.startsWith("/fail") ? new Response("nope", { status: 500 }) : new Response("ok");
      },
    });
    base = `http://127.0.0.1:${receiver.port}`;
  });
  afterAll(() => receiver?.stop(true));

  const create = (body: unknown, who: Account = w) => srv.api("/webhook-endpoints", { key: who.secretKey, body });
  const at = (path: string) => received.filter((r) => r.path === path);
  function verify(r: Received, secret: string) {
    const id = r.headers["webhook-id"]!;
    const ts = r.headers["webhook-timestamp"]!;
    expect(id).toBeTruthy();
    expect(ts).toMatch(/^\d+$/);
    const key = Buffer.from(secret.slice("whsec_".length), "base64");
    const sig = createHmac("sha256", key).update(`${id}.${ts}.${r.body}`).digest("base64");
    expect(r.headers["webhook-signature"]!.split(" ")).toContain(`v1,${sig}`);
  }

  test("POST: 201 { id, url, events, description, secret (whsec_), enabled, createdAt }; GET by id and list", async () => {
    const t0 = srv.clock.now();
    const res = await create({ url: `${base}/a`, events: ["email.*", "contact.unsubscribed"], description: "main hook" });
    expect(res.status).toBe(201);
    for (const k of ["id", "url", "events", "description", "secret", "enabled", "createdAt"]) expect(res.body).toHaveProperty(k);
    expect(res.body.url).toBe(`${base}/a`);
    expect(res.body.events).toEqual(["email.*", "contact.unsubscribed"]);
    expect(res.body.description).toBe("main hook");
    expect(res.body.secret).toMatch(/^whsec_/);
    expect(res.body.enabled).toBe(true);
    expectTimeBetween(res.body.createdAt, t0, srv.clock.now());
    const one = await srv.api(`/webhook-endpoints/${res.body.id}`, { key: w.secretKey });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: res.body.id, url: `${base}/a`, events: ["email.*", "contact.unsubscribed"], enabled: true });
    const list = await srv.api("/webhook-endpoints", { key: w.secretKey });
    expectCursorPage(list);
    expect(items(list.body).map((e: any) => e.id)).toContain(res.body.id);
    // Cleanup for the tests below: one endpoint per test.
    expectOk(await srv.api(`/webhook-endpoints/${res.body.id}`, { method: "DELETE", key: w.secretKey }));
    expectEnvelope(await srv.api(`/webhook-endpoints/${res.body.id}`, { key: w.secretKey }), 404, "NOT_FOUND");
  });

  test("unknown event names and a missing url are 422; a literal private address is refused unless allowed", async () => {
    expectValidation(await create({ url: `${base}/a`, events: ["email.sent", "order.created"] }), "events[1]");
    expectValidation(await create({ events: ["email.sent"] }), "url");
    const strict = await startServer();
    try {
      const a = await createAccount(strict.api, "Strict webhooks");
      const res = await strict.api("/webhook-endpoints", { key: a.secretKey, body: { url: "http://127.0.0.1:9/x", events: ["*"] } });
      const errs = expectValidation(res, "url");
      expect(errs.map((e) => e.code)).toContain("refused");
      expectValidation(await strict.api("/webhook-endpoints", { key: a.secretKey, body: { url: "http://localhost:9/x", events: ["*"] } }), "url");
      const ok = await strict.api("/webhook-endpoints", { key: a.secretKey, body: { url: "https://hooks.example.com/x", events: ["*"] } });
      expect(ok.status).toBe(201);
      expectValidation(await strict.api(`/webhook-endpoints/${ok.body.id}`, { method: "PATCH", key: a.secretKey, body: { url: "http://10.0.0.1/x" } }), "url");
    } finally {
      await strict.close();
    }
  });

  test("POST /:id/test sends one signed webhook.test: { type, timestamp, data }; the delivery is in the log", async () => {
    const ep = (await create({ url: `${base}/test`, events: ["*"] })).body;
    const res = await srv.api(`/webhook-endpoints/${ep.id}/test`, { method: "POST", key: w.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.delivery).toBeObject();
    const got = await eventually(async () => at("/test"), (l) => l.length === 1, "the test webhook");
    const body = JSON.parse(got[0]!.body);
    expect(Object.keys(body).sort()).toEqual(["data", "timestamp", "type"]);
    expect(body.type).toBe("webhook.test");
    expect(isIsoDate(body.timestamp)).toBe(true);
    verify(got[0]!, ep.secret);
    const log = await eventually(
      async () => await srv.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: w.secretKey }),
      (r) => items(r.body).some((d: any) => d.status === "DELIVERED"),
      "a DELIVERED test delivery",
    );
    expectCursorPage(log);
    const d = items(log.body)[0];
    for (const k of ["id", "event", "status", "attempts", "responseStatus", "createdAt", "deliveredAt"]) expect(d).toHaveProperty(k);
    expect(d).toMatchObject({ event: "webhook.test", status: "DELIVERED", attempts: 1, responseStatus: 200 });
    expect(isIsoDate(d.deliveredAt)).toBe(true);
    expectOk(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: w.secretKey }));
  });

  test("a subscribed event is POSTed signed with data naming the contact; client events are not delivered", async () => {
    const ep = (await create({ url: `${base}/events`, events: ["contact.*"] })).body;
    const r = await srv.api("/v1/track", { key: w.publicKey, body: { email: "hook@wh-bb.example", event: "client_thing" } });
    expectOk(r);
    const cid = r.body.data.contact;
    expectOk(await srv.api(`/contacts/${cid}`, { method: "PATCH", key: w.secretKey, body: { subscribed: false } }));
    const got = await eventually(async () => at("/events"), (l) => l.length >= 1, "the contact.unsubscribed webhook");
    await srv.drainJobs();
    expect(at("/events").length).toBe(1);
    const body = JSON.parse(got[0]!.body);
    expect(body.type).toBe("contact.unsubscribed");
    expect(body.data.contactId).toBe(cid);
    expect(body.data.contactEmail).toBe("hook@wh-bb.example");
    verify(got[0]!, ep.secret);
    const log = await eventually(
      async () => items((await srv.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: w.secretKey })).body),
      (l) => l.length === 1 && l[0].status === "DELIVERED",
      "one DELIVERED delivery",
    );
    expect(log[0].event).toBe("contact.unsubscribed");
    expect(log[0].id).toBe(got[0]!.headers["webhook-id"]);
    const filtered = await srv.api(`/webhook-endpoints/${ep.id}/deliveries?status=FAILED`, { key: w.secretKey });
    expect(items(filtered.body)).toEqual([]);
    expectOk(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: w.secretKey }));
  });

  test("email lifecycle events: { type, timestamp, data } with eventId, contactId, contactEmail and emailId", async () => {
    const ep = (await create({ url: `${base}/mail`, events: ["email.*"] })).body;
    const to = rcpt("wh");
    const r = await sendOne(w, "hooks@wh.bb.example", to);
    expectOk(r);
    const emailId = r.body.data.emails[0].email;
    const contactId = r.body.data.emails[0].contact.id;
    const got = await eventually(
      async () => at("/mail").map((x) => ({ ...x, json: JSON.parse(x.body) })),
      (l) => ["email.sent", "email.delivery"].every((t) => l.some((x) => x.json.type === t)),
      "email.sent and email.delivery webhooks",
    );
    for (const g of got) {
      expect(g.json.type).toStartWith("email.");
      expect(isIsoDate(g.json.timestamp)).toBe(true);
      expect(g.json.data).toMatchObject({ emailId, contactId, contactEmail: to });
      expect(typeof g.json.data.eventId).toBe("string");
      verify(g, ep.secret);
    }
    expectOk(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: w.secretKey }));
  });

  test("disabling an endpoint fails its waiting deliveries; deleting it removes its log", async () => {
    const ep = (await create({ url: `${base}/fail-disable`, events: ["contact.subscribed"] })).body;
    const r = await srv.api("/v1/track", { key: w.publicKey, body: { email: "dis@wh-bb.example", event: "x", subscribed: false } });
    expectOk(await srv.api(`/contacts/${r.body.data.contact}`, { method: "PATCH", key: w.secretKey, body: { subscribed: true } }));
    const deliveries = () => srv.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: w.secretKey }).then((x) => items(x.body));
    const first = await eventually(deliveries, (l) => l.length === 1 && l[0].attempts === 1, "a first failed attempt");
    expect(first[0].status).toBe("PENDING");
    expect(isIsoDate(first[0].nextAttemptAt)).toBe(true);
    expect(first[0].responseStatus).toBe(500);
    expect((await srv.api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", key: w.secretKey, body: { enabled: false } })).status).toBe(200);
    const after = await deliveries();
    expect(after[0]).toMatchObject({ status: "FAILED", error: "endpoint disabled" });
    expectOk(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: w.secretKey }));
    expectEnvelope(await srv.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: w.secretKey }), 404, "NOT_FOUND");
  });

  test("a non-2xx answer is retried with the same webhook-id, then the delivery is FAILED", async () => {
    const ep = (await create({ url: `${base}/fail`, events: ["contact.subscribed"] })).body;
    const r = await srv.api("/v1/track", { key: w.publicKey, body: { email: "retry@wh-bb.example", event: "x", subscribed: false } });
    expectOk(r);
    expectOk(await srv.api(`/contacts/${r.body.data.contact}`, { method: "PATCH", key: w.secretKey, body: { subscribed: true } }));
    const deliveries = () => srv.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: w.secretKey }).then((x) => items(x.body));
    const log = await waitFor(
      async () => {
        srv.clock.advance(1000);
        await srv.drainJobs();
        return deliveries();
      },
      { until: (l) => l.length === 1 && l[0].status === "FAILED", what: "a FAILED delivery" },
    );
    expect(log[0].attempts).toBe(3);
    expect(log[0].responseStatus).toBe(500);
    const hits = at("/fail");
    expect(hits.length).toBe(3);
    expect(new Set(hits.map((h) => h.headers["webhook-id"])).size).toBe(1);
    expect(items((await srv.api(`/webhook-endpoints/${ep.id}/deliveries?status=FAILED`, { key: w.secretKey })).body).length).toBe(1);
    expectOk(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: w.secretKey }));
  });

  test("PATCH changes events, description and enabled; a disabled endpoint receives nothing", async () => {
    const ep = (await create({ url: `${base}/patched`, events: ["email.sent"] })).body;
    const res = await srv.api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", key: w.secretKey, body: { events: ["contact.*"], description: "now contacts", enabled: false } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: ep.id, events: ["contact.*"], description: "now contacts", enabled: false, secret: ep.secret });
    const r = await srv.api("/v1/track", { key: w.publicKey, body: { email: "off@wh-bb.example", event: "x", subscribed: false } });
    expectOk(await srv.api(`/contacts/${r.body.data.contact}`, { method: "PATCH", key: w.secretKey, body: { subscribed: true } }));
    await srv.drainJobs();
    expect(at("/patched")).toEqual([]);
    expectValidation(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", key: w.secretKey, body: { events: ["nope"] } }), "events[0]");
  });

  test("tenant isolation, unknown ids and the public key", async () => {
    const ep = (await create({ url: `${base}/iso`, events: ["*"] })).body;
    const other = await newProject(srv.api, acc, "Webhooks other");
    expectEnvelope(await srv.api(`/webhook-endpoints/${ep.id}`, { key: other.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", key: other.secretKey, body: { enabled: false } }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/webhook-endpoints/${ep.id}`, { method: "DELETE", key: other.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: other.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/webhook-endpoints/${ep.id}/test`, { method: "POST", key: other.secretKey }), 404, "NOT_FOUND");
    expect(items((await srv.api("/webhook-endpoints", { key: other.secretKey })).body)).toEqual([]);
    expectEnvelope(await srv.api(`/webhook-endpoints/${NO_SUCH_ID}`, { key: w.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api("/webhook-endpoints", { key: w.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/webhook-endpoints", { key: w.publicKey, body: { url: `${base}/x`, events: ["*"] } }), 401, "INVALID_API_KEY");
    expect((await srv.api(`/webhook-endpoints/${ep.id}`, asSession(w))).status).toBe(200);
    expect((await srv.api(`/webhook-endpoints/${ep.id}`, { key: w.secretKey })).body.enabled).toBe(true);
  });
});

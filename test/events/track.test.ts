import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { track } from "../audience/support";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

describe("POST /v1/track", () => {
  test("upserts the contact (subscribed by default), records the event, answers { success, data: { contact, event, timestamp } }", async () => {
    const acc = await createAccount(srv.api);
    const r = await track(srv.api, acc.publicKey, { email: "Ada@Example.com", event: "signup", data: { plan: "pro" } });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(typeof r.body.data.contact).toBe("string");
    expect(typeof r.body.data.event).toBe("string");
    expect(new Date(r.body.data.timestamp).toISOString()).toBe(r.body.data.timestamp);
    const c = (await srv.api(`/contacts/${r.body.data.contact}`, { key: acc.secretKey })).body;
    expect(c).toMatchObject({ email: "ada@example.com", subscribed: true, data: { plan: "pro" } });
    const evs = (await srv.api(`/events`, { key: acc.secretKey })).body;
    expect(evs.total).toBe(1);
    expect(evs.data[0]).toEqual({ id: r.body.data.event, name: "signup", contactId: c.id, data: { plan: "pro" }, createdAt: r.body.data.timestamp });
  });

  test("re-tracking creates a new event each time; the secret key works too", async () => {
    const acc = await createAccount(srv.api);
    const a = await track(srv.api, acc.publicKey, { email: "r@example.com", event: "login" });
    const b = await track(srv.api, acc.secretKey, { email: "r@example.com", event: "login" });
    const c = await srv.api("/events/track", { key: acc.secretKey, body: { email: "r@example.com", event: "login" } });
    const d = await srv.api("/events/track", { key: acc.publicKey, body: { email: "r@example.com", event: "login" } });
    for (const r of [a, b, c, d]) expect(r.status).toBe(200);
    expect(new Set([a, b, c, d].map((r) => r.body.data.contact)).size).toBe(1);
    expect(new Set([a, b, c, d].map((r) => r.body.data.event)).size).toBe(4);
    expect((await srv.api(`/events?name=login`, { key: acc.secretKey })).body.total).toBe(4);
  });

  test("reserved event names are 422 with errors[].code reserved_event, and create nothing", async () => {
    const acc = await createAccount(srv.api);
    for (const event of ["email.sent", "email.open", "contact.subscribed", "contact.unsubscribed", "segment.vip.entry", "segment.big-spenders.exit"]) {
      const r = await track(srv.api, acc.publicKey, { email: "x@example.com", event });
      expect(r.status).toBe(422);
      expect(r.body.success).toBe(false);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.errors).toContainEqual(expect.objectContaining({ field: "event", code: "reserved_event" }));
    }
    expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(0);
    expect((await srv.api("/events", { key: acc.secretKey })).body.total).toBe(0);
  });

  test("invalid bodies are 422 and create nothing", async () => {
    const acc = await createAccount(srv.api);
    for (const body of [
      { event: "signup" },
      { email: "x@example.com" },
      { email: "nope", event: "signup" },
      { email: "x@example.com", event: "" },
      { email: "x@example.com", event: "signup", data: [1] },
      { email: "x@example.com", event: "signup", data: "str" },
      { email: "x@example.com", event: "signup", subscribed: "no" },
      { email: "x@example.com", event: "signup", data: { 'bad"key': 1 } },
    ]) {
      const r = await track(srv.api, acc.publicKey, body);
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.errors.length).toBeGreaterThan(0);
    }
    expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(0);
    const bad = await srv.api("/v1/track", { key: acc.publicKey, method: "POST", raw: "{nope", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(400);
  });

  test("authentication: no key or a wrong key is 401", async () => {
    expect((await srv.api("/v1/track", { body: { email: "a@b.co", event: "x" } })).status).toBe(401);
    const r = await srv.api("/v1/track", { key: "pk_doesnotexist123456", body: { email: "a@b.co", event: "x" } });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("INVALID_API_KEY");
  });

  test("every data rule through /v1/track", async () => {
    const acc = await createAccount(srv.api);
    const first = await track(srv.api, acc.publicKey, { email: "d@example.com", event: "seed", data: { plan: "pro", name: "Ada", gone: "x" } });
    const r = await track(srv.api, acc.publicKey, {
      email: "d@example.com",
      event: "upgrade",
      data: {
        plan: "team",
        seats: 4,
        gone: null,
        name: "",
        coupon: { value: "SAVE", persistent: false },
        id: "x",
        svc_id: "x",
        svc_email: "x",
        email: "evil@example.com",
        unsubscribeUrl: "x",
        subscribeUrl: "x",
        manageUrl: "x",
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.contact).toBe(first.body.data.contact);
    const c = (await srv.api(`/contacts/${r.body.data.contact}`, { key: acc.secretKey })).body;
    expect(c.email).toBe("d@example.com");
    expect(c.data).toEqual({ plan: "team", name: "Ada", seats: 4 });
    // The event carries what this track supplied, including the non-persistent value.
    const ev = (await srv.api(`/events?name=upgrade`, { key: acc.secretKey })).body.data[0];
    expect(ev.data).toEqual({ plan: "team", seats: 4, coupon: "SAVE" });
  });

  test("subscribed: new contacts default to true, existing keep their state, explicit values flip and record events", async () => {
    const acc = await createAccount(srv.api);
    const id = (await track(srv.api, acc.publicKey, { email: "s@example.com", event: "a", subscribed: false })).body.data.contact;
    const get = async () => (await srv.api(`/contacts/${id}`, { key: acc.secretKey })).body.subscribed;
    expect(await get()).toBe(false); // new contact created unsubscribed: no flip event
    await track(srv.api, acc.publicKey, { email: "s@example.com", event: "b" });
    expect(await get()).toBe(false); // false tracks without resubscribing
    await track(srv.api, acc.publicKey, { email: "s@example.com", event: "c", subscribed: true });
    expect(await get()).toBe(true);
    await track(srv.api, acc.publicKey, { email: "s@example.com", event: "d", subscribed: true });
    await track(srv.api, acc.publicKey, { email: "s@example.com", event: "e", subscribed: false });
    expect(await get()).toBe(false);
    const names = (await srv.api(`/events/contact/${id}?limit=100`, { key: acc.secretKey })).body.data.map((e: any) => e.name).reverse();
    expect(names).toEqual(["a", "b", "contact.subscribed", "c", "d", "contact.unsubscribed", "e"]);
    const flip = (await srv.api(`/events?name=contact.subscribed`, { key: acc.secretKey })).body.data[0];
    expect(flip.data).toEqual({ source: "track" });
  });

  test("Idempotency-Key: a reuse is 409 IDEMPOTENCY_KEY_REUSED with details and is not performed again", async () => {
    const acc = await createAccount(srv.api);
    const headers = { "Idempotency-Key": "order-42" };
    const firstFrom = srv.clock.now();
    const a = await track(srv.api, acc.publicKey, { email: "i@example.com", event: "purchase" }, headers);
    const firstTo = srv.clock.now();
    expect(a.status).toBe(200);
    const b = await track(srv.api, acc.publicKey, { email: "i@example.com", event: "purchase" }, headers);
    expect(b.status).toBe(409);
    expect(b.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(b.body.error.details).toMatchObject({ key: "order-42", originalRequest: "POST /v1/track", originalStatusCode: 200 });
    expectTimeBetween(b.body.error.details.originalRequestAt, firstFrom, firstTo);
    expect((await srv.api(`/events?name=purchase`, { key: acc.secretKey })).body.total).toBe(1);
    // Keys are per project; a 422 does not consume the key.
    const other = await createAccount(srv.api);
    expect((await track(srv.api, other.publicKey, { email: "i@example.com", event: "purchase" }, headers)).status).toBe(200);
    expect((await track(srv.api, acc.publicKey, { email: "i@example.com", event: "email.x" }, { "Idempotency-Key": "k2" })).status).toBe(422);
    expect((await track(srv.api, acc.publicKey, { email: "i@example.com", event: "ok" }, { "Idempotency-Key": "k2" })).status).toBe(200);
  });

  test("concurrent tracks of one new contact create one contact and every event", async () => {
    const acc = await createAccount(srv.api);
    const rs = await Promise.all(
      Array.from({ length: 60 }, (_, i) => track(srv.api, acc.publicKey, { email: "burst@example.com", event: "tick", data: { n: i } })),
    );
    expect(rs.every((r) => r.status === 200)).toBe(true);
    expect(new Set(rs.map((r) => r.body.data.contact)).size).toBe(1);
    expect((await srv.api(`/events?name=tick`, { key: acc.secretKey })).body.total).toBe(60);
    expect((await srv.api(`/contacts`, { key: acc.secretKey })).body.total).toBe(1);
  });

  test("tracked and subscription events are in the log, in order, with their data, when the requests answer", async () => {
    const acc = await createAccount(srv.api);
    await track(srv.api, acc.publicKey, { email: "h@example.com", event: "signup", subscribed: false, data: { plan: "pro" } });
    await track(srv.api, acc.publicKey, { email: "h@example.com", event: "upgrade", subscribed: true });
    const rows = await srv.ctx.db.selectFrom("events").select(["name", "data"]).where("project_id", "=", acc.projectId).orderBy("seq").execute();
    expect(rows.map((r) => ({ name: r.name, data: r.data === null ? {} : JSON.parse(r.data) }))).toEqual([
      { name: "signup", data: { plan: "pro" } },
      { name: "contact.subscribed", data: { source: "track" } },
      { name: "upgrade", data: {} },
    ]);
  });
});

// Black-box: POST /v1/track (pk and sk), idempotency, reserved names, contact upsert rules, and the /events endpoints.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { expectEnvelope, expectOk, expectValidation, newProject, NO_SUCH_ID } from "./support";
import { contactEvents, items, lookupContact } from "../support/api";


let srv: TestServer;
let acc: Account;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB track");
});
afterAll(() => srv?.close());

let seq = 0;
const uniq = (p = "t") => `${p}${++seq}-${Date.now()}@track-bb.example`;
const track = (body: unknown, key = acc.publicKey, headers: Record<string, string> = {}) => srv.api("/v1/track", { key, body, headers });
const lookup = (email: string, who: Account = acc) => lookupContact(srv.api, who, email);
const contact = async (id: string) => (await srv.api(`/contacts/${id}`, { key: acc.secretKey })).body;
const eventsOf = (contactId: string) => contactEvents(srv.api, acc, contactId);

describe("POST /v1/track", () => {
  test("with the public key: { success: true, data: { contact: <id>, event: <id>, timestamp } }; the contact is created", async () => {
    const email = uniq();
    const trackedFrom = srv.clock.now();
    const res = await track({ email, event: "signed_up", data: { plan: "pro" } });
    const trackedTo = srv.clock.now();
    expectOk(res);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data).sort()).toEqual(["contact", "event", "timestamp"]);
    expect(typeof res.body.data.contact).toBe("string");
    expect(typeof res.body.data.event).toBe("string");
    expectTimeBetween(res.body.data.timestamp, trackedFrom, trackedTo);
    const c = await contact(res.body.data.contact);
    expect(c.email).toBe(email);
    expect(c.subscribed).toBe(true); // new contacts default to true
    expect(c.data.plan).toBe("pro");
  });

  test("the secret key is accepted too (decisions.md)", async () => {
    expectOk(await track({ email: uniq(), event: "with_sk" }, acc.secretKey));
  });

  test("no key or a bad key: 401", async () => {
    expectEnvelope(await srv.api("/v1/track", { body: { email: uniq(), event: "x" } }), 401);
    expectEnvelope(await track({ email: uniq(), event: "x" }, "pk_not_a_real_key_12345"), 401);
  });

  test("re-tracking the same event creates a new event record each time", async () => {
    const email = uniq();
    const a = (await track({ email, event: "clicked_button" })).body.data;
    const b = (await track({ email, event: "clicked_button" })).body.data;
    expect(a.contact).toBe(b.contact);
    expect(a.event).not.toBe(b.event);
    const evs = (await eventsOf(a.contact)).filter((e) => e.name === "clicked_button");
    expect(evs.length).toBe(2);
  });

  test("event records are { id, name, contactId, data, createdAt }", async () => {
    const trackedFrom = srv.clock.now();
    const r = (await track({ email: uniq(), event: "shape_check", data: { amount: 5 } })).body.data;
    const ev = (await eventsOf(r.contact)).find((e) => e.id === r.event);
    expect(ev).toBeDefined();
    for (const k of ["id", "name", "contactId", "data", "createdAt"]) expect(ev).toHaveProperty(k);
    expect(ev.name).toBe("shape_check");
    expect(ev.contactId).toBe(r.contact);
    // The stored event's time is the time tracking answered with.
    expectTimeBetween(ev.createdAt, trackedFrom, srv.clock.now());
    expect(ev.createdAt).toBe(r.timestamp);
  });

  test("reserved names are 422 VALIDATION_ERROR with errors[].code reserved_event, and nothing is created", async () => {
    for (const event of ["email.open", "email.anything", "contact.subscribed", "contact.unsubscribed", "segment.vips.entry", "segment.vips.exit"]) {
      const email = uniq("reserved");
      const res = await track({ email, event });
      const errors = expectValidation(res);
      expect(errors.map((e) => e.code)).toContain("reserved_event");
      expect(await lookup(email)).toBeUndefined();
    }
  });

  test("similar but not reserved names are accepted", async () => {
    for (const event of ["emailed", "contact.created", "segment.vips", "order.email"]) expectOk(await track({ email: uniq(), event }));
  });

  test("email and event are required; email must be an email (422)", async () => {
    expectValidation(await track({ event: "x" }), "email");
    expectValidation(await track({ email: uniq() }), "event");
    expectValidation(await track({ email: "nope", event: "x" }), "email");
  });

  test("subscribed: existing contacts keep their state unless given; an explicit value flips it and emits the event", async () => {
    const email = uniq();
    const first = (await track({ email, event: "a", subscribed: false })).body.data;
    expect((await contact(first.contact)).subscribed).toBe(false);
    // Omitted: unchanged (not resubscribed).
    await track({ email, event: "b" });
    expect((await contact(first.contact)).subscribed).toBe(false);
    // false again: still no resubscription, no event.
    await track({ email, event: "c", subscribed: false });
    // Explicit true: subscribed, with contact.subscribed recorded.
    await track({ email, event: "d", subscribed: true });
    expect((await contact(first.contact)).subscribed).toBe(true);
    const names = (await eventsOf(first.contact)).map((e) => e.name);
    expect(names.filter((n) => n === "contact.subscribed").length).toBe(1);
  });

  test("data rules: null deletes, empty string ignored, reserved keys dropped, { value, persistent: false } not stored", async () => {
    const email = uniq();
    const r = (await track({ email, event: "e1", data: { plan: "free", city: "Rome", old: 1 } })).body.data;
    await track({
      email,
      event: "e2",
      data: { plan: "pro", old: null, city: "", email: "x@y.example", id: "x", svc_id: "x", svc_email: "x", unsubscribeUrl: "x", coupon: { value: "SAVE10", persistent: false } },
    });
    expect((await contact(r.contact)).data).toEqual({ plan: "pro", city: "Rome" });
    expect((await contact(r.contact)).email).toBe(email);
  });

  describe("Idempotency-Key", () => {
    test("a reused key is 409 IDEMPOTENCY_KEY_REUSED with details; the event is not recorded again", async () => {
      const email = uniq();
      const key = `track-${Date.now()}`;
      const firstFrom = srv.clock.now();
      const first = await track({ email, event: "paid" }, acc.publicKey, { "idempotency-key": key });
      const firstTo = srv.clock.now();
      expectOk(first);
      const again = await track({ email, event: "paid" }, acc.publicKey, { "idempotency-key": key });
      const err = expectEnvelope(again, 409, "IDEMPOTENCY_KEY_REUSED");
      expect(err.details).toBeDefined();
      for (const k of ["key", "originalRequest", "originalRequestAt", "originalStatusCode"]) expect(err.details).toHaveProperty(k);
      expect(err.details!.key).toBe(key);
      expectTimeBetween(err.details!.originalRequestAt, firstFrom, firstTo);
      const evs = (await eventsOf(first.body.data.contact)).filter((e) => e.name === "paid");
      expect(evs.length).toBe(1);
    });

    test("a rejected request (422) does not use up its key", async () => {
      const key = `released-${Date.now()}`;
      expectValidation(await track({ email: uniq(), event: "email.sent" }, acc.publicKey, { "idempotency-key": key }));
      expectOk(await track({ email: uniq(), event: "fine" }, acc.publicKey, { "idempotency-key": key }));
    });

    test("keys are per project", async () => {
      const other = await newProject(srv.api, acc, "Track other");
      const key = `shared-${Date.now()}`;
      expectOk(await track({ email: uniq(), event: "x" }, acc.publicKey, { "idempotency-key": key }));
      expectOk(await track({ email: uniq(), event: "x" }, other.publicKey, { "idempotency-key": key }));
    });

    test("the key is valid for 24 hours", async () => {
      const key = `ttl-${Date.now()}`;
      expectOk(await track({ email: uniq(), event: "x" }, acc.publicKey, { "idempotency-key": key }));
      srv.clock.advance(23 * 3_600_000);
      expectEnvelope(await track({ email: uniq(), event: "x" }, acc.publicKey, { "idempotency-key": key }), 409, "IDEMPOTENCY_KEY_REUSED");
      srv.clock.advance(2 * 3_600_000);
      expectOk(await track({ email: uniq(), event: "x" }, acc.publicKey, { "idempotency-key": key }));
    });

    test("a key longer than 255 characters is refused (not silently used): 422 VALIDATION_ERROR (README \"API\")", async () => {
      const res = await track({ email: uniq(), event: "x" }, acc.publicKey, { "idempotency-key": "k".repeat(256) });
      expectEnvelope(res, 422, "VALIDATION_ERROR");
    });
  });
});

describe("/events", () => {
  let p: Account;
  let contactId: string;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "Events");
    for (const event of ["viewed", "viewed", "bought"]) {
      const r = await srv.api("/v1/track", { key: p.publicKey, body: { email: "ev@events-bb.example", event } });
      expectOk(r);
      contactId = r.body.data.contact;
    }
  });

  test("POST /events/track is an alias of /v1/track (sk and pk)", async () => {
    const a = await srv.api("/events/track", { key: p.secretKey, body: { email: "alias@events-bb.example", event: "alias_sk" } });
    expectOk(a);
    const b = await srv.api("/events/track", { key: p.publicKey, body: { email: "alias@events-bb.example", event: "alias_pk" } });
    expectOk(b);
    expectValidation(await srv.api("/events/track", { key: p.secretKey, body: { email: "alias@events-bb.example", event: "email.sent" } }));
  });

  test("GET /events lists recent tracked events; GET /events/names lists distinct names", async () => {
    const res = await srv.api("/events", { key: p.secretKey });
    expect(res.status).toBe(200);
    const names = items(res.body).map((e: any) => e.name);
    expect(names.filter((n: string) => n === "viewed").length).toBe(2);
    const distinct = await srv.api("/events/names", { key: p.secretKey });
    expect(distinct.status).toBe(200);
    const list = items(distinct.body).map((n: any) => (typeof n === "string" ? n : n.name));
    expect(list).toContain("viewed");
    expect(list).toContain("bought");
    expect(list.filter((n: string) => n === "viewed").length).toBe(1);
  });

  test("GET /events/stats and GET /events/:eventName/usage answer", async () => {
    expect((await srv.api("/events/stats", { key: p.secretKey })).status).toBe(200);
    expect((await srv.api("/events/viewed/usage", { key: p.secretKey })).status).toBe(200);
  });

  test("GET /events/contact/:contactId lists all events of the contact", async () => {
    const res = await srv.api(`/events/contact/${contactId}`, { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(items(res.body).map((e: any) => e.name).sort()).toEqual(["bought", "viewed", "viewed"]);
  });

  test("DELETE /events/:eventName deletes every event with that name in the project only", async () => {
    const other = await newProject(srv.api, acc, "Events other");
    expectOk(await srv.api("/v1/track", { key: other.publicKey, body: { email: "o@events-bb.example", event: "viewed" } }));
    expectOk(await srv.api("/events/viewed", { method: "DELETE", key: p.secretKey }));
    const mine = items((await srv.api(`/events/contact/${contactId}`, { key: p.secretKey })).body).map((e: any) => e.name);
    expect(mine).toEqual(["bought"]);
    const theirs = items((await srv.api("/events", { key: other.secretKey })).body).map((e: any) => e.name);
    expect(theirs).toContain("viewed");
  });

  test("the public key is refused on the /events dashboard endpoints", async () => {
    for (const path of ["/events", "/events/stats", "/events/names", `/events/contact/${contactId}`, "/events/viewed/usage"]) {
      expectEnvelope(await srv.api(path, { key: p.publicKey }), 401, "INVALID_API_KEY");
    }
    expectEnvelope(await srv.api("/events/bought", { method: "DELETE", key: p.publicKey }), 401, "INVALID_API_KEY");
  });

  test("another project's contact id, and an unknown one, are 404 (spec: 404 resource does not exist)", async () => {
    expectEnvelope(await srv.api(`/events/contact/${contactId}`, { key: acc.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/events/contact/${NO_SUCH_ID}`, { key: p.secretKey }), 404, "NOT_FOUND");
  });
});

// Black-box: the events API (GET /events, /events/contact/:id, /events/names, /events/stats, usage, DELETE
// /events/:name) and what /v1/track does to contacts, with their edges. Written from api-spec.md, decisions.md
// and docs/api.md (the API guide) only; moved here from blackbox/contacts-more.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectCursorPage, expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID, UUID } from "../blackbox/support";
import { contactEvents, items } from "../support/api";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB events");
});
afterAll(() => srv?.close());

let seq = 0;
const uniq = (p = "e") => `${p}${++seq}-${Date.now()}@events-bb.example`;
const upsert = (body: unknown, who: Account = acc) => srv.api("/contacts", { key: who.secretKey, body });
const get = (id: string, who: Account = acc) => srv.api(`/contacts/${id}`, { key: who.secretKey });
const del = (path: string, who: Account = acc) => srv.api(path, { method: "DELETE", key: who.secretKey });
const eventsOf = (contactId: string, who: Account = acc) => contactEvents(srv.api, who, contactId);
const track = (body: unknown, who: Account = acc) => srv.api("/v1/track", { key: who.publicKey, body });

/** Polls a job's status (running queued work first) until it has finished. */
async function waitJob(path: string, who: Account = acc) {
  const read = async () => {
    await srv.drainJobs();
    const res = await srv.api(path, { key: who.secretKey });
    expect(res.status).toBe(200);
    return res.body;
  };
  return waitFor(read, { until: (j) => j.state === "completed" || j.state === "failed", what: `job ${path} to finish` });
}

describe("/events: lists, names, stats, usage, delete", () => {
  let p: Account;
  let cid: string;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "Events more");
    for (const event of ["opened_app", "purchase", "opened_app"]) {
      srv.clock.advance(1000);
      const r = await track({ email: "e@events-more.example", event, data: { n: 1 } }, p);
      expectOk(r);
      cid = r.body.data.contact;
    }
    srv.clock.advance(1000);
    expectOk(await track({ email: "f@events-more.example", event: "purchase" }, p));
  });

  test("GET /events: newest first, event records { id, name, contactId, data, createdAt }; filters name and contactId", async () => {
    const res = await srv.api("/events", { key: p.secretKey });
    expect(res.status).toBe(200);
    const evs = items(res.body);
    expect(evs.length).toBe(4);
    const times = evs.map((e: any) => Date.parse(e.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    for (const e of evs) {
      expect(e.id).toMatch(UUID);
      expect(typeof e.name).toBe("string");
      expect(typeof e.contactId).toBe("string");
      expect(e.data).toBeObject();
      expect(isIsoDate(e.createdAt)).toBe(true);
    }
    const byName = items((await srv.api("/events?name=purchase", { key: p.secretKey })).body);
    expect(byName.length).toBe(2);
    for (const e of byName) expect(e.name).toBe("purchase");
    const byContact = items((await srv.api(`/events?contactId=${cid}`, { key: p.secretKey })).body);
    expect(byContact.map((e: any) => e.name)).toEqual(["opened_app", "purchase", "opened_app"]);
  });

  test("GET /events/contact/:id is the contact's events, newest first", async () => {
    const evs = await eventsOf(cid, p);
    expect(evs.map((e) => e.name)).toEqual(["opened_app", "purchase", "opened_app"]);
  });

  test("GET /events/names: { names, data: [{ name, count, lastSeenAt }] }", async () => {
    const res = await srv.api("/events/names", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect([...res.body.names].sort()).toEqual(["opened_app", "purchase"]);
    const byName = Object.fromEntries(res.body.data.map((d: any) => [d.name, d]));
    expect(byName.opened_app.count).toBe(2);
    expect(byName.purchase.count).toBe(2);
    for (const d of res.body.data) {
      expect(Object.keys(d).sort()).toEqual(["count", "lastSeenAt", "name"]);
      expect(isIsoDate(d.lastSeenAt)).toBe(true);
    }
  });

  test("GET /events/stats: { from, to, total, events: [{ name, count }], daily: [{ date, count }] }", async () => {
    const res = await srv.api("/events/stats", { key: p.secretKey });
    expect(res.status).toBe(200);
    for (const k of ["from", "to", "total", "events", "daily"]) expect(res.body).toHaveProperty(k);
    expect(isIsoDate(res.body.from)).toBe(true);
    expect(isIsoDate(res.body.to)).toBe(true);
    expect(res.body.total).toBe(4);
    const counts = Object.fromEntries(res.body.events.map((e: any) => [e.name, e.count]));
    expect(counts).toEqual({ opened_app: 2, purchase: 2 });
    expect(Array.isArray(res.body.daily)).toBe(true);
    expect(res.body.daily.reduce((s: number, d: any) => s + d.count, 0)).toBe(4);
    for (const d of res.body.daily) {
      expect(typeof d.date).toBe("string");
      expect(typeof d.count).toBe("number");
    }
    // days=30 is the default window.
    const d30 = await srv.api("/events/stats?days=30", { key: p.secretKey });
    expect(d30.body.total).toBe(4);
    expect(Date.parse(d30.body.to) - Date.parse(d30.body.from)).toBe(Date.parse(res.body.to) - Date.parse(res.body.from));
  });

  test("GET /events/stats: a window in the past counts nothing; bad from/to/days are 400", async () => {
    const res = await srv.api("/events/stats?from=2001-01-01T00:00:00Z&to=2001-01-02T00:00:00Z", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(0);
    expect(res.body.events).toEqual([]);
    expectEnvelope(await srv.api("/events/stats?from=yesterday", { key: p.secretKey }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/events/stats?days=abc", { key: p.secretKey }), 400, "BAD_REQUEST");
  });

  test("an event's data is what the request supplied after the rules, non-persistent values included", async () => {
    const r = await track({ email: uniq(), event: "with_data", data: { plan: "pro", coupon: { value: "SAVE", persistent: false }, email: "x@y.example", gone: "" } });
    expectOk(r);
    const ev = (await eventsOf(r.body.data.contact)).find((e) => e.id === r.body.data.event);
    expect(ev.data.plan).toBe("pro");
    expect(ev.data.coupon).toBe("SAVE");
    expect(ev.data.email).toBeUndefined();
    const c = (await get(r.body.data.contact)).body;
    expect(c.data).toEqual({ plan: "pro" });
  });

  test("event names are trimmed; reserved names match case-insensitively; over 255 characters is 422", async () => {
    const r = await track({ email: uniq(), event: "  padded_name  " });
    expectOk(r);
    const ev = (await eventsOf(r.body.data.contact)).find((e) => e.id === r.body.data.event);
    expect(ev.name).toBe("padded_name");
    for (const event of ["EMAIL.sent", "Contact.Subscribed", " contact.unsubscribed ", "Segment.Vips.Entry"]) {
      const errors = expectValidation(await track({ email: uniq(), event }));
      expect(errors.map((e) => e.code)).toContain("reserved_event");
    }
    expectValidation(await track({ email: uniq(), event: "e".repeat(256) }), "event");
    expectValidation(await track({ email: uniq(), event: "   " }), "event");
    expectOk(await track({ email: uniq(), event: "e".repeat(255) }));
  });

  test("usage names the segments that reference the event name", async () => {
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "Buyers", condition: { logic: "AND", groups: [{ filters: [{ field: "event.purchase", operator: "triggered" }] }] } },
    });
    expect(seg.status).toBe(201);
    const res = await srv.api("/events/purchase/usage", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).toContain(seg.body.id);
    const none = await srv.api("/events/opened_app/usage", { key: p.secretKey });
    expect(JSON.stringify(none.body)).not.toContain(seg.body.id);
  });

  test("DELETE /events/:name answers { name, deleted }; system names are 400; unknown names delete 0", async () => {
    const q = await newProject(srv.api, acc, "Events delete");
    expectOk(await track({ email: "d@events-more.example", event: "gone_soon" }, q));
    expectOk(await track({ email: "d@events-more.example", event: "gone_soon" }, q));
    const res = await del("/events/gone_soon", q);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: "gone_soon", deleted: 2 });
    const again = await del("/events/gone_soon", q);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ name: "gone_soon", deleted: 0 });
    for (const name of ["contact.subscribed", "contact.unsubscribed", "email.sent", "segment.vip.entry"]) {
      expectEnvelope(await del(`/events/${name}`, q), 400);
    }
    const names = await srv.api("/events/names", { key: q.secretKey });
    expect(names.body.names).not.toContain("gone_soon");
  });

  test("tenant isolation: another project sees none of these events", async () => {
    const other = await newProject(srv.api, acc, "Events isolation");
    expect(items((await srv.api("/events", { key: other.secretKey })).body)).toEqual([]);
    expect(items((await srv.api(`/events?contactId=${cid}`, { key: other.secretKey })).body)).toEqual([]);
    const names = await srv.api("/events/names", { key: other.secretKey });
    expect(names.body.names).toEqual([]);
    const stats = await srv.api("/events/stats", { key: other.secretKey });
    expect(stats.body.total).toBe(0);
    // Deleting a name there leaves this project's events alone.
    expect((await del("/events/purchase", other)).body).toEqual({ name: "purchase", deleted: 0 });
    expect(items((await srv.api("/events?name=purchase", { key: p.secretKey })).body).length).toBe(2);
  });
});

describe("/v1/track and contacts", () => {
  test("/v1/track: a new contact created unsubscribed records no subscription event; an explicit flip names its source", async () => {
    const email = uniq("trk");
    const r = await track({ email, event: "first", subscribed: false });
    expectOk(r);
    const id = r.body.data.contact;
    expect((await get(id)).body.subscribed).toBe(false);
    expect((await eventsOf(id)).map((e) => e.name)).toEqual(["first"]);
    await track({ email: email.toUpperCase(), event: "second", subscribed: true });
    const sub = (await eventsOf(id)).filter((e) => e.name === "contact.subscribed");
    expect(sub.length).toBe(1);
    expect(typeof sub[0].data.source).toBe("string");
  });

  test("/v1/track finds a contact created by POST /contacts whatever the case of the address", async () => {
    const email = uniq("case");
    const c = (await upsert({ email })).body;
    const r = await track({ email: email.toUpperCase(), event: "x" });
    expect(r.body.data.contact).toBe(c.id);
  });
});

describe("/events: edges", () => {
  test("GET /events is a cursor list: total on the first page only, limit clamped, bad limit 400", async () => {
    const p = await newProject(srv.api, acc, "Events paging");
    for (let i = 0; i < 5; i++) {
      srv.clock.advance(10);
      expectOk(await track({ email: "pg@events-more.example", event: `ev${i}` }, p));
    }
    const first = await srv.api("/events?limit=2", { key: p.secretKey });
    expectCursorPage(first);
    expect(first.body.total).toBe(5);
    expect(first.body.data.map((e: any) => e.name)).toEqual(["ev4", "ev3"]);
    const second = await srv.api(`/events?limit=2&cursor=${encodeURIComponent(first.body.cursor)}`, { key: p.secretKey });
    expectCursorPage(second);
    expect(second.body.total).toBe(0);
    expect(second.body.data.map((e: any) => e.name)).toEqual(["ev2", "ev1"]);
    const big = await srv.api("/events?limit=1000", { key: p.secretKey });
    expect(big.status).toBe(200);
    expect(big.body.data.length).toBe(5);
    expectEnvelope(await srv.api("/events?limit=0", { key: p.secretKey }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/events?cursor=%%%", { key: p.secretKey }), 400, "BAD_REQUEST");
  });

  test("GET /events?contactId= of another project's contact is 404", async () => {
    const p = await newProject(srv.api, acc, "Events cid");
    const r = await track({ email: "cid@events-more.example", event: "x" }, p);
    expectEnvelope(await srv.api(`/events?contactId=${r.body.data.contact}`, { key: acc.secretKey }), 404);
    expectEnvelope(await srv.api(`/events?contactId=${NO_SUCH_ID}`, { key: p.secretKey }), 404);
  });

  test("names and stats follow deletes (by name, by contact, by bulk delete)", async () => {
    const p = await newProject(srv.api, acc, "Events rollups");
    const a = (await track({ email: "a@rollups-more.example", event: "alpha" }, p)).body.data.contact;
    await track({ email: "a@rollups-more.example", event: "beta" }, p);
    const b = (await track({ email: "b@rollups-more.example", event: "beta" }, p)).body.data.contact;
    await track({ email: "c@rollups-more.example", event: "gamma" }, p);
    const names = async () => Object.fromEntries((await srv.api("/events/names", { key: p.secretKey })).body.data.map((d: any) => [d.name, d.count]));
    const total = async () => (await srv.api("/events/stats", { key: p.secretKey })).body.total;
    expect(await names()).toEqual({ alpha: 1, beta: 2, gamma: 1 });
    expect(await total()).toBe(4);
    expect((await del("/events/gamma", p)).body).toEqual({ name: "gamma", deleted: 1 });
    expect(await names()).toEqual({ alpha: 1, beta: 2 });
    expect(await total()).toBe(3);
    expect((await del(`/contacts/${a}`, p)).status).toBe(204);
    expect(await names()).toEqual({ beta: 1 });
    expect(await total()).toBe(1);
    const job = await srv.api("/contacts/bulk-delete", { key: p.secretKey, body: { contactIds: [b] } });
    await waitJob(`/contacts/bulk/${job.body.jobId}`, p);
    expect(await names()).toEqual({});
    expect(await total()).toBe(0);
    expect((await srv.api("/events", { key: p.secretKey })).body.data).toEqual([]);
  });

  test("DELETE of a system name is 400 in any case", async () => {
    for (const name of ["Contact.Subscribed", "EMAIL.OPEN"]) expectEnvelope(await del(`/events/${name}`), 400);
  });

  test("event usage names the workflows triggered by the event", async () => {
    const p = await newProject(srv.api, acc, "Event usage wf");
    const wf = await srv.api("/workflows", { key: p.secretKey, body: { name: "On signup", triggerConfig: { eventName: "signed_up" } } });
    expect(wf.status).toBe(201);
    const res = await srv.api("/events/signed_up/usage", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.body)).toContain(wf.body.id);
    const other = await newProject(srv.api, acc, "Event usage other");
    expect(JSON.stringify((await srv.api("/events/signed_up/usage", { key: other.secretKey })).body)).not.toContain(wf.body.id);
  });

  test("/events/stats takes epoch milliseconds for from/to; daily dates are YYYY-MM-DD", async () => {
    const p = await newProject(srv.api, acc, "Stats epoch");
    expectOk(await track({ email: "s@stats-more.example", event: "hit" }, p));
    const now = srv.clock.now();
    const res = await srv.api(`/events/stats?from=${now - 86_400_000}&to=${now + 1000}`, { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    expect(res.body.events).toEqual([{ name: "hit", count: 1 }]);
    for (const d of res.body.daily) expect(d.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(res.body.daily.reduce((s: number, d: any) => s + d.count, 0)).toBe(1);
  });
});

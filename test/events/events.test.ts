import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { track } from "../audience/support";

let srv: TestServer;
let a: Account;
let b: Account;
let ada: string;
let bob: string;

beforeAll(async () => {
  srv = await startServer();
  a = await createAccount(srv.api);
  b = await createAccount(srv.api);
  // Project A: 40 days ago one old event; then recent events. Project B: its own events.
  srv.clock.advance(-40 * 86_400_000);
  ada = (await track(srv.api, a.publicKey, { email: "ada@example.com", event: "signup" })).body.data.contact;
  srv.clock.advance(38 * 86_400_000);
  for (let i = 0; i < 5; i++) await track(srv.api, a.publicKey, { email: "ada@example.com", event: "page_view", data: { i } });
  bob = (await track(srv.api, a.publicKey, { email: "bob@example.com", event: "signup" })).body.data.contact;
  srv.clock.advance(86_400_000);
  await track(srv.api, a.publicKey, { email: "bob@example.com", event: "purchase", data: { amount: 10 } });
  await srv.api(`/contacts/${bob}`, { key: a.secretKey, method: "PATCH", body: { subscribed: false } });
  srv.clock.advance(3_600_000);
  await track(srv.api, b.publicKey, { email: "ada@example.com", event: "b_only" });
});
afterAll(() => srv.close());

test("GET /events lists newest first with a cursor; filters by name and contactId", async () => {
  const all = await srv.api("/events?limit=3", { key: a.secretKey });
  expect(all.status).toBe(200);
  expect(all.body.total).toBe(9);
  expect(all.body.data.map((e: any) => e.name)).toEqual(["contact.unsubscribed", "purchase", "signup"]);
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r: any = await srv.api(`/events?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: a.secretKey });
    if (cursor) expect(r.body.total).toBe(0);
    seen.push(...r.body.data.map((e: any) => e.id));
    cursor = r.body.hasMore ? r.body.cursor : null;
  } while (cursor);
  expect(seen).toHaveLength(9);
  expect([...seen].sort().reverse()).toEqual(seen);
  const views = await srv.api("/events?name=page_view", { key: a.secretKey });
  expect(views.body.total).toBe(5);
  expect(views.body.data.map((e: any) => e.data.i)).toEqual([4, 3, 2, 1, 0]);
  const bobs = await srv.api(`/events?contactId=${bob}`, { key: a.secretKey });
  expect(bobs.body.data.map((e: any) => e.name)).toEqual(["contact.unsubscribed", "purchase", "signup"]);
  const bobSignup = await srv.api(`/events?contactId=${bob}&name=signup`, { key: a.secretKey });
  expect(bobSignup.body.total).toBe(1);
});

test("GET /events/contact/:contactId: the contact's events; 404 for a contact of another project", async () => {
  const r = await srv.api(`/events/contact/${ada}`, { key: a.secretKey });
  expect(r.body.total).toBe(6);
  expect(r.body.data.every((e: any) => e.contactId === ada)).toBe(true);
  expect((await srv.api(`/events/contact/${ada}`, { key: b.secretKey })).status).toBe(404);
  expect((await srv.api(`/events?contactId=${ada}`, { key: b.secretKey })).status).toBe(404);
});

test("events of project A are never visible to project B", async () => {
  const r = await srv.api("/events?limit=100", { key: b.secretKey });
  expect(r.body.total).toBe(1);
  expect(r.body.data.map((e: any) => e.name)).toEqual(["b_only"]);
  expect((await srv.api("/events?name=signup", { key: b.secretKey })).body.total).toBe(0);
  expect((await srv.api("/events/names", { key: b.secretKey })).body.names).toEqual(["b_only"]);
  const stats = await srv.api("/events/stats", { key: b.secretKey });
  expect(stats.body).toMatchObject({ total: 1, events: [{ name: "b_only", count: 1 }] });
  expect((await srv.api("/events/signup", { key: b.secretKey, method: "DELETE" })).body.deleted).toBe(0);
  expect((await srv.api("/events?name=signup", { key: a.secretKey })).body.total).toBe(2);
});

test("GET /events/names: distinct names with counts, system events included", async () => {
  const r = await srv.api("/events/names", { key: a.secretKey });
  expect(r.body.names).toEqual(["contact.unsubscribed", "page_view", "purchase", "signup"]);
  const signup = r.body.data.find((d: any) => d.name === "signup");
  expect(signup.count).toBe(2);
  expect(typeof signup.lastSeenAt).toBe("string");
});

test("GET /events/stats: totals and per-name counts over a window (default 30 days)", async () => {
  const r = await srv.api("/events/stats", { key: a.secretKey });
  expect(r.status).toBe(200);
  // The signup of 40 days ago is outside the default window.
  expect(r.body).toMatchObject({ total: 8 });
  expect(r.body.events).toEqual([
    { name: "page_view", count: 5 },
    { name: "contact.unsubscribed", count: 1 },
    { name: "purchase", count: 1 },
    { name: "signup", count: 1 },
  ]);
  expect(r.body.daily.reduce((s: number, d: any) => s + d.count, 0)).toBe(8);
  const wide = await srv.api("/events/stats?days=60", { key: a.secretKey });
  expect(wide.body.total).toBe(9);
  const from = new Date(srv.clock.now() - 2 * 3_600_000).toISOString();
  const narrow = await srv.api(`/events/stats?from=${encodeURIComponent(from)}`, { key: a.secretKey });
  expect(narrow.body.total).toBe(2);
  expect((await srv.api("/events/stats?days=0", { key: a.secretKey })).status).toBe(400);
  expect((await srv.api("/events/stats?from=yesterday-ish", { key: a.secretKey })).status).toBe(400);
});

test("GET /events/:name/usage aggregates the registered modules", async () => {
  expect((await srv.api("/events/signup/usage", { key: a.secretKey })).body).toEqual({ segments: [], campaigns: [], workflows: [] });
  srv.ctx.contributions.eventUsage.push(async (_c, projectId, name): Promise<Record<string, unknown[]>> =>
    projectId === a.projectId && name === "signup" ? { workflows: [{ id: "w1", name: "Welcome" }] } : {},
  );
  try {
    expect((await srv.api("/events/signup/usage", { key: a.secretKey })).body.workflows).toEqual([{ id: "w1", name: "Welcome" }]);
    expect((await srv.api("/events/signup/usage", { key: b.secretKey })).body.workflows).toEqual([]);
  } finally {
    srv.ctx.contributions.eventUsage.length = 0;
  }
});

test("DELETE /events/:name removes every event of that name in the project; system names are refused", async () => {
  const acc = await createAccount(srv.api);
  for (let i = 0; i < 3; i++) await track(srv.api, acc.publicKey, { email: `x${i}@example.com`, event: "temp.thing" });
  await track(srv.api, acc.publicKey, { email: "x0@example.com", event: "keep" });
  const r = await srv.api(`/events/${encodeURIComponent("temp.thing")}`, { key: acc.secretKey, method: "DELETE" });
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ name: "temp.thing", deleted: 3 });
  expect((await srv.api("/events", { key: acc.secretKey })).body.data.map((e: any) => e.name)).toEqual(["keep"]);
  const sys = await srv.api("/events/contact.unsubscribed", { key: acc.secretKey, method: "DELETE" });
  expect(sys.status).toBe(400);
  expect(sys.body.error.code).toBe("BAD_REQUEST");
});

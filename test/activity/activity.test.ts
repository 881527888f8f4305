import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";

let srv: TestServer;
let a: Account;
let b: Account;
beforeAll(async () => {
  srv = await startServer();
  a = await createAccount(srv.api, "A");
  b = await createAccount(srv.api, "B");
});
afterAll(() => srv.close());

test("the feed lists tracked events and subscription changes, newest first, filtered and paged", async () => {
  const track = (email: string, event: string) => srv.api("/v1/track", { key: a.publicKey, body: { email, event } });
  const signupFrom = srv.clock.now();
  expect((await track("one@example.com", "signup")).status).toBe(200);
  const signupTo = srv.clock.now();
  srv.clock.advance(10);
  expect((await track("two@example.com", "purchase")).status).toBe(200);
  srv.clock.advance(10);
  const unsub = await srv.api("/v1/track", { key: a.publicKey, body: { email: "one@example.com", event: "left", subscribed: false } });
  expect(unsub.status).toBe(200);
  await srv.api("/v1/track", { key: b.publicKey, body: { email: "b@example.com", event: "b-only" } });

  const feed = await srv.api("/activity", { key: a.secretKey });
  expect(feed.status).toBe(200);
  expect(feed.body.total).toBe(4);
  expect(feed.body.data.map((i: any) => i.type)).toEqual(["event", "contact.unsubscribed", "event", "event"]);
  const first = feed.body.data[3];
  expect(first).toMatchObject({ type: "event", contactEmail: "one@example.com", metadata: { name: "signup" } });
  expectTimeBetween(first.timestamp, signupFrom, signupTo);
  expect(first.contactId).toBeString();

  const onlyUnsub = await srv.api("/activity?type=contact.unsubscribed", { key: a.secretKey });
  expect(onlyUnsub.body.data).toHaveLength(1);
  const onlyEvents = await srv.api("/activity?type=event&name=purchase", { key: a.secretKey });
  expect(onlyEvents.body.data.map((i: any) => i.metadata.name)).toEqual(["purchase"]);

  const p1 = await srv.api("/activity?limit=3", { key: a.secretKey });
  expect(p1.body.hasMore).toBe(true);
  const p2 = await srv.api(`/activity?limit=3&cursor=${p1.body.cursor}`, { key: a.secretKey });
  expect(p2.body).toMatchObject({ hasMore: false, total: 0 });
  expect(p2.body.data).toHaveLength(1);

  const types = await srv.api("/activity/types", { key: a.secretKey });
  expect(types.body).toEqual(["contact.unsubscribed", "event"]);
  const stats = await srv.api("/activity/stats", { key: a.secretKey });
  expect(stats.body).toMatchObject({ total: 4, events: 3, unsubscribed: 1, sent: 0, openRate: 0 });
  const recent = await srv.api("/activity/recent-count?minutes=5", { key: a.secretKey });
  expect(recent.body.count).toBe(4);
  srv.clock.advance(10 * 60_000);
  expect((await srv.api("/activity/recent-count?minutes=5", { key: a.secretKey })).body.count).toBe(0);

  // Project B sees only its own.
  const bFeed = await srv.api("/activity", { key: b.secretKey });
  expect(bFeed.body.data.map((i: any) => i.metadata.name)).toEqual(["b-only"]);
  expect((await srv.api("/activity", { key: a.publicKey })).status).toBe(401);
  expect((await srv.api("/activity?from=yesterday-ish", { key: a.secretKey })).status).toBe(400);
  expect(Array.isArray((await srv.api("/activity/upcoming", { key: a.secretKey })).body)).toBe(true);
});

// /v1/track requests that arrive together are committed as one batch (audience/track.ts; on PostgreSQL
// the set-based applyTracksPg). Whatever the batching, the result must be the one of the same tracks
// one after the other: these send many tracks at once so they share batches, on both engines.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { contactEvents, lookupContact } from "../support/api";
import { track } from "../audience/support";
import { TEST_ENGINE } from "../support/postgres";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

const names = (evs: any[]) => evs.map((e) => e.name).sort();
/** The contact with its data (GET /contacts/:id after a lookup by email). */
async function contactOf(acc: Account, email: string): Promise<any> {
  const found = await lookupContact(srv.api, acc, email);
  return (await srv.api(`/contacts/${found!.id}`, { key: acc.secretKey })).body;
}

describe("POST /v1/track in batches", () => {
  test("one new email tracked 30 times at once: one contact, 30 events, the data of every track merged", async () => {
    const acc = await createAccount(srv.api);
    const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => track(srv.api, acc.publicKey, { email: "Same@Batch.example", event: "visit", data: { [`k${i}`]: i } })));
    for (const r of rs) expect(r.status).toBe(200);
    expect(new Set(rs.map((r) => r.body.data.contact)).size).toBe(1);
    expect(new Set(rs.map((r) => r.body.data.event)).size).toBe(30);
    const c = (await srv.api(`/contacts/${rs[0]!.body.data.contact}`, { key: acc.secretKey })).body;
    expect(c.email).toBe("same@batch.example");
    expect(c.subscribed).toBe(true);
    expect(c.data).toEqual(Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, i])));
    const evs = (await srv.api(`/events?name=visit&limit=100`, { key: acc.secretKey })).body;
    expect(evs.total).toBe(30);
    expect(new Set(evs.data.map((e: any) => e.contactId))).toEqual(new Set([c.id]));
    expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(1);
  });

  test("an unsubscribed contact subscribed by one track and given data by another at once: both apply, one contact.subscribed event", async () => {
    const acc = await createAccount(srv.api);
    expect((await srv.api("/contacts", { key: acc.secretKey, body: { email: "flip@batch.example", subscribed: false } })).status).toBe(201);
    const rs = await Promise.all([
      track(srv.api, acc.publicKey, { email: "flip@batch.example", event: "opted-in", subscribed: true }),
      track(srv.api, acc.publicKey, { email: "flip@batch.example", event: "upgraded", data: { plan: "pro" } }),
      track(srv.api, acc.publicKey, { email: "flip@batch.example", event: "upgraded", data: { seats: 3 } }),
    ]);
    for (const r of rs) expect(r.status).toBe(200);
    const c = await contactOf(acc, "flip@batch.example");
    expect(c).toMatchObject({ subscribed: true, data: { plan: "pro", seats: 3 } });
    const evs = await contactEvents(srv.api, acc, c!.id);
    expect(names(evs.filter((e) => !e.name.startsWith("contact.") || e.name === "contact.subscribed"))).toEqual(["contact.subscribed", "opted-in", "upgraded", "upgraded"]);
  });

  test("200 new emails and the same email in two projects at once: each project sees only its own contact", async () => {
    const a = await createAccount(srv.api, "A");
    const b = await createAccount(srv.api, "B");
    const rs = await Promise.all([
      ...Array.from({ length: 200 }, (_, i) => track(srv.api, a.publicKey, { email: `n${i}@batch.example`, event: "signup", data: { i } })),
      track(srv.api, a.publicKey, { email: "both@batch.example", event: "in-a" }),
      track(srv.api, b.publicKey, { email: "both@batch.example", event: "in-b", subscribed: false }),
    ]);
    for (const r of rs) expect(r.status).toBe(200);
    expect(new Set(rs.map((r) => r.body.data.contact)).size).toBe(202);
    expect((await srv.api("/contacts", { key: a.secretKey })).body.total).toBe(201);
    expect((await srv.api("/contacts", { key: b.secretKey })).body.total).toBe(1);
    expect(await contactOf(a, "n17@batch.example")).toMatchObject({ subscribed: true, data: { i: 17 } });
    const inA = (await lookupContact(srv.api, a, "both@batch.example"))!;
    const inB = (await lookupContact(srv.api, b, "both@batch.example"))!;
    expect(inA.id).not.toBe(inB.id);
    expect(inA.subscribed).toBe(true);
    expect(inB.subscribed).toBe(false);
    expect(names(await contactEvents(srv.api, a, inA.id))).toEqual(["in-a"]);
    expect(names(await contactEvents(srv.api, b, inB.id))).toEqual(["in-b"]);
    expect((await srv.api("/events?name=signup", { key: a.secretKey })).body.total).toBe(200);
  });

  // Two instances on one database (PostgreSQL; a SQLite file has one instance): both batches insert the
  // same new contact, one loses the unique race, and its batch is replayed one track at a time.
  test.skipIf(TEST_ENGINE !== "postgres")("two instances tracking one new email at once: one contact, every track answered 200 and recorded", async () => {
    const acc = await createAccount(srv.api);
    const peer = await startServer({ dbPath: srv.dbPath, config: { instanceId: "track-peer" } });
    try {
      const rs = await Promise.all(
        Array.from({ length: 40 }, (_, i) => track(i % 2 ? peer.api : srv.api, acc.publicKey, { email: "race@batch.example", event: "visit", data: { [`k${i}`]: i } })),
      );
      for (const r of rs) expect(r.status).toBe(200);
      expect(new Set(rs.map((r) => r.body.data.contact)).size).toBe(1);
      expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(1);
      expect((await srv.api(`/events?name=visit&limit=100`, { key: acc.secretKey })).body.total).toBe(40);
      const c = await contactOf(acc, "race@batch.example");
      expect(c.data).toEqual(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])));
    } finally {
      await peer.close();
    }
  });
});

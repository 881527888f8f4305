// Black-box: the activity feed and its aggregates (GET /activity, /activity/stats, /activity/recent-count,
// /activity/types, /activity/upcoming). decisions.md: an activity item is { id, type, timestamp, contactId?, contactEmail?, metadata }.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectEnvelope, expectOk, isIsoDate, newProject } from "./support";
import { items } from "../support/api";

let srv: TestServer;
let acc: Account;
let contactId: string;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB activity");
  for (const event of ["signed_up", "viewed_pricing"]) {
    const r = await srv.api("/v1/track", { key: acc.publicKey, body: { email: "act@activity-bb.example", event } });
    expectOk(r);
    contactId = r.body.data.contact;
  }
  // A subscription change is activity too.
  expectOk(await srv.api(`/contacts/${contactId}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: false } }));
});
afterAll(() => srv.close());

describe("GET /activity", () => {
  test("items are { id, type, timestamp, contactId?, contactEmail?, metadata }, newest first", async () => {
    const res = await srv.api("/activity", { key: acc.secretKey });
    expect(res.status).toBe(200);
    const list = items(res.body);
    expect(list.length).toBeGreaterThanOrEqual(3);
    for (const a of list) {
      for (const k of ["id", "type", "timestamp", "metadata"]) expect(a).toHaveProperty(k);
      expect(typeof a.type).toBe("string");
      expect(isIsoDate(a.timestamp)).toBe(true);
      expect(a.metadata).toBeObject();
    }
    const times = list.map((a) => Date.parse(a.timestamp));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    const mine = list.filter((a) => a.contactId === contactId);
    expect(mine.length).toBeGreaterThanOrEqual(3);
    expect(mine.some((a) => a.contactEmail === "act@activity-bb.example")).toBe(true);
    expect(list.map((a) => a.type)).toContain("contact.unsubscribed");
  });

  test("only this project's activity", async () => {
    const other = await newProject(srv.api, acc, "Activity other");
    const res = await srv.api("/activity", { key: other.secretKey });
    expect(res.status).toBe(200);
    expect(items(res.body)).toEqual([]);
  });

  test("the public key is refused on every activity endpoint (401 INVALID_API_KEY)", async () => {
    for (const p of ["/activity", "/activity/stats", "/activity/recent-count", "/activity/types", "/activity/upcoming"]) {
      expectEnvelope(await srv.api(p, { key: acc.publicKey }), 401, "INVALID_API_KEY");
    }
  });
});

describe("activity aggregates", () => {
  test("/activity/stats answers with counts", async () => {
    const res = await srv.api("/activity/stats", { key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toBeObject();
  });

  test("/activity/recent-count counts recent events", async () => {
    const res = await srv.api("/activity/recent-count", { key: acc.secretKey });
    expect(res.status).toBe(200);
    const n = typeof res.body === "number" ? res.body : (res.body.count ?? res.body.total);
    expect(typeof n).toBe("number");
    expect(n).toBeGreaterThanOrEqual(3);
  });

  test("/activity/types lists distinct types", async () => {
    const res = await srv.api("/activity/types", { key: acc.secretKey });
    expect(res.status).toBe(200);
    const types = items(res.body).map((t: any) => (typeof t === "string" ? t : t.type));
    expect(types).toContain("contact.unsubscribed");
    expect(new Set(types).size).toBe(types.length);
  });

  test("/activity/upcoming answers (nothing scheduled yet)", async () => {
    const res = await srv.api("/activity/upcoming", { key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(items(res.body)).toEqual([]);
  });
});

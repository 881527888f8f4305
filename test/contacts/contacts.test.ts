import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

const contactEvents = async (acc: Account, contactId: string) =>
  (await srv.api(`/events/contact/${contactId}?limit=100`, { key: acc.secretKey })).body.data.map((e: any) => e.name);

describe("POST /contacts (upsert)", () => {
  test("creates with subscribed true by default and _meta, then updates by email (case-insensitive)", async () => {
    const acc = await createAccount(srv.api);
    const r1 = await srv.api("/contacts", { key: acc.secretKey, body: { email: "Ada@Example.COM", data: { plan: "pro" } } });
    expect(r1.status).toBe(201);
    expect(r1.body).toMatchObject({ email: "ada@example.com", subscribed: true, data: { plan: "pro" }, _meta: { isNew: true, isUpdate: false } });
    expect(r1.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    const r2 = await srv.api("/contacts", { key: acc.secretKey, body: { email: "ada@example.com", data: { seats: 3 } } });
    expect(r2.status).toBe(200);
    expect(r2.body).toMatchObject({ id: r1.body.id, data: { plan: "pro", seats: 3 }, _meta: { isNew: false, isUpdate: true } });
  });

  test("missing email is 400 with a bare { error } body; an invalid email is 422", async () => {
    const acc = await createAccount(srv.api);
    for (const body of [{}, { data: { a: 1 } }, { email: null }, { email: "  " }, undefined]) {
      const r = await srv.api("/contacts", { key: acc.secretKey, method: "POST", body });
      expect(r.status).toBe(400);
      expect(Object.keys(r.body)).toEqual(["error"]);
      expect(typeof r.body.error).toBe("string");
    }
    const bad = await srv.api("/contacts", { key: acc.secretKey, body: { email: "not-an-email" } });
    expect(bad.status).toBe(422);
    expect(bad.body.error).toMatchObject({ code: "VALIDATION_ERROR", statusCode: 422 });
    expect(bad.body.error.errors[0]).toMatchObject({ field: "email", code: "invalid_string" });
    const wrongType = await srv.api("/contacts", { key: acc.secretKey, body: { email: "a@b.co", subscribed: "yes" } });
    expect(wrongType.status).toBe(422);
    const arrayData = await srv.api("/contacts", { key: acc.secretKey, body: { email: "a@b.co", data: [1, 2] } });
    expect(arrayData.status).toBe(422);
    expect(arrayData.body.error.errors[0]).toMatchObject({ field: "data", code: "invalid_type" });
    expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(0);
  });

  test("subscribed false on create; re-upserting without subscribed keeps the state", async () => {
    const acc = await createAccount(srv.api);
    const r1 = await srv.api("/contacts", { key: acc.secretKey, body: { email: "u@example.com", subscribed: false } });
    expect(r1.body.subscribed).toBe(false);
    const r2 = await srv.api("/contacts", { key: acc.secretKey, body: { email: "u@example.com", data: { x: 1 } } });
    expect(r2.body.subscribed).toBe(false);
    const r3 = await srv.api("/contacts", { key: acc.secretKey, body: { email: "u@example.com", subscribed: true } });
    expect(r3.body.subscribed).toBe(true);
    expect(await contactEvents(acc, r1.body.id)).toEqual(["contact.subscribed"]);
  });

  test("the public key is refused with 401 INVALID_API_KEY on every contacts endpoint", async () => {
    const acc = await createAccount(srv.api);
    for (const [method, path, body] of [
      ["GET", "/contacts"],
      ["POST", "/contacts", { email: "a@b.co" }],
      ["GET", "/contacts/fields"],
      ["POST", "/contacts/lookup", { emails: ["a@b.co"] }],
      ["POST", "/contacts/bulk-delete", { contactIds: ["x"] }],
      ["GET", "/events"],
      ["GET", "/events/names"],
      ["DELETE", "/events/signup"],
    ] as const) {
      const r = await srv.api(path, { key: acc.publicKey, method, body });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("INVALID_API_KEY");
    }
    expect((await srv.api("/contacts")).status).toBe(401);
  });
});

test("a dashboard session with X-Project-Id works like the secret key (contacts and /events/track)", async () => {
  const acc = await createAccount(srv.api);
  const headers = { "x-project-id": acc.projectId };
  const t = await srv.api("/events/track", { cookie: acc.cookie, headers, body: { email: "dash@example.com", event: "clicked" } });
  expect(t.status).toBe(200);
  const list = await srv.api("/contacts", { cookie: acc.cookie, headers });
  expect(list.body.data.map((c: any) => c.email)).toEqual(["dash@example.com"]);
  const other = await createAccount(srv.api);
  expect((await srv.api("/contacts", { cookie: acc.cookie, headers: { "x-project-id": other.projectId } })).status).toBe(403);
});

describe("GET/PATCH/DELETE /contacts/:id", () => {
  test("get, 404 for unknown ids and for another project's contact", async () => {
    const a = await createAccount(srv.api);
    const b = await createAccount(srv.api);
    const c = (await srv.api("/contacts", { key: a.secretKey, body: { email: "x@example.com" } })).body;
    expect((await srv.api(`/contacts/${c.id}`, { key: a.secretKey })).body).toMatchObject({ id: c.id, email: "x@example.com" });
    const other = await srv.api(`/contacts/${c.id}`, { key: b.secretKey });
    expect(other.status).toBe(404);
    expect(other.body.error.code).toBe("NOT_FOUND");
    expect((await srv.api(`/contacts/nope`, { key: a.secretKey })).status).toBe(404);
    expect((await srv.api(`/contacts/${c.id}`, { key: b.secretKey, method: "PATCH", body: { subscribed: false } })).status).toBe(404);
    expect((await srv.api(`/contacts/${c.id}`, { key: b.secretKey, method: "DELETE" })).status).toBe(404);
  });

  test("PATCH applies every data rule", async () => {
    const acc = await createAccount(srv.api);
    const c = (await srv.api("/contacts", { key: acc.secretKey, body: { email: "p@example.com", data: { plan: "pro", name: "Ada", gone: 1 } } })).body;
    const r = await srv.api(`/contacts/${c.id}`, {
      key: acc.secretKey,
      method: "PATCH",
      body: {
        data: {
          plan: "team", // primitive stored
          seats: 5,
          vip: true,
          gone: null, // deleted
          name: "", // ignored
          coupon: { value: "X", persistent: false }, // not stored
          id: "hack",
          svc_id: "x",
          svc_email: "x",
          email: "other@example.com",
          unsubscribeUrl: "x",
          subscribeUrl: "x",
          manageUrl: "x",
        },
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ plan: "team", name: "Ada", seats: 5, vip: true });
    expect(r.body.email).toBe("p@example.com");
    expect(r.body.id).toBe(c.id);
    expect((await srv.api(`/contacts/${c.id}`, { key: acc.secretKey })).body.data).toEqual({ plan: "team", name: "Ada", seats: 5, vip: true });
  });

  test("PATCH email: normalised, 409 when another contact has it, 422 when invalid", async () => {
    const acc = await createAccount(srv.api);
    const a = (await srv.api("/contacts", { key: acc.secretKey, body: { email: "a@example.com" } })).body;
    await srv.api("/contacts", { key: acc.secretKey, body: { email: "b@example.com" } });
    const moved = await srv.api(`/contacts/${a.id}`, { key: acc.secretKey, method: "PATCH", body: { email: "A2@Example.com" } });
    expect(moved.status).toBe(200);
    expect(moved.body.email).toBe("a2@example.com");
    const dup = await srv.api(`/contacts/${a.id}`, { key: acc.secretKey, method: "PATCH", body: { email: "B@example.com" } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("CONFLICT");
    const same = await srv.api(`/contacts/${a.id}`, { key: acc.secretKey, method: "PATCH", body: { email: "a2@example.com" } });
    expect(same.status).toBe(200);
    const bad = await srv.api(`/contacts/${a.id}`, { key: acc.secretKey, method: "PATCH", body: { email: "nope" } });
    expect(bad.status).toBe(422);
  });

  test("PATCH subscribed records a flip event only on a change", async () => {
    const acc = await createAccount(srv.api);
    const c = (await srv.api("/contacts", { key: acc.secretKey, body: { email: "s@example.com" } })).body;
    const patch = (subscribed: boolean) => srv.api(`/contacts/${c.id}`, { key: acc.secretKey, method: "PATCH", body: { subscribed } });
    expect((await patch(false)).body.subscribed).toBe(false);
    await patch(false);
    expect((await patch(true)).body.subscribed).toBe(true);
    await patch(true);
    expect(await contactEvents(acc, c.id)).toEqual(["contact.subscribed", "contact.unsubscribed"]);
    const ev = (await srv.api(`/events?name=contact.unsubscribed`, { key: acc.secretKey })).body.data[0];
    expect(ev).toMatchObject({ name: "contact.unsubscribed", contactId: c.id, data: { source: "api" } });
  });

  test("DELETE removes the contact and its events; empty body", async () => {
    const acc = await createAccount(srv.api);
    const t = await srv.api("/v1/track", { key: acc.publicKey, body: { email: "d@example.com", event: "signup" } });
    const id = t.body.data.contact;
    const del = await srv.api(`/contacts/${id}`, { key: acc.secretKey, method: "DELETE" });
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    expect((await srv.api(`/contacts/${id}`, { key: acc.secretKey })).status).toBe(404);
    expect((await srv.api(`/events`, { key: acc.secretKey })).body.total).toBe(0);
    expect((await srv.api(`/contacts/${id}`, { key: acc.secretKey, method: "DELETE" })).status).toBe(404);
  });
});

describe("lookup and fields", () => {
  test("lookup reports found and notFound; max 500 emails", async () => {
    const acc = await createAccount(srv.api);
    const c = (await srv.api("/contacts", { key: acc.secretKey, body: { email: "here@example.com", subscribed: false } })).body;
    const r = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: ["HERE@example.com", "missing@example.com", "garbage"] } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ found: [{ id: c.id, email: "here@example.com", subscribed: false }], notFound: ["missing@example.com", "garbage"] });
    const many = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: Array.from({ length: 501 }, (_, i) => `u${i}@example.com`) } });
    expect(many.status).toBe(422);
    const max = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: Array.from({ length: 500 }, (_, i) => `u${i}@example.com`) } });
    expect(max.status).toBe(200);
    expect(max.body.notFound).toHaveLength(500);
  });

  test("fields: standard and custom with inferred types and coverage; values; usage; delete", async () => {
    const acc = await createAccount(srv.api);
    const key = acc.secretKey;
    const add = (email: string, data: Record<string, unknown>) => srv.api("/contacts", { key, body: { email, data } });
    await add("a@example.com", { plan: "pro", seats: 3, vip: true, since: "2024-01-05", misc: 1, tags: ["a"] });
    await add("b@example.com", { plan: "pro", seats: 4.5, vip: false, since: "2024-02-01T10:00:00Z", misc: "x" });
    await add("c@example.com", { plan: "free" });
    await add("d@example.com", {});
    const f = await srv.api("/contacts/fields", { key });
    expect(f.status).toBe(200);
    expect(f.body.standard.map((s: any) => s.name)).toEqual(["id", "email", "subscribed", "createdAt", "updatedAt"]);
    const byName = Object.fromEntries(f.body.custom.map((c: any) => [c.name, c]));
    expect(byName.plan).toEqual({ name: "plan", path: "data.plan", type: "string", coverage: 75 });
    expect(byName.seats).toMatchObject({ type: "number", coverage: 50 });
    expect(byName.vip).toMatchObject({ type: "boolean", coverage: 50 });
    expect(byName.since).toMatchObject({ type: "date", coverage: 50 });
    expect(byName.misc).toMatchObject({ type: "mixed" });
    expect(byName.tags).toMatchObject({ type: "object", coverage: 25 });

    const v = await srv.api("/contacts/fields/plan/values", { key });
    expect(v.body).toEqual({ field: "plan", values: [{ value: "pro", count: 2 }, { value: "free", count: 1 }] });
    const vb = await srv.api("/contacts/fields/data.vip/values", { key });
    expect(vb.body.values).toEqual(expect.arrayContaining([{ value: true, count: 1 }, { value: false, count: 1 }]));
    expect((await srv.api("/contacts/fields/unknown/values", { key })).body).toEqual({ field: "unknown", values: [] });

    expect((await srv.api("/contacts/fields/plan/usage", { key })).body).toEqual({ segments: [], campaigns: [], workflows: [] });

    const del = await srv.api("/contacts/fields/plan", { key, method: "DELETE" });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ field: "plan", contactsUpdated: 3 });
    const after = await srv.api("/contacts/fields", { key });
    expect(after.body.custom.map((c: any) => c.name)).not.toContain("plan");
    const a = (await srv.api("/contacts?search=a@", { key })).body.data[0];
    expect(a.data).toEqual({ seats: 3, vip: true, since: "2024-01-05", misc: 1, tags: ["a"] });
  });

  test("field usage aggregates what segments, campaigns and workflows register", async () => {
    const acc = await createAccount(srv.api);
    srv.ctx.contributions.fieldUsage.push(async (_ctx, projectId, field): Promise<Record<string, unknown[]>> =>
      projectId === acc.projectId && field === "plan" ? { segments: [{ id: "s1", name: "Pro users" }] } : {},
    );
    srv.ctx.contributions.fieldUsage.push(async (_ctx, projectId, field): Promise<Record<string, unknown[]>> =>
      projectId === acc.projectId && field === "plan" ? { workflows: [{ id: "w1", name: "Upsell" }] } : {},
    );
    const r = await srv.api("/contacts/fields/data.plan/usage", { key: acc.secretKey });
    expect(r.body).toEqual({ segments: [{ id: "s1", name: "Pro users" }], campaigns: [], workflows: [{ id: "w1", name: "Upsell" }] });
    srv.ctx.contributions.fieldUsage.length = 0;
  });
});

describe("project hooks", () => {
  test("setup-state counts contacts; reset wipes contacts and events", async () => {
    const acc = await createAccount(srv.api);
    await srv.api("/v1/track", { key: acc.publicKey, body: { email: "r@example.com", event: "signup" } });
    const s = await srv.api(`/projects/${acc.projectId}/setup-state`, { key: acc.secretKey });
    expect(s.body).toMatchObject({ contacts: 1, hasEvents: true });
    const reset = await srv.api(`/users/@me/projects/${acc.projectId}/reset`, { cookie: acc.cookie, method: "POST" });
    expect(reset.status).toBe(200);
    expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(0);
    expect((await srv.api("/events", { key: acc.secretKey })).body.total).toBe(0);
    expect((await srv.api(`/projects/${acc.projectId}/setup-state`, { key: acc.secretKey })).body).toMatchObject({ contacts: 0, hasEvents: false });
  });
});

// Black-box: segments (CRUD, slugs, members list, STATIC members, refresh/compute, entry/exit events, delete guard)
// and the condition tree (validation paths, every operator family, units, missing keys) from api-spec.md,
// decisions.md "Segments and conditions" and the README "Segments and conditions" section; never from the code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { expectBare400, expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "./support";
import { items, lookupContact } from "../support/api";

const SEGMENT_KEYS = ["condition", "createdAt", "description", "id", "memberCount", "name", "projectId", "slug", "trackMembership", "type", "updatedAt"];
const CONTACT_KEYS = ["createdAt", "data", "email", "id", "subscribed", "updatedAt"];
const DAY = 86_400_000;
const HOUR = 3_600_000;

type Filter = { field: string; operator: string; value?: unknown; unit?: string };
const f = (field: string, operator: string, value?: unknown, unit?: string): Filter => ({
  field,
  operator,
  ...(value !== undefined ? { value } : {}),
  ...(unit !== undefined ? { unit } : {}),
});
/** One group of ANDed filters. */
const where = (...filters: Filter[]) => ({ logic: "AND", groups: [{ filters }] });

/** The API of one server + account, as the tests of one describe block use it. */
function client(get: () => { srv: TestServer; acc: Account }) {
  const api = (path: string, opts: { method?: string; body?: unknown; who?: Account; key?: string } = {}) => {
    const { srv, acc } = get();
    return srv.api(path, { method: opts.method, body: opts.body, key: opts.key ?? (opts.who ?? acc).secretKey });
  };
  return {
    api,
    create: (body: unknown, who?: Account) => api("/segments", { body, who }),
    get: (id: string, who?: Account) => api(`/segments/${id}`, { who }),
    patch: (id: string, body: unknown, who?: Account) => api(`/segments/${id}`, { method: "PATCH", body, who }),
    del: (id: string, who?: Account) => api(`/segments/${id}`, { method: "DELETE", who }),
    list: (who?: Account) => api("/segments", { who }),
    members: (id: string, qs = "", who?: Account) => api(`/segments/${id}/contacts${qs}`, { who }),
    addMembers: (id: string, body: unknown, who?: Account) => api(`/segments/${id}/members`, { body, who }),
    removeMembers: (id: string, body: unknown, who?: Account) => api(`/segments/${id}/members`, { method: "DELETE", body, who }),
    refresh: (id: string, who?: Account) => api(`/segments/${id}/refresh`, { method: "POST", who }),
    compute: (id: string, who?: Account) => api(`/segments/${id}/compute`, { method: "POST", who }),
    contact: (body: unknown, who?: Account) => api("/contacts", { body, who }),
    patchContact: (id: string, body: unknown) => api(`/contacts/${id}`, { method: "PATCH", body }),
    events: async (contactId: string) => items((await api(`/events/contact/${contactId}`)).body),
    track: (body: unknown) => {
      const { srv, acc } = get();
      return srv.api("/v1/track", { key: acc.publicKey, body });
    },
  };
}

function expectSegment(s: any) {
  for (const k of SEGMENT_KEYS) expect(s).toHaveProperty(k);
  expect(typeof s.id).toBe("string");
  expect(s.id.length).toBeGreaterThan(0);
  expect(["DYNAMIC", "STATIC"]).toContain(s.type);
  expect(typeof s.trackMembership).toBe("boolean");
  expect(Number.isInteger(s.memberCount)).toBe(true);
  expect(typeof s.slug).toBe("string");
  expect(isIsoDate(s.createdAt)).toBe(true);
  expect(isIsoDate(s.updatedAt)).toBe(true);
}

// ---------------------------------------------------------------------------------------------------------------
describe("segments: create, read, update, delete, list, auth", () => {
  let srv: TestServer;
  let acc: Account;
  let other: Account;
  const c = client(() => ({ srv, acc }));
  const plan = (v: string) => where(f("data.plan", "equals", v));

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB segments");
    other = await newProject(srv.api, acc, "BB segments other");
    await c.contact({ email: "pro1@seg-crud.example", data: { plan: "pro" } });
    await c.contact({ email: "pro2@seg-crud.example", data: { plan: "pro" } });
    await c.contact({ email: "free1@seg-crud.example", data: { plan: "free" } });
  });
  afterAll(() => srv?.close());

  test("POST /segments: 201, the segment directly with every field; defaults DYNAMIC and trackMembership false", async () => {
    const from = srv.clock.now();
    const res = await c.create({ name: "Pro plan", description: "paying", condition: plan("pro") });
    expect(res.status).toBe(201);
    expect(res.body.success).toBeUndefined();
    expectSegment(res.body);
    expect(res.body).toMatchObject({ name: "Pro plan", description: "paying", type: "DYNAMIC", trackMembership: false, projectId: acc.projectId, memberCount: 2 });
    expect(res.body.condition).toMatchObject({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] });
    expectTimeBetween(res.body.createdAt, from, srv.clock.now());
    const got = await c.get(res.body.id);
    expect(got.status).toBe(200);
    expectSegment(got.body);
    expect(got.body.id).toBe(res.body.id);
    expect(got.body.memberCount).toBe(2);
    expect(got.body.slug).toBe(res.body.slug);
  });

  test("slug: the lower-case hyphenated name, -2 and -3 on collision", async () => {
    const a = await c.create({ name: "VIP Customers", condition: plan("pro") });
    const b = await c.create({ name: "vip customers", condition: plan("pro") });
    const d = await c.create({ name: "Vip Customers", condition: plan("pro") });
    expect(a.body.slug).toBe("vip-customers");
    expect(b.body.slug).toBe("vip-customers-2");
    expect(d.body.slug).toBe("vip-customers-3");
    // Another project has its own slugs.
    expect((await c.create({ name: "VIP Customers", condition: plan("pro") }, other)).body.slug).toBe("vip-customers");
  });

  test("the slug is fixed at creation: a rename keeps it", async () => {
    const s = (await c.create({ name: "Renamed Later", condition: plan("pro") })).body;
    const res = await c.patch(s.id, { name: "Something Else" });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("Something Else");
    expect(res.body.slug).toBe("renamed-later");
  });

  test("DYNAMIC (explicit or default) without a condition object: 400 with a bare { error } body", async () => {
    expectBare400(await c.create({ name: "No condition" }));
    expectBare400(await c.create({ name: "No condition", type: "DYNAMIC" }));
    expectBare400(await c.create({ name: "No condition", condition: null }));
    expect((await c.list()).body.some((s: any) => s.name === "No condition")).toBe(false);
  });

  test("name 1-100 and description up to 500 chars; beyond is 422 naming the field", async () => {
    expect((await c.create({ name: "n".repeat(100), description: "d".repeat(500), condition: plan("pro") })).status).toBe(201);
    expectValidation(await c.create({ name: "n".repeat(101), condition: plan("pro") }), "name");
    expectValidation(await c.create({ name: "", condition: plan("pro") }), "name");
    expectValidation(await c.create({ condition: plan("pro") }), "name");
    expectValidation(await c.create({ name: "Long description", description: "d".repeat(501), condition: plan("pro") }), "description");
  });

  test("wrong types: type outside DYNAMIC|STATIC, trackMembership not boolean: 422", async () => {
    expectValidation(await c.create({ name: "Bad type", type: "SMART", condition: plan("pro") }), "type");
    expectValidation(await c.create({ name: "Bad track", trackMembership: "yes", condition: plan("pro") }), "trackMembership");
  });

  test("STATIC ignores a condition (even a nonsense one) and starts with no members", async () => {
    const res = await c.create({ name: "Static ignores", type: "STATIC", condition: plan("pro") });
    expect(res.status).toBe(201);
    expectSegment(res.body);
    expect(res.body.type).toBe("STATIC");
    expect(res.body.memberCount).toBe(0);
    expect((await c.members(res.body.id)).body.total).toBe(0);
    const odd = await c.create({ name: "Static odd condition", type: "STATIC", condition: where(f("nope", "whatever")) });
    expect(odd.status).toBe(201);
    expect((await c.create({ name: "Static no condition", type: "STATIC" })).status).toBe(201);
  });

  test("GET /segments: a bare array of all segments, newest first", async () => {
    const p = await newProject(srv.api, acc, "BB segments list");
    const names = ["first", "second", "third"];
    for (const name of names) expect((await c.create({ name, condition: plan("pro") }, p)).status).toBe(201);
    const res = await c.list(p);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.map((s: any) => s.name)).toEqual(["third", "second", "first"]);
    for (const s of res.body) {
      expectSegment(s);
      expect(s.projectId).toBe(p.projectId);
    }
  });

  test("PATCH updates name, description, trackMembership and a DYNAMIC condition (memberCount recounted)", async () => {
    const s = (await c.create({ name: "Patch me", condition: plan("pro") })).body;
    const res = await c.patch(s.id, { name: "Patched", description: "now free", trackMembership: true, condition: plan("free") });
    expect(res.status).toBe(200);
    expectSegment(res.body);
    expect(res.body).toMatchObject({ id: s.id, name: "Patched", description: "now free", trackMembership: true, type: "DYNAMIC", memberCount: 1 });
    expect(res.body.condition.groups[0].filters[0].value).toBe("free");
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(s.updatedAt));
    const got = (await c.get(s.id)).body;
    expect(got).toMatchObject({ name: "Patched", description: "now free", trackMembership: true, memberCount: 1 });
  });

  test("PATCH: condition on a STATIC segment, a changed type, an invalid condition, a long name: 422; nothing changes", async () => {
    const st = (await c.create({ name: "Static patch", type: "STATIC" })).body;
    expectValidation(await c.patch(st.id, { condition: plan("pro") }), "condition");
    const dy = (await c.create({ name: "Dynamic patch", condition: plan("pro") })).body;
    expectValidation(await c.patch(dy.id, { type: "STATIC" }));
    expectValidation(await c.patch(dy.id, { condition: where(f("data.plan", "equals", "x"), f("data.plan", "sortOf", "x")) }), "condition.groups[0].filters[1].operator");
    expectValidation(await c.patch(dy.id, { name: "x".repeat(101) }), "name");
    expectValidation(await c.patch(dy.id, { description: "x".repeat(501) }), "description");
    const got = (await c.get(dy.id)).body;
    expect(got).toMatchObject({ name: "Dynamic patch", type: "DYNAMIC", memberCount: 2 });
    expect(got.condition.groups[0].filters).toHaveLength(1);
  });

  test("DELETE: { success: true }, then 404 on GET, DELETE and sub-resources", async () => {
    const s = (await c.create({ name: "Delete me", condition: plan("pro") })).body;
    const res = await c.del(s.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expectEnvelope(await c.get(s.id), 404, "NOT_FOUND");
    expectEnvelope(await c.del(s.id), 404, "NOT_FOUND");
    expectEnvelope(await c.members(s.id), 404, "NOT_FOUND");
    expect((await c.list()).body.some((x: any) => x.id === s.id)).toBe(false);
  });

  test("unknown id: 404 in the envelope on every segment path", async () => {
    expectEnvelope(await c.get(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await c.patch(NO_SUCH_ID, { name: "x" }), 404, "NOT_FOUND");
    expectEnvelope(await c.del(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await c.members(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await c.addMembers(NO_SUCH_ID, { emails: ["a@b.example"] }), 404, "NOT_FOUND");
    expectEnvelope(await c.removeMembers(NO_SUCH_ID, { emails: ["a@b.example"] }), 404, "NOT_FOUND");
    expectEnvelope(await c.refresh(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await c.compute(NO_SUCH_ID), 404, "NOT_FOUND");
  });

  test("tenant isolation: another project's key gets 404 for my segment and never lists it", async () => {
    const s = (await c.create({ name: "Mine only", type: "STATIC" })).body;
    expectEnvelope(await c.get(s.id, other), 404, "NOT_FOUND");
    expectEnvelope(await c.patch(s.id, { name: "stolen" }, other), 404, "NOT_FOUND");
    expectEnvelope(await c.del(s.id, other), 404, "NOT_FOUND");
    expectEnvelope(await c.members(s.id, "", other), 404, "NOT_FOUND");
    expectEnvelope(await c.addMembers(s.id, { emails: ["pro1@seg-crud.example"] }, other), 404, "NOT_FOUND");
    expectEnvelope(await c.removeMembers(s.id, { emails: ["pro1@seg-crud.example"] }, other), 404, "NOT_FOUND");
    expectEnvelope(await c.refresh(s.id, other), 404, "NOT_FOUND");
    expectEnvelope(await c.compute(s.id, other), 404, "NOT_FOUND");
    expect((await c.list(other)).body.some((x: any) => x.id === s.id)).toBe(false);
    expect((await c.get(s.id)).body.name).toBe("Mine only");
    // Another project's contacts are not mine: a DYNAMIC segment there counts only its own.
    expect((await c.create({ name: "Other pro", condition: plan("pro") }, other)).body.memberCount).toBe(0);
  });

  test("the public key is refused with 401 INVALID_API_KEY on every segment path; no key is 401", async () => {
    const s = (await c.create({ name: "Key check", type: "STATIC" })).body;
    const pk = acc.publicKey;
    expectEnvelope(await c.api("/segments", { key: pk }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api("/segments", { key: pk, body: { name: "pk", condition: plan("pro") } }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}`, { key: pk }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}`, { key: pk, method: "PATCH", body: { name: "pk" } }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}`, { key: pk, method: "DELETE" }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}/contacts`, { key: pk }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}/members`, { key: pk, body: { emails: ["a@b.example"] } }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}/members`, { key: pk, method: "DELETE", body: { emails: ["a@b.example"] } }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}/refresh`, { key: pk, method: "POST" }), 401, "INVALID_API_KEY");
    expectEnvelope(await c.api(`/segments/${s.id}/compute`, { key: pk, method: "POST" }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/segments"), 401);
    expectEnvelope(await srv.api("/segments", { body: { name: "nokey" } }), 401);
    expect((await c.list()).body.some((x: any) => x.name === "pk")).toBe(false);
    expect((await c.get(s.id)).body.name).toBe("Key check");
  });

  test("malformed JSON is 400 BAD_REQUEST in the envelope (not the bare body)", async () => {
    const res = await srv.api("/segments", { key: acc.secretKey, raw: "{ not json", headers: { "content-type": "application/json" } });
    expectEnvelope(res, 400, "BAD_REQUEST");
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("condition validation: 422 VALIDATION_ERROR naming the filter", () => {
  let srv: TestServer;
  let acc: Account;
  const c = client(() => ({ srv, acc }));
  let before = 0;

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB conditions");
  });
  afterAll(() => srv?.close());

  const bad = async (condition: unknown, field?: string) => {
    const errs = expectValidation(await c.create({ name: "Invalid", condition }));
    if (field) {
      const fields = errs.map((e) => e.field);
      if (!fields.some((x) => x === field || x.startsWith(field + ".") || x.startsWith(field + "["))) {
        throw new Error(`expected an error on ${field}, got ${JSON.stringify(errs)}`);
      }
    }
    return errs;
  };

  test("an unknown operator: errors[].field is condition.groups[0].filters[1].operator", async () => {
    before = (await c.list()).body.length;
    const errs = await bad(where(f("data.plan", "equals", "pro"), f("data.plan", "isAbout", "pro")));
    expect(errs.map((e) => e.field)).toContain("condition.groups[0].filters[1].operator");
  });

  test("the path counts groups: condition.groups[1].filters[0].operator", async () => {
    const errs = await bad({ logic: "OR", groups: [{ filters: [f("data.a", "exists")] }, { filters: [f("data.b", "bogus", 1)] }] });
    expect(errs.map((e) => e.field)).toContain("condition.groups[1].filters[0].operator");
  });

  test("an unknown field form names the filter's field", async () => {
    await bad(where(f("plan", "equals", "pro")), "condition.groups[0].filters[0].field");
    await bad(where(f("data.", "equals", "pro")), "condition.groups[0].filters[0]");
    await bad(where(f("contact.plan", "equals", "pro")), "condition.groups[0].filters[0].field");
    await bad(where(f("email.opened", "triggered")), "condition.groups[0].filters[0]");
  });

  test("an unknown unit or a missing unit names the unit", async () => {
    await bad(where(f("createdAt", "within", 3, "fortnights")), "condition.groups[0].filters[0].unit");
    await bad(where(f("createdAt", "within", 3)), "condition.groups[0].filters[0].unit");
    await bad(where(f("event.login", "triggeredWithin", 3)), "condition.groups[0].filters[0].unit");
  });

  test("a missing value (for an operator that takes one) names the value", async () => {
    await bad(where(f("data.plan", "equals")), "condition.groups[0].filters[0].value");
    await bad(where(f("email", "contains")), "condition.groups[0].filters[0].value");
    await bad(where(f("createdAt", "olderThan", undefined, "days")), "condition.groups[0].filters[0].value");
    await bad(where(f("event.login", "triggeredOlderThan", undefined, "days")), "condition.groups[0].filters[0].value");
  });

  test("an operator that does not fit the field names the filter", async () => {
    const p = "condition.groups[0].filters[0]";
    await bad(where(f("subscribed", "contains", "tr")), p);
    await bad(where(f("subscribed", "greaterThan", true)), p);
    await bad(where(f("email", "greaterThan", "a")), p);
    await bad(where(f("email", "triggered")), p);
    await bad(where(f("data.plan", "triggered")), p);
    await bad(where(f("data.plan", "memberOfSegment")), p);
    await bad(where(f("event.login", "equals", "x")), p);
    await bad(where(f("email.open", "greaterThan", 1)), p);
    await bad(where(f(`segment.${NO_SUCH_ID}`, "equals", "x")), p);
    await bad(where(f("createdAt", "contains", "2024")), p);
  });

  test("a value of the wrong kind names the filter (subscribed with a string, within with text, a date that is not one)", async () => {
    const p = "condition.groups[0].filters[0]";
    await bad(where(f("subscribed", "equals", "yes")), p);
    await bad(where(f("createdAt", "within", "three", "days")), p);
    await bad(where(f("createdAt", "greaterThan", "not a date")), p);
  });

  test("nested conditions are validated too, with the nested path", async () => {
    const errs = await bad({
      logic: "AND",
      groups: [{ filters: [f("data.a", "exists")], conditions: { logic: "OR", groups: [{ filters: [f("data.b", "nope", 1)] }] } }],
    });
    expect(errs.some((e) => e.field.startsWith("condition.groups[0].conditions") && e.field.endsWith("filters[0].operator"))).toBe(true);
  });

  test("a bad logic or a groups that is not an array: 422 under condition", async () => {
    await bad({ logic: "XOR", groups: [] }, "condition");
    await bad({ logic: "AND", groups: "all" }, "condition");
    await bad({ logic: "AND", groups: [{ filters: "x" }] }, "condition");
  });

  test("a reference to a segment that does not exist is 422", async () => {
    await bad(where(f(`segment.${NO_SUCH_ID}`, "memberOfSegment")), "condition.groups[0].filters[0]");
  });

  test("self and circular segment references are 422", async () => {
    const a = (await c.create({ name: "Ref A", condition: where(f("data.a", "exists")) })).body;
    expect(a.id).toBeTruthy();
    expectValidation(await c.patch(a.id, { condition: where(f(`segment.${a.id}`, "memberOfSegment")) }), "condition.groups[0].filters[0].field");
    const b = (await c.create({ name: "Ref B", condition: where(f(`segment.${a.id}`, "memberOfSegment")) })).body;
    expect(b.id).toBeTruthy();
    // A -> B while B -> A: a cycle.
    const res = await c.patch(a.id, { condition: where(f("data.a", "exists"), f(`segment.${b.id}`, "notMemberOfSegment")) });
    expectValidation(res);
    expect(res.body.error.errors.some((e: any) => e.field.startsWith("condition.groups[0].filters[1]"))).toBe(true);
    expect((await c.get(a.id)).body.condition.groups[0].filters).toHaveLength(1);
  });

  test("README limits: more than 200 filters, or a tree nested too deep, is 422", async () => {
    const many = Array.from({ length: 201 }, (_, i) => f(`data.k${i}`, "exists"));
    expectValidation(await c.create({ name: "Too many", condition: where(...many) }));
    let deep: any = where(f("data.a", "exists"));
    for (let i = 0; i < 9; i++) deep = { logic: "AND", groups: [{ filters: [], conditions: deep }] };
    expectValidation(await c.create({ name: "Too deep", condition: deep }));
  });

  test("a reference to another project's segment is 422 (it does not exist here)", async () => {
    const p = await newProject(srv.api, acc, "BB conditions other");
    const theirs = (await c.create({ name: "Theirs", type: "STATIC" }, p)).body;
    await bad(where(f(`segment.${theirs.id}`, "memberOfSegment")), "condition.groups[0].filters[0]");
  });

  test("PATCH of a DYNAMIC segment's condition to null or a non-object is 422", async () => {
    const s = (await c.create({ name: "Patch null", condition: where(f("data.a", "exists")) })).body;
    expectValidation(await c.patch(s.id, { condition: null }), "condition");
    expectValidation(await c.patch(s.id, { condition: "all" }), "condition");
    expect((await c.get(s.id)).body.condition.groups[0].filters[0].field).toBe("data.a");
    expect((await c.del(s.id)).status).toBe(200);
  });

  test("nothing invalid was stored", async () => {
    expect((await c.list()).body.length).toBe(before + 2); // only Ref A and Ref B
  });

  test("value may be omitted for operators that take none; value is ignored there", async () => {
    const ok = where(
      f("data.a", "exists"),
      f("data.b", "notExists", "ignored"),
      f("event.login", "notTriggered"),
      f("email.open", "notTriggered", 42),
    );
    expect((await c.create({ name: "No values", condition: ok })).status).toBe(201);
  });

  test("every operator, unit and field family of decisions.md is accepted in a fitting filter", async () => {
    const ref = (await c.create({ name: "Ref target", type: "STATIC" })).body;
    const filters: Filter[] = [
      ...["equals", "notEquals", "contains", "notContains", "startsWith", "endsWith", "greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual"].map((op) => f("data.x", op, "v")),
      f("data.x", "exists"),
      f("data.x", "notExists"),
      ...["minutes", "hours", "days", "weeks"].flatMap((u) => [f("data.d", "within", 2, u), f("data.d", "olderThan", 2, u)]),
      f("email", "equals", "a@b.example"),
      f("email", "endsWith", ".example"),
      f("subscribed", "equals", true),
      f("subscribed", "notEquals", false),
      f("createdAt", "greaterThan", "2024-01-01T00:00:00Z"),
      f("updatedAt", "lessThanOrEqual", "2030-01-01T00:00:00.000Z"),
      f("createdAt", "within", 1, "hours"),
      f("updatedAt", "olderThan", 1, "minutes"),
      f("event.signed_up", "triggered"),
      f("event.signed_up", "notTriggered"),
      f("event.signed_up", "triggeredWithin", 3, "days"),
      f("event.signed_up", "notTriggeredWithin", 3, "weeks"),
      f("event.signed_up", "triggeredOlderThan", 30, "minutes"),
      ...["sent", "delivery", "open", "click", "bounce", "complaint"].map((k) => f(`email.${k}`, "triggered")),
      f(`segment.${ref.id}`, "memberOfSegment"),
      f(`segment.${ref.id}`, "notMemberOfSegment"),
    ];
    const res = await c.create({ name: "Everything", condition: { logic: "OR", groups: filters.map((x) => ({ filters: [x] })) } });
    if (res.status !== 201) throw new Error(res.text);
    expect(res.body.condition.groups).toHaveLength(filters.length);
  });

  test("logic AND and OR are both accepted; an empty groups matches everyone", async () => {
    await c.contact({ email: "one@cond-val.example" });
    await c.contact({ email: "two@cond-val.example" });
    const empty = await c.create({ name: "Everyone", condition: { logic: "AND", groups: [] } });
    expect(empty.status).toBe(201);
    expect(empty.body.memberCount).toBe(2);
    const emptyGroup = await c.create({ name: "Everyone too", condition: { logic: "OR", groups: [{ filters: [] }] } });
    expect(emptyGroup.status).toBe(201);
    expect(emptyGroup.body.memberCount).toBe(2);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("condition semantics: which contacts match", () => {
  let srv: TestServer;
  let acc: Account;
  const c = client(() => ({ srv, acc }));
  const E: Record<string, string> = {
    alice: "alice@acme.example",
    bob: "bob@beta.example",
    carol: "carol@acme.example",
    dave: "dave@other.example",
  };
  const byEmail = new Map(Object.entries(E).map(([k, v]) => [v, k]));
  let n = 0;

  /** Creates a DYNAMIC segment and answers its members' names, sorted (checking the list against refresh). */
  async function match(condition: unknown): Promise<string[]> {
    const s = await c.create({ name: `m${++n}`, condition });
    if (s.status !== 201) throw new Error(`segment create: ${s.status} ${s.text}`);
    const res = await c.members(s.body.id, "?pageSize=100");
    expect(res.status).toBe(200);
    const names = res.body.data.map((x: any) => byEmail.get(x.email) ?? x.email).sort();
    expect(res.body.total).toBe(names.length);
    expect(s.body.memberCount).toBe(names.length);
    expect((await c.refresh(s.body.id)).body).toEqual({ memberCount: names.length });
    return names;
  }
  const m = (...filters: Filter[]) => match(where(...filters));

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB semantics");
    const now = srv.clock.now();
    const ok = async (body: unknown) => expectOk(await c.contact(body));
    await ok({
      email: E.alice,
      data: { plan: "pro", age: 30, score: "10", city: "Oslo", vip: true, signup: "2024-01-15", lastSeen: new Date(now - 2 * DAY).toISOString(), renewsAt: new Date(now + 3 * DAY).toISOString() },
    });
    await ok({ email: E.bob, subscribed: false, data: { plan: "Pro", age: 9, score: "9", city: "Bergen", vip: false, signup: "2023-06-01", lastSeen: new Date(now - 10 * DAY).toISOString() } });
    await ok({ email: E.carol, data: { plan: "free", age: 100, city: "oslo" } });
    await ok({ email: E.dave, data: {} });
  });
  afterAll(() => srv?.close());

  test("email: equals, contains, startsWith, endsWith are case-insensitive; notEquals, notContains", async () => {
    expect(await m(f("email", "equals", "ALICE@Acme.Example"))).toEqual(["alice"]);
    expect(await m(f("email", "contains", "ACME"))).toEqual(["alice", "carol"]);
    expect(await m(f("email", "startsWith", "Bob@"))).toEqual(["bob"]);
    expect(await m(f("email", "endsWith", "@OTHER.example"))).toEqual(["dave"]);
    expect(await m(f("email", "notEquals", "ALICE@ACME.EXAMPLE"))).toEqual(["bob", "carol", "dave"]);
    expect(await m(f("email", "notContains", "Acme"))).toEqual(["bob", "dave"]);
  });

  test("strings compare case-sensitively; a missing key matches only notEquals / notContains / notExists", async () => {
    expect(await m(f("data.plan", "equals", "pro"))).toEqual(["alice"]);
    expect(await m(f("data.plan", "equals", "Pro"))).toEqual(["bob"]);
    expect(await m(f("data.plan", "notEquals", "pro"))).toEqual(["bob", "carol", "dave"]);
    expect(await m(f("data.plan", "contains", "ro"))).toEqual(["alice", "bob"]);
    expect(await m(f("data.plan", "notContains", "ro"))).toEqual(["carol", "dave"]);
    expect(await m(f("data.plan", "startsWith", "P"))).toEqual(["bob"]);
    expect(await m(f("data.plan", "endsWith", "ee"))).toEqual(["carol"]);
    expect(await m(f("data.city", "equals", "Oslo"))).toEqual(["alice"]);
  });

  test("a missing data key: every operator but notExists, notEquals, notContains leaves the contact out", async () => {
    const all = ["alice", "bob", "carol", "dave"];
    expect(await m(f("data.nokey", "equals", "x"))).toEqual([]);
    expect(await m(f("data.nokey", "notEquals", "x"))).toEqual(all);
    expect(await m(f("data.nokey", "contains", "x"))).toEqual([]);
    expect(await m(f("data.nokey", "notContains", "x"))).toEqual(all);
    expect(await m(f("data.nokey", "startsWith", "x"))).toEqual([]);
    expect(await m(f("data.nokey", "endsWith", "x"))).toEqual([]);
    expect(await m(f("data.nokey", "greaterThan", 0))).toEqual([]);
    expect(await m(f("data.nokey", "lessThan", 0))).toEqual([]);
    expect(await m(f("data.nokey", "greaterThanOrEqual", 0))).toEqual([]);
    expect(await m(f("data.nokey", "lessThanOrEqual", 0))).toEqual([]);
    expect(await m(f("data.nokey", "exists"))).toEqual([]);
    expect(await m(f("data.nokey", "notExists"))).toEqual(all);
    expect(await m(f("data.nokey", "within", 1, "days"))).toEqual([]);
    expect(await m(f("data.nokey", "olderThan", 1, "days"))).toEqual([]);
    expect(await m(f("data.age", "greaterThan", -1))).toEqual(["alice", "bob", "carol"]);
  });

  test("exists / notExists", async () => {
    expect(await m(f("data.plan", "exists"))).toEqual(["alice", "bob", "carol"]);
    expect(await m(f("data.plan", "notExists"))).toEqual(["dave"]);
    expect(await m(f("data.signup", "exists"))).toEqual(["alice", "bob"]);
  });

  test("numbers compare numerically (9 < 10 < 30 < 100), not as text", async () => {
    expect(await m(f("data.age", "greaterThan", 10))).toEqual(["alice", "carol"]);
    expect(await m(f("data.age", "greaterThan", 9))).toEqual(["alice", "carol"]);
    expect(await m(f("data.age", "lessThan", 10))).toEqual(["bob"]);
    expect(await m(f("data.age", "greaterThanOrEqual", 30))).toEqual(["alice", "carol"]);
    expect(await m(f("data.age", "lessThanOrEqual", 9))).toEqual(["bob"]);
    expect(await m(f("data.age", "lessThanOrEqual", 100))).toEqual(["alice", "bob", "carol"]);
    expect(await m(f("data.age", "equals", 30))).toEqual(["alice"]);
    expect(await m(f("data.age", "notEquals", 30))).toEqual(["bob", "carol", "dave"]);
  });

  test("README: a numeric string value, and numeric strings stored, compare numerically", async () => {
    expect(await m(f("data.age", "greaterThan", "10"))).toEqual(["alice", "carol"]);
    expect(await m(f("data.score", "greaterThan", 9))).toEqual(["alice"]);
    expect(await m(f("data.score", "lessThan", "10"))).toEqual(["bob"]);
    expect(await m(f("data.score", "equals", 10))).toEqual(["alice"]);
  });

  test("booleans: data equals true / notEquals true; subscribed equals / notEquals", async () => {
    expect(await m(f("data.vip", "equals", true))).toEqual(["alice"]);
    expect(await m(f("data.vip", "equals", false))).toEqual(["bob"]);
    expect(await m(f("data.vip", "notEquals", true))).toEqual(["bob", "carol", "dave"]);
    expect(await m(f("subscribed", "equals", false))).toEqual(["bob"]);
    expect(await m(f("subscribed", "equals", true))).toEqual(["alice", "carol", "dave"]);
    expect(await m(f("subscribed", "notEquals", true))).toEqual(["bob"]);
  });

  test("dates: YYYY-MM-DD and ISO values compare as dates", async () => {
    expect(await m(f("data.signup", "greaterThan", "2024-01-01"))).toEqual(["alice"]);
    expect(await m(f("data.signup", "lessThan", "2024-01-01T00:00:00Z"))).toEqual(["bob"]);
    expect(await m(f("data.signup", "greaterThanOrEqual", "2023-06-01"))).toEqual(["alice", "bob"]);
    expect(await m(f("data.signup", "lessThan", "2023-06-01T00:00:01.000Z"))).toEqual(["bob"]);
    expect(await m(f("data.lastSeen", "greaterThan", new Date(srv.clock.now() - 5 * DAY).toISOString()))).toEqual(["alice"]);
  });

  test("within / olderThan on data dates, in every unit", async () => {
    // alice: 2 days ago, bob: 10 days ago.
    expect(await m(f("data.lastSeen", "within", 3, "days"))).toEqual(["alice"]);
    expect(await m(f("data.lastSeen", "within", 1, "days"))).toEqual([]);
    expect(await m(f("data.lastSeen", "olderThan", 1, "days"))).toEqual(["alice", "bob"]);
    expect(await m(f("data.lastSeen", "olderThan", 3, "days"))).toEqual(["bob"]);
    expect(await m(f("data.lastSeen", "within", 2, "weeks"))).toEqual(["alice", "bob"]);
    expect(await m(f("data.lastSeen", "within", 1, "weeks"))).toEqual(["alice"]);
    expect(await m(f("data.lastSeen", "olderThan", 1, "weeks"))).toEqual(["bob"]);
    expect(await m(f("data.lastSeen", "within", 241, "hours"))).toEqual(["alice", "bob"]);
    expect(await m(f("data.lastSeen", "within", 239, "hours"))).toEqual(["alice"]);
    expect(await m(f("data.lastSeen", "within", 14_500, "minutes"))).toEqual(["alice", "bob"]);
    expect(await m(f("data.lastSeen", "within", 14_300, "minutes"))).toEqual(["alice"]);
    expect(await m(f("data.lastSeen", "olderThan", 2_000, "minutes"))).toEqual(["alice", "bob"]);
  });

  test("README: within on a date also catches an upcoming date (either side of now)", async () => {
    expect(await m(f("data.renewsAt", "within", 7, "days"))).toEqual(["alice"]);
    expect(await m(f("data.renewsAt", "within", 1, "days"))).toEqual([]);
  });

  test("instants across zones (a stored date-time without zone is UTC), negative and decimal numbers", async () => {
    const p = await newProject(srv.api, acc, "BB semantics zones");
    const mk = (email: string, data: unknown) => c.contact({ email, data }, p);
    await mk("x@zones.example", { t: "2024-03-01T10:00:00", off: "2024-03-01T12:00:00+02:00", neg: -5, fl: 2.5, n: "007" });
    await mk("y@zones.example", { t: "2024-03-01T11:00:00Z", off: "2024-03-01T11:00:00Z", neg: "-10", fl: "10.25", n: "8" });
    const pm = async (...filters: Filter[]) => {
      const s = await c.create({ name: "z", condition: where(...filters) }, p);
      if (s.status !== 201) throw new Error(s.text);
      return (await c.members(s.body.id, "", p)).body.data.map((x: any) => x.email[0]).sort();
    };
    expect(await pm(f("data.t", "equals", "2024-03-01T10:00:00Z"))).toEqual(["x"]);
    expect(await pm(f("data.t", "lessThan", "2024-03-01T10:30:00.000Z"))).toEqual(["x"]);
    expect(await pm(f("data.off", "equals", "2024-03-01T10:00:00Z"))).toEqual(["x"]);
    expect(await pm(f("data.off", "greaterThan", "2024-03-01T12:30:00+02:00"))).toEqual(["y"]);
    expect(await pm(f("data.neg", "lessThan", -6))).toEqual(["y"]);
    expect(await pm(f("data.fl", "greaterThan", 3))).toEqual(["y"]);
    expect(await pm(f("data.fl", "lessThanOrEqual", "2.5"))).toEqual(["x"]);
    expect(await pm(f("data.n", "equals", 7))).toEqual(["x"]);
    expect(await pm(f("data.n", "greaterThan", 7))).toEqual(["y"]);
  });

  test("groups: filters ANDed within a group, groups combined by logic, nested conditions ANDed", async () => {
    expect(await m(f("email", "contains", "acme"), f("data.age", "greaterThan", 50))).toEqual(["carol"]);
    expect(
      await match({ logic: "OR", groups: [{ filters: [f("data.plan", "equals", "pro")] }, { filters: [f("data.plan", "equals", "free")] }] }),
    ).toEqual(["alice", "carol"]);
    expect(
      await match({ logic: "AND", groups: [{ filters: [f("email", "contains", "acme")] }, { filters: [f("data.plan", "equals", "free")] }] }),
    ).toEqual(["carol"]);
    // (email ends with acme.example) AND (plan = pro OR age >= 100)
    expect(
      await match({
        logic: "AND",
        groups: [
          {
            filters: [f("email", "endsWith", "acme.example")],
            conditions: { logic: "OR", groups: [{ filters: [f("data.plan", "equals", "pro")] }, { filters: [f("data.age", "greaterThanOrEqual", 100)] }] },
          },
        ],
      }),
    ).toEqual(["alice", "carol"]);
    // A group with only a nested tree.
    expect(await match({ logic: "AND", groups: [{ filters: [], conditions: where(f("data.age", "lessThan", 10)) }] })).toEqual(["bob"]);
    // README: logic in any case.
    expect(await match({ logic: "or", groups: [{ filters: [f("data.age", "equals", 9)] }, { filters: [f("data.age", "equals", 30)] }] })).toEqual(["alice", "bob"]);
  });

  test("empty groups and a group without filters match everyone", async () => {
    expect(await match({ logic: "AND", groups: [] })).toEqual(["alice", "bob", "carol", "dave"]);
    expect(await match({ logic: "OR", groups: [] })).toEqual(["alice", "bob", "carol", "dave"]);
    expect(await match({ logic: "AND", groups: [{ filters: [] }] })).toEqual(["alice", "bob", "carol", "dave"]);
  });

  test("segment.<id>: memberOfSegment / notMemberOfSegment of a DYNAMIC (live) and a STATIC (its list) segment", async () => {
    const pro = (await c.create({ name: "Pro ref", condition: where(f("data.plan", "equals", "pro")) })).body;
    expect(await m(f(`segment.${pro.id}`, "memberOfSegment"))).toEqual(["alice"]);
    expect(await m(f(`segment.${pro.id}`, "notMemberOfSegment"))).toEqual(["bob", "carol", "dave"]);
    const st = (await c.create({ name: "Static ref", type: "STATIC" })).body;
    expect((await c.addMembers(st.id, { emails: [E.bob, E.dave] })).status).toBe(200);
    expect(await m(f(`segment.${st.id}`, "memberOfSegment", "ignored"))).toEqual(["bob", "dave"]);
    expect(await m(f(`segment.${st.id}`, "notMemberOfSegment"))).toEqual(["alice", "carol"]);
    // Nested reference: member of a segment that itself references another.
    const outer = (await c.create({ name: "Outer ref", condition: where(f(`segment.${st.id}`, "memberOfSegment"), f("subscribed", "equals", true)) })).body;
    expect(await m(f(`segment.${outer.id}`, "memberOfSegment"))).toEqual(["dave"]);
  });

  test("GET /segments/:id/contacts: { data, total, page, pageSize, totalPages }, newest contact first, pages", async () => {
    const s = (await c.create({ name: "All for paging", condition: { logic: "AND", groups: [] } })).body;
    const first = await c.members(s.id);
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(["data", "page", "pageSize", "total", "totalPages"]);
    expect(first.body).toMatchObject({ total: 4, page: 1, pageSize: 20, totalPages: 1 });
    for (const x of first.body.data) for (const k of CONTACT_KEYS) expect(x).toHaveProperty(k);
    expect(first.body.data.map((x: any) => x.email)).toEqual([E.dave, E.carol, E.bob, E.alice]);
    const p1 = await c.members(s.id, "?page=1&pageSize=3");
    expect(p1.body).toMatchObject({ total: 4, page: 1, pageSize: 3, totalPages: 2 });
    expect(p1.body.data.map((x: any) => x.email)).toEqual([E.dave, E.carol, E.bob]);
    const p2 = await c.members(s.id, "?page=2&pageSize=3");
    expect(p2.body).toMatchObject({ total: 4, page: 2, pageSize: 3, totalPages: 2 });
    expect(p2.body.data.map((x: any) => x.email)).toEqual([E.alice]);
    const p3 = await c.members(s.id, "?page=3&pageSize=3");
    expect(p3.body.data).toEqual([]);
    expect(p3.body.total).toBe(4);
  });

  test("GET /segments/:id/contacts: page=0, pageSize=0, pageSize=abc are 400 BAD_REQUEST", async () => {
    const s = (await c.create({ name: "Bad query", condition: { logic: "AND", groups: [] } })).body;
    expectEnvelope(await c.members(s.id, "?page=0"), 400, "BAD_REQUEST");
    expectEnvelope(await c.members(s.id, "?pageSize=0"), 400, "BAD_REQUEST");
    expectEnvelope(await c.members(s.id, "?pageSize=abc"), 400, "BAD_REQUEST");
    expectEnvelope(await c.members(s.id, "?page=-1"), 400, "BAD_REQUEST");
  });

  test("GET /segments/:id/contacts: pageSize above 100 is clamped to 100", async () => {
    const s = (await c.create({ name: "Clamp", condition: { logic: "AND", groups: [] } })).body;
    const res = await c.members(s.id, "?pageSize=500");
    expect(res.status).toBe(200);
    expect(res.body.pageSize).toBe(100);
    expect(res.body.totalPages).toBe(1);
    expect(res.body.data).toHaveLength(4);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("live membership, refresh, time-relative fields and the triggered family", () => {
  let srv: TestServer;
  let acc: Account;
  const c = client(() => ({ srv, acc }));
  const ids: Record<string, string> = {};
  const names = (res: any) => res.body.data.map((x: any) => x.email.split("@")[0]).sort();
  const m = async (...filters: Filter[]) => {
    const s = await c.create({ name: "t", condition: where(...filters) });
    if (s.status !== 201) throw new Error(s.text);
    return names(await c.members(s.body.id, "?pageSize=100"));
  };

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB live");
    for (const n of ["ann", "ben", "cid"]) ids[n] = (await c.contact({ email: `${n}@live.example`, data: { tier: "basic" } })).body.id;
  });
  afterAll(() => srv?.close());

  test("the members list is live for DYNAMIC; memberCount moves on refresh, which answers { memberCount }", async () => {
    const s = (await c.create({ name: "Gold", condition: where(f("data.tier", "equals", "gold")) })).body;
    expect(s.memberCount).toBe(0);
    expect((await c.patchContact(ids.ann!, { data: { tier: "gold" } })).status).toBe(200);
    expect(names(await c.members(s.id))).toEqual(["ann"]);
    const r = await c.refresh(s.id);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ memberCount: 1 });
    expect((await c.get(s.id)).body.memberCount).toBe(1);
    expect((await c.patchContact(ids.ann!, { data: { tier: "basic" } })).status).toBe(200);
    expect(names(await c.members(s.id))).toEqual([]);
    expect((await c.refresh(s.id)).body).toEqual({ memberCount: 0 });
  });

  test("refresh and compute of an untracked DYNAMIC segment write no events; compute only counts", async () => {
    const s = (await c.create({ name: "Basic untracked", condition: where(f("data.tier", "equals", "basic")) })).body;
    expect((await c.refresh(s.id)).body).toEqual({ memberCount: 3 });
    const res = await c.compute(s.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ added: 0, removed: 0, total: 3 });
    for (const id of Object.values(ids)) expect((await c.events(id)).filter((e) => e.name.startsWith("segment.")).length).toBe(0);
  });

  test("createdAt / updatedAt: comparisons with a date-time, within / olderThan with a unit", async () => {
    const t0 = srv.clock.now();
    expect(await m(f("createdAt", "within", 1, "hours"))).toEqual(["ann", "ben", "cid"]);
    expect(await m(f("createdAt", "olderThan", 1, "hours"))).toEqual([]);
    srv.clock.advance(2 * HOUR);
    ids.dan = (await c.contact({ email: "dan@live.example", data: { tier: "basic" } })).body.id;
    expect(await m(f("createdAt", "within", 1, "hours"))).toEqual(["dan"]);
    expect(await m(f("createdAt", "olderThan", 1, "hours"))).toEqual(["ann", "ben", "cid"]);
    expect(await m(f("createdAt", "olderThan", 90, "minutes"))).toEqual(["ann", "ben", "cid"]);
    expect(await m(f("createdAt", "within", 3, "hours"))).toEqual(["ann", "ben", "cid", "dan"]);
    const mid = new Date(t0 + HOUR).toISOString();
    expect(await m(f("createdAt", "greaterThan", mid))).toEqual(["dan"]);
    expect(await m(f("createdAt", "lessThan", mid))).toEqual(["ann", "ben", "cid"]);
    expect((await c.patchContact(ids.ben!, { data: { touched: 1 } })).status).toBe(200);
    expect(await m(f("updatedAt", "greaterThan", mid))).toEqual(["ben", "dan"]);
    expect(await m(f("updatedAt", "olderThan", 1, "hours"))).toEqual(["ann", "cid"]);
  });

  test("event.<name>: triggered, notTriggered, triggeredWithin, notTriggeredWithin, triggeredOlderThan", async () => {
    expectOk(await c.track({ email: "ann@live.example", event: "purchase" }));
    srv.clock.advance(3 * DAY);
    expectOk(await c.track({ email: "ben@live.example", event: "purchase" }));
    expectOk(await c.track({ email: "cid@live.example", event: "login" }));
    expect(await m(f("event.purchase", "triggered"))).toEqual(["ann", "ben"]);
    expect(await m(f("event.purchase", "notTriggered"))).toEqual(["cid", "dan"]);
    expect(await m(f("event.purchase", "triggeredWithin", 1, "days"))).toEqual(["ben"]);
    expect(await m(f("event.purchase", "triggeredWithin", 4, "days"))).toEqual(["ann", "ben"]);
    expect(await m(f("event.purchase", "triggeredWithin", 2, "hours"))).toEqual(["ben"]);
    expect(await m(f("event.purchase", "notTriggeredWithin", 1, "days"))).toEqual(["ann", "cid", "dan"]);
    expect(await m(f("event.purchase", "triggeredOlderThan", 2, "days"))).toEqual(["ann"]);
    expect(await m(f("event.purchase", "triggeredOlderThan", 1, "weeks"))).toEqual([]);
    expect(await m(f("event.login", "triggered"))).toEqual(["cid"]);
    expect(await m(f("event.never_tracked", "triggered"))).toEqual([]);
    expect(await m(f("event.never_tracked", "notTriggered"))).toEqual(["ann", "ben", "cid", "dan"]);
    // triggeredOlderThan looks at the LAST occurrence: a fresh purchase takes ann out.
    expectOk(await c.track({ email: "ann@live.example", event: "purchase" }));
    expect(await m(f("event.purchase", "triggeredOlderThan", 2, "days"))).toEqual([]);
    expect(await m(f("event.purchase", "triggeredWithin", 10, "minutes"))).toEqual(["ann", "ben"]);
  });

  test("triggered filters mix with data filters (AND) and groups (OR)", async () => {
    expect(await m(f("event.purchase", "triggered"), f("data.touched", "exists"))).toEqual(["ben"]);
    const s = await c.create({
      name: "mix",
      condition: { logic: "OR", groups: [{ filters: [f("event.login", "triggered")] }, { filters: [f("data.touched", "equals", 1)] }] },
    });
    expect(names(await c.members(s.body.id))).toEqual(["ben", "cid"]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("STATIC members", () => {
  let srv: TestServer;
  let acc: Account;
  let other: Account;
  const c = client(() => ({ srv, acc }));
  const lookup = (email: string, who: Account = acc) => lookupContact(srv.api, who, email);

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB static");
    other = await newProject(srv.api, acc, "BB static other");
    for (const n of ["a", "b", "c"]) await c.contact({ email: `${n}@static.example` });
    await c.contact({ email: "elsewhere@static.example" }, other);
  });
  afterAll(() => srv?.close());

  test("add: { added, created, notFound }; unknown addresses are not created by default", async () => {
    const s = (await c.create({ name: "Static list", type: "STATIC" })).body;
    const res = await c.addMembers(s.id, { emails: ["a@static.example", "b@static.example", "ghost@static.example"] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ added: 2, created: 0, notFound: ["ghost@static.example"] });
    expect(await lookup("ghost@static.example")).toBeUndefined();
    const list = await c.members(s.id);
    expect(list.body.total).toBe(2);
    expect(list.body.data.map((x: any) => x.email).sort()).toEqual(["a@static.example", "b@static.example"]);
    expect((await c.refresh(s.id)).body).toEqual({ memberCount: 2 });
    expect((await c.get(s.id)).body.memberCount).toBe(2);
  });

  test("adding a member twice is a no-op; addresses match case-insensitively", async () => {
    const s = (await c.create({ name: "Static twice", type: "STATIC" })).body;
    expect((await c.addMembers(s.id, { emails: ["a@static.example"] })).body).toEqual({ added: 1, created: 0, notFound: [] });
    expect((await c.addMembers(s.id, { emails: ["a@static.example", "A@Static.Example"] })).body).toEqual({ added: 0, created: 0, notFound: [] });
    expect((await c.members(s.id)).body.total).toBe(1);
    expect((await c.refresh(s.id)).body).toEqual({ memberCount: 1 });
  });

  test("createMissing creates unknown addresses, subscribed by default or as given", async () => {
    const s = (await c.create({ name: "Static create", type: "STATIC" })).body;
    const res = await c.addMembers(s.id, { emails: ["new1@static.example", "c@static.example"], createMissing: true });
    expect(res.status).toBe(200);
    expect(res.body.created).toBe(1);
    expect(res.body.notFound).toEqual([]);
    expect(res.body.added).toBe(2);
    expect((await lookup("new1@static.example"))?.subscribed).toBe(true);
    const res2 = await c.addMembers(s.id, { emails: ["new2@static.example"], createMissing: true, subscribed: false });
    expect(res2.body).toEqual({ added: 1, created: 1, notFound: [] });
    expect((await lookup("new2@static.example"))?.subscribed).toBe(false);
    // subscribed applies to the contacts it creates only.
    expect((await lookup("c@static.example"))?.subscribed).toBe(true);
    expect((await c.members(s.id)).body.total).toBe(3);
  });

  test("another project's contact is notFound (and createMissing makes one in mine)", async () => {
    const s = (await c.create({ name: "Static tenant", type: "STATIC" })).body;
    expect((await c.addMembers(s.id, { emails: ["elsewhere@static.example"] })).body).toEqual({ added: 0, created: 0, notFound: ["elsewhere@static.example"] });
    expect((await c.members(s.id)).body.total).toBe(0);
  });

  test("remove: { removed }; an address that is not a member counts nothing", async () => {
    const s = (await c.create({ name: "Static remove", type: "STATIC" })).body;
    await c.addMembers(s.id, { emails: ["a@static.example", "b@static.example"] });
    const res = await c.removeMembers(s.id, { emails: ["a@static.example", "c@static.example", "ghost@static.example"] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ removed: 1 });
    expect((await c.members(s.id)).body.data.map((x: any) => x.email)).toEqual(["b@static.example"]);
    expect((await c.removeMembers(s.id, { emails: ["a@static.example"] })).body).toEqual({ removed: 0 });
    expect((await c.refresh(s.id)).body).toEqual({ memberCount: 1 });
    // The contact itself is untouched.
    expect(await lookup("a@static.example")).toBeDefined();
  });

  test("compute on a STATIC segment only counts: { added: 0, removed: 0, total }", async () => {
    const s = (await c.create({ name: "Static compute", type: "STATIC" })).body;
    await c.addMembers(s.id, { emails: ["a@static.example", "b@static.example", "c@static.example"] });
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 3 });
  });

  test("members of a DYNAMIC segment cannot be managed: 409 INVALID_STATE", async () => {
    const s = (await c.create({ name: "Dyn", condition: { logic: "AND", groups: [] } })).body;
    expectEnvelope(await c.addMembers(s.id, { emails: ["a@static.example"] }), 409, "INVALID_STATE");
    expectEnvelope(await c.removeMembers(s.id, { emails: ["a@static.example"] }), 409, "INVALID_STATE");
  });

  test("emails must be 1-1000 valid addresses: 422 (errors[].field emails / emails.<i>); nothing is added", async () => {
    const s = (await c.create({ name: "Static invalid", type: "STATIC" })).body;
    expectValidation(await c.addMembers(s.id, {}), "emails");
    expectValidation(await c.addMembers(s.id, { emails: [] }), "emails");
    expectValidation(await c.addMembers(s.id, { emails: "a@static.example" }), "emails");
    const many = Array.from({ length: 1001 }, (_, i) => `m${i}@static.example`);
    expectValidation(await c.addMembers(s.id, { emails: many }), "emails");
    expectValidation(await c.addMembers(s.id, { emails: ["a@static.example", "not-an-email"] }), "emails.1");
    expectValidation(await c.addMembers(s.id, { emails: ["a@static.example"], createMissing: "yes" }), "createMissing");
    expectValidation(await c.addMembers(s.id, { emails: ["a@static.example"], subscribed: "no" }), "subscribed");
    expectValidation(await c.removeMembers(s.id, {}), "emails");
    expect((await c.members(s.id)).body.total).toBe(0);
    // 1000 is within the limit.
    const ok = await c.addMembers(s.id, { emails: many.slice(0, 1000) });
    expect(ok.status).toBe(200);
    expect(ok.body.notFound).toHaveLength(1000);
  });

  test("the same address twice in one request is added once; a deleted contact leaves the list", async () => {
    const s = (await c.create({ name: "Static dupes", type: "STATIC" })).body;
    const tmp = (await c.contact({ email: "tmp@static.example" })).body;
    expect((await c.addMembers(s.id, { emails: ["tmp@static.example", "tmp@static.example", "a@static.example"] })).body).toEqual({ added: 2, created: 0, notFound: [] });
    expectOk(await c.api(`/contacts/${tmp.id}`, { method: "DELETE" }));
    const list = await c.members(s.id);
    expect(list.body.total).toBe(1);
    expect(list.body.data.map((x: any) => x.email)).toEqual(["a@static.example"]);
    expect((await c.refresh(s.id)).body).toEqual({ memberCount: 1 });
  });

  test("PATCH of a STATIC segment: name, description and trackMembership change; the list stays", async () => {
    const s = (await c.create({ name: "Static meta", type: "STATIC" })).body;
    await c.addMembers(s.id, { emails: ["b@static.example"] });
    const res = await c.patch(s.id, { name: "Static meta 2", description: "hand-made", trackMembership: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "Static meta 2", description: "hand-made", trackMembership: true, type: "STATIC" });
    expect((await c.members(s.id)).body.total).toBe(1);
  });

  test("the members list is newest contact first and paged", async () => {
    const s = (await c.create({ name: "Static order", type: "STATIC" })).body;
    await c.addMembers(s.id, { emails: ["c@static.example", "a@static.example", "b@static.example"] });
    const res = await c.members(s.id, "?pageSize=2");
    expect(res.body).toMatchObject({ total: 3, page: 1, pageSize: 2, totalPages: 2 });
    expect(res.body.data.map((x: any) => x.email)).toEqual(["c@static.example", "b@static.example"]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("trackMembership: entry and exit events", () => {
  let srv: TestServer;
  let acc: Account;
  const c = client(() => ({ srv, acc }));
  const ids: Record<string, string> = {};
  const segEvents = async (contactId: string, slug: string) => (await c.events(contactId)).filter((e) => e.name.startsWith(`segment.${slug}.`));
  const trial = () => where(f("data.plan", "equals", "trial"));

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB tracked");
    for (const n of ["tia", "tom"]) ids[n] = (await c.contact({ email: `${n}@tracked.example`, data: { plan: "trial" } })).body.id;
    ids.pat = (await c.contact({ email: "pat@tracked.example", data: { plan: "paid" } })).body.id;
  });
  afterAll(() => srv?.close());

  let seg: any;
  test("creating a tracked segment and refreshing it emit nothing and write no membership", async () => {
    const res = await c.create({ name: "Trial Users", condition: trial(), trackMembership: true });
    expect(res.status).toBe(201);
    seg = res.body;
    expect(seg).toMatchObject({ slug: "trial-users", trackMembership: true, memberCount: 2 });
    expect((await c.refresh(seg.id)).body).toEqual({ memberCount: 2 });
    // The members list of a DYNAMIC segment is live, whether or not a compute stored a membership.
    expect((await c.members(seg.id)).body.total).toBe(2);
    for (const id of Object.values(ids)) expect(await segEvents(id, "trial-users")).toEqual([]);
  });

  test("compute stores the membership: { added, removed, total } and one segment.<slug>.entry per new member", async () => {
    const from = srv.clock.now();
    const res = await c.compute(seg.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ added: 2, removed: 0, total: 2 });
    for (const n of ["tia", "tom"]) {
      const evs = await segEvents(ids[n]!, "trial-users");
      expect(evs.map((e) => e.name)).toEqual(["segment.trial-users.entry"]);
      expect(evs[0].data).toEqual({ segmentId: seg.id, segmentName: "Trial Users" });
      expect(evs[0].contactId).toBe(ids[n]);
      expectTimeBetween(evs[0].createdAt, from, srv.clock.now());
    }
    expect(await segEvents(ids.pat!, "trial-users")).toEqual([]);
    expect((await c.get(seg.id)).body.memberCount).toBe(2);
  });

  test("compute again: nothing changed, no new events", async () => {
    expect((await c.compute(seg.id)).body).toEqual({ added: 0, removed: 0, total: 2 });
    expect(await segEvents(ids.tia!, "trial-users")).toHaveLength(1);
  });

  test("a contact write moves a tracked segment by itself: exit follows a PATCH, entry follows a track", async () => {
    expect((await c.patchContact(ids.tom!, { data: { plan: "paid" } })).status).toBe(200);
    const exits = await waitFor(async () => (await segEvents(ids.tom!, "trial-users")).map((e) => e.name), {
      until: (v) => v.includes("segment.trial-users.exit"),
      what: "tom's exit event",
    });
    expect([...exits].sort()).toEqual(["segment.trial-users.entry", "segment.trial-users.exit"]);
    const t = await c.track({ email: "new@tracked.example", event: "signed_up", data: { plan: "trial" } });
    expectOk(t);
    const newId = t.body.data.contact;
    await waitFor(async () => (await segEvents(newId, "trial-users")).map((e) => e.name), {
      until: (v) => v.includes("segment.trial-users.entry"),
      what: "the new contact's entry event",
    });
    // compute finds nothing left to do: the writes already moved the stored membership.
    expect((await c.compute(seg.id)).body).toEqual({ added: 0, removed: 0, total: 2 });
    expect((await c.get(seg.id)).body.memberCount).toBe(2);
    expect(await segEvents(newId, "trial-users")).toHaveLength(1);
  });

  test("compute records an exit when a member no longer matches after a condition change", async () => {
    const s = (await c.create({ name: "Paid Users", condition: where(f("data.plan", "equals", "paid")), trackMembership: true })).body;
    expect(s.slug).toBe("paid-users");
    expect((await c.compute(s.id)).body).toEqual({ added: 2, removed: 0, total: 2 }); // pat, tom
    const patched = await c.patch(s.id, { condition: where(f("data.plan", "equals", "paid"), f("email", "startsWith", "pat")) });
    expect(patched.status).toBe(200);
    // Editing emits nothing by itself.
    expect((await segEvents(ids.tom!, "paid-users")).map((e) => e.name)).toEqual(["segment.paid-users.entry"]);
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 1, total: 1 });
    const evs = await segEvents(ids.tom!, "paid-users");
    expect(evs.map((e) => e.name).sort()).toEqual(["segment.paid-users.entry", "segment.paid-users.exit"]);
    expect(evs.find((e) => e.name.endsWith(".exit")).data).toEqual({ segmentId: s.id, segmentName: "Paid Users" });
  });

  test("a colliding name gives the events the suffixed slug", async () => {
    const s = (await c.create({ name: "Trial users", condition: trial(), trackMembership: true })).body;
    expect(s.slug).toBe("trial-users-2");
    expect((await c.compute(s.id)).body).toEqual({ added: 2, removed: 0, total: 2 });
    expect((await segEvents(ids.tia!, "trial-users-2")).map((e) => e.name)).toEqual(["segment.trial-users-2.entry"]);
  });

  test("a tracked STATIC segment records entry and exit when members are added and removed", async () => {
    const s = (await c.create({ name: "Hand Picked", type: "STATIC", trackMembership: true })).body;
    expect((await c.addMembers(s.id, { emails: ["pat@tracked.example"] })).body).toEqual({ added: 1, created: 0, notFound: [] });
    await waitFor(async () => (await segEvents(ids.pat!, "hand-picked")).length, { until: (n) => n === 1, what: "pat's entry" });
    expect((await c.removeMembers(s.id, { emails: ["pat@tracked.example"] })).body).toEqual({ removed: 1 });
    const evs = await waitFor(async () => (await segEvents(ids.pat!, "hand-picked")).map((e) => e.name), { until: (v) => v.length === 2, what: "pat's exit" });
    expect([...evs].sort()).toEqual(["segment.hand-picked.entry", "segment.hand-picked.exit"]);
  });

  test("an untracked segment emits nothing, even on compute and contact writes", async () => {
    const s = (await c.create({ name: "Quiet", condition: trial() })).body;
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 2 });
    await c.patchContact(ids.pat!, { data: { plan: "trial" } });
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 3 });
    expect(await segEvents(ids.pat!, "quiet")).toEqual([]);
  });

  test("other contact writes move tracked segments too: POST /contacts upsert and a bulk unsubscribe job", async () => {
    const s = (await c.create({ name: "Subscribers", condition: where(f("subscribed", "equals", true), f("email", "endsWith", "@tracked.example")), trackMembership: true })).body;
    const first = await c.compute(s.id);
    expect(first.body.removed).toBe(0);
    expect(first.body.added).toBe(first.body.total);
    const up = await c.contact({ email: "upsert@tracked.example" });
    expect(up.status).toBe(201);
    await waitFor(async () => (await segEvents(up.body.id, "subscribers")).map((e) => e.name), {
      until: (v) => v.includes("segment.subscribers.entry"),
      what: "entry after POST /contacts",
    });
    const bulk = await c.api("/contacts/bulk-unsubscribe", { body: { contactIds: [up.body.id] } });
    expect(bulk.status).toBe(202);
    await waitFor(
      async () => {
        await srv.drainJobs();
        return (await segEvents(up.body.id, "subscribers")).map((e) => e.name);
      },
      { until: (v) => v.includes("segment.subscribers.exit"), what: "exit after the bulk unsubscribe" },
    );
  });

  test("turning trackMembership off forgets the stored membership: tracking again starts empty", async () => {
    const s = (await c.create({ name: "Toggle", condition: where(f("email", "startsWith", "tia@")), trackMembership: true })).body;
    expect((await c.compute(s.id)).body).toEqual({ added: 1, removed: 0, total: 1 });
    expect((await c.patch(s.id, { trackMembership: false })).body.trackMembership).toBe(false);
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 1 });
    expect((await c.patch(s.id, { trackMembership: true })).body.trackMembership).toBe(true);
    expect((await c.compute(s.id)).body).toEqual({ added: 1, removed: 0, total: 1 });
    expect((await segEvents(ids.tia!, "toggle")).map((e) => e.name)).toEqual(["segment.toggle.entry", "segment.toggle.entry"]);
  });

  test("segment event names are reserved for clients: /v1/track answers 422 reserved_event", async () => {
    const res = await c.track({ email: "tia@tracked.example", event: "segment.trial-users.entry" });
    const errs = expectValidation(res);
    expect(errs.map((e) => e.code)).toContain("reserved_event");
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("tracked segments follow /v1/track writes", () => {
  let srv: TestServer;
  let acc: Account;
  const c = client(() => ({ srv, acc }));
  let seq = 0;
  const addr = (p: string) => `${p}${++seq}@follow.example`;
  /** Entry/exit event names of one segment on a contact, oldest first (by name order for equal times). */
  const moves = async (contactId: string, slug: string) =>
    (await c.events(contactId))
      .filter((e) => e.name.startsWith(`segment.${slug}.`))
      .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt) || String(a.id).localeCompare(String(b.id)))
      .map((e) => e.name.slice(`segment.${slug}.`.length));
  const expectMoves = (contactId: string, slug: string, want: string[]) =>
    waitFor(() => moves(contactId, slug), { until: (v) => JSON.stringify(v) === JSON.stringify(want), what: `${slug} moves ${want.join(",")}` });
  const tracked = async (name: string, condition: unknown) => {
    const s = await c.create({ name, condition, trackMembership: true });
    if (s.status !== 201) throw new Error(s.text);
    expectOk(await c.compute(s.body.id));
    return s.body;
  };
  const track = async (body: unknown) => {
    const res = await c.track(body);
    expectOk(res);
    return res.body.data.contact as string;
  };

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB follow");
  });
  afterAll(() => srv?.close());

  test("a data change enters and leaves; null deletes the key (exit); an empty string changes nothing", async () => {
    const s = await tracked("Plan Pro", where(f("data.plan", "equals", "pro")));
    const email = addr("p");
    const id = await track({ email, event: "e", data: { plan: "pro" } });
    await expectMoves(id, s.slug, ["entry"]);
    await track({ email, event: "e", data: { plan: "" } });
    await track({ email, event: "e", data: { plan: null } });
    await expectMoves(id, s.slug, ["entry", "exit"]);
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 0 });
  });

  test("a non-persistent value does not move a segment", async () => {
    const s = await tracked("Plan Gold", where(f("data.plan", "equals", "gold")));
    const email = addr("np");
    const id = await track({ email, event: "e", data: { plan: { value: "gold", persistent: false } } });
    expect(await moves(id, s.slug)).toEqual([]);
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 0 });
  });

  test("event.<name> triggered / notTriggered move on the tracked event itself", async () => {
    const buyers = await tracked("Buyers", where(f("event.buy", "triggered")));
    const nonBuyers = await tracked("Non Buyers", where(f("event.buy", "notTriggered"), f("email", "endsWith", "@follow.example")));
    const email = addr("b");
    const id = await track({ email, event: "browse" });
    await expectMoves(id, nonBuyers.slug, ["entry"]);
    expect(await moves(id, buyers.slug)).toEqual([]);
    await track({ email, event: "buy" });
    await expectMoves(id, buyers.slug, ["entry"]);
    await expectMoves(id, nonBuyers.slug, ["entry", "exit"]);
  });

  test("subscribed false on a track flips the contact out of a subscribed segment", async () => {
    const s = await tracked("Subscribed Follow", where(f("subscribed", "equals", true), f("email", "startsWith", "sub")));
    const email = addr("sub");
    const id = await track({ email, event: "e" });
    await expectMoves(id, s.slug, ["entry"]);
    await track({ email, event: "e", subscribed: false });
    await expectMoves(id, s.slug, ["entry", "exit"]);
  });

  test("through segment.<id>: a tracked segment over an untracked one moves when the inner one changes", async () => {
    const inner = (await c.create({ name: "Inner VIP", condition: where(f("data.vip", "equals", true)) })).body;
    const outer = await tracked("Outer VIP", where(f(`segment.${inner.id}`, "memberOfSegment")));
    const email = addr("v");
    const id = await track({ email, event: "e", data: { vip: true } });
    await expectMoves(id, outer.slug, ["entry"]);
    expect((await c.patchContact(id, { data: { vip: false } })).status).toBe(200);
    await expectMoves(id, outer.slug, ["entry", "exit"]);
  });

  test("memberCount follows entries and exits, also before the first compute (live recount)", async () => {
    const fresh = (await c.create({ name: "Never Computed", condition: where(f("data.team", "equals", "red")), trackMembership: true })).body;
    const synced = await tracked("Computed Red", where(f("data.team", "equals", "red")));
    expect(fresh.memberCount).toBe(0);
    const id = await track({ email: addr("red"), event: "e", data: { team: "red" } });
    await expectMoves(id, synced.slug, ["entry"]);
    const count = (sid: string, n: number) => waitFor(async () => (await c.get(sid)).body.memberCount, { until: (v) => v === n, what: `memberCount ${n}` });
    await count(synced.id, 1);
    await count(fresh.id, 1);
    const ev = (await c.events(id)).find((e) => e.name === `segment.${synced.slug}.entry`);
    expect(ev.data).toEqual({ segmentId: synced.id, segmentName: "Computed Red" });
    await track({ email: addr("red"), event: "e", data: { team: "red" } });
    await count(synced.id, 2);
    expect((await c.patchContact(id, { data: { team: "blue" } })).status).toBe(200);
    await count(synced.id, 1);
  });

  test("a CSV import moves tracked segments too", async () => {
    const s = await tracked("Imported Berlin", where(f("data.city", "equals", "Berlin")));
    const email = addr("csv");
    const form = new FormData();
    form.append("file", new Blob([`email,city\n${email},Berlin\n`], { type: "text/csv" }), "c.csv");
    const res = await srv.api("/contacts/import", { key: acc.secretKey, method: "POST", raw: form });
    expect(res.status).toBe(202);
    const id = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await c.api("/contacts/lookup", { body: { emails: [email] } })).body.found?.[0]?.id as string | undefined;
      },
      { what: "the imported contact" },
    );
    await waitFor(
      async () => {
        await srv.drainJobs();
        return moves(id, s.slug);
      },
      { until: (v) => v.includes("entry"), what: "entry after import" },
    );
  });

  test("a mixed condition (data AND event) enters only once both hold", async () => {
    const s = await tracked("Pro Buyers", where(f("data.plan", "equals", "pro"), f("event.purchase", "triggered")));
    const email = addr("m");
    const id = await track({ email, event: "purchase" });
    expect(await moves(id, s.slug)).toEqual([]);
    await track({ email, event: "visit", data: { plan: "pro" } });
    await expectMoves(id, s.slug, ["entry"]);
    await track({ email, event: "visit", data: { plan: "free" } });
    await expectMoves(id, s.slug, ["entry", "exit"]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("the background sweep (MAILSVC_SEGMENT_SWEEP_INTERVAL, default 5m)", () => {
  let srv: TestServer;
  let acc: Account;
  const c = client(() => ({ srv, acc }));

  beforeAll(async () => {
    srv = await startServer();
    acc = await createAccount(srv.api, "BB sweep");
  });
  afterAll(() => srv?.close());

  test("a closing triggeredWithin window exits the contact; every memberCount is refreshed", async () => {
    const s = (await c.create({ name: "Recent Buyers", condition: where(f("event.buy", "triggeredWithin", 1, "hours")), trackMembership: true })).body;
    const t = await c.track({ email: "buyer@sweep.example", event: "buy" });
    expectOk(t);
    const id = t.body.data.contact;
    const names = async () => (await c.events(id)).filter((e) => e.name.startsWith("segment.recent-buyers.")).map((e) => e.name).sort();
    await waitFor(names, { until: (v) => v.includes("segment.recent-buyers.entry"), what: "the entry after the track" });
    const untracked = (await c.create({ name: "Everyone", condition: { logic: "AND", groups: [] } })).body;
    expect(untracked.memberCount).toBe(1);
    await c.contact({ email: "second@sweep.example" });
    srv.clock.advance(2 * HOUR);
    const after = await waitFor(
      async () => {
        await srv.drainJobs();
        return names();
      },
      { until: (v) => v.includes("segment.recent-buyers.exit"), what: "the exit after the window closed" },
    );
    expect(after).toEqual(["segment.recent-buyers.entry", "segment.recent-buyers.exit"]);
    expect((await c.get(s.id)).body.memberCount).toBe(0);
    await waitFor(
      async () => {
        await srv.drainJobs();
        return (await c.get(untracked.id)).body.memberCount;
      },
      { until: (n) => n === 2, what: "the untracked memberCount refreshed by the sweep" },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("campaign use and email.<kind> events", () => {
  let srv: TestServer;
  let dns: TestDns;
  let sink: SmtpSink;
  let acc: Account;
  const c = client(() => ({ srv, acc }));
  const SENDER = "seg.bb.example";
  const RCPT = "inbox-seg.example";

  beforeAll(async () => {
    dns = await startDns();
    dns.mailDomain(RCPT);
    sink = await startSmtpSink();
    srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port } });
    acc = await createAccount(srv.api, "BB seg campaigns");
    await addVerifiedDomain(srv.api, dns, acc, SENDER);
    await c.contact({ email: `one@${RCPT}`, data: { plan: "pro" } });
    await c.contact({ email: `two@${RCPT}`, data: { plan: "free" } });
  });
  afterAll(async () => {
    await srv?.close();
    await sink?.close();
    await dns?.close();
  });

  const campaign = (audience: Record<string, unknown>) =>
    c.api("/campaigns", { body: { name: "Seg campaign", subject: "Hi", body: "<p>Hi</p>", from: `news@${SENDER}`, ...audience } });
  const schedule = (id: string) => c.api(`/campaigns/${id}/send`, { body: { scheduledFor: new Date(srv.clock.now() + 7 * DAY).toISOString() } });

  test("DELETE is refused with 409 INVALID_STATE while a SCHEDULED campaign uses the segment; allowed after cancel", async () => {
    const s = (await c.create({ name: "Campaign audience", condition: where(f("data.plan", "equals", "pro")) })).body;
    const camp = await campaign({ audienceType: "SEGMENT", segmentId: s.id });
    expect(camp.status).toBe(201);
    const id = camp.body.data.id;
    // A DRAFT campaign does not block.
    const draftOnly = (await c.create({ name: "Draft audience", condition: where(f("data.plan", "exists")) })).body;
    expect((await campaign({ audienceType: "SEGMENT", segmentId: draftOnly.id })).status).toBe(201);
    expect((await c.del(draftOnly.id)).status).toBe(200);

    const sched = await schedule(id);
    expect(sched.status).toBe(200);
    expect(sched.body.data.status).toBe("SCHEDULED");
    expectEnvelope(await c.del(s.id), 409, "INVALID_STATE");
    expect((await c.get(s.id)).status).toBe(200);
    expect((await c.api(`/campaigns/${id}/cancel`, { method: "POST" })).status).toBe(200);
    const del = await c.del(s.id);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true });
  });

  test("README: a FILTERED campaign referencing segment.<id> also blocks the delete", async () => {
    const s = (await c.create({ name: "Filtered ref", condition: where(f("data.plan", "equals", "pro")) })).body;
    const camp = await campaign({ audienceType: "FILTERED", audienceCondition: where(f(`segment.${s.id}`, "memberOfSegment")) });
    expect(camp.status).toBe(201);
    expect((await schedule(camp.body.data.id)).status).toBe(200);
    expectEnvelope(await c.del(s.id), 409, "INVALID_STATE");
    await c.api(`/campaigns/${camp.body.data.id}/cancel`, { method: "POST" });
    expect((await c.del(s.id)).status).toBe(200);
  });

  test("a /v1/send contact write moves a tracked segment", async () => {
    const s = (await c.create({ name: "Sent Gold", condition: where(f("data.tier", "equals", "gold")), trackMembership: true })).body;
    expect((await c.compute(s.id)).body).toEqual({ added: 0, removed: 0, total: 0 });
    const res = await c.api("/v1/send", { body: { to: `gold@${RCPT}`, from: `hello@${SENDER}`, subject: "Hi", body: "<p>Hi</p>", data: { tier: "gold" } } });
    expectOk(res);
    const id = res.body.data.emails[0].contact.id;
    await waitFor(async () => (await c.events(id)).map((e) => e.name), { until: (v) => v.includes("segment.sent-gold.entry"), what: "entry after /v1/send" });
  });

  test("email.<kind>: triggered family over the contact's email events", async () => {
    const sent = await c.api("/v1/send", { body: { to: `one@${RCPT}`, from: `hello@${SENDER}`, subject: "Hello", body: "<p>Hi</p>" } });
    expectOk(sent);
    const emailId = sent.body.data.emails[0].email;
    await waitFor(
      async () => {
        await srv.drainJobs();
        return (await c.api(`/emails/${emailId}`)).body.status;
      },
      { until: (s) => s === "DELIVERED", what: "the email DELIVERED" },
    );
    const m = async (...filters: Filter[]) => {
      // data.plan exists: only the two contacts of this test (other tests send to other addresses).
      const s = await c.create({ name: "email kinds", condition: where(...filters, f("data.plan", "exists")) });
      if (s.status !== 201) throw new Error(s.text);
      return (await c.members(s.body.id)).body.data.map((x: any) => x.email.split("@")[0]).sort();
    };
    expect(await m(f("email.sent", "triggered"))).toEqual(["one"]);
    expect(await m(f("email.delivery", "triggered"))).toEqual(["one"]);
    expect(await m(f("email.delivery", "triggeredWithin", 1, "hours"))).toEqual(["one"]);
    expect(await m(f("email.delivery", "notTriggered"))).toEqual(["two"]);
    expect(await m(f("email.open", "triggered"))).toEqual([]);
    expect(await m(f("email.bounce", "notTriggered"))).toEqual(["one", "two"]);
    expect(await m(f("email.sent", "triggeredOlderThan", 1, "days"))).toEqual([]);
    srv.clock.advance(2 * DAY);
    expect(await m(f("email.sent", "triggeredOlderThan", 1, "days"))).toEqual(["one"]);
    expect(await m(f("email.sent", "notTriggeredWithin", 1, "days"))).toEqual(["one", "two"]);
  });
});

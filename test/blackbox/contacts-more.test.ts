// Black-box, second pass: contacts details the first pass (contacts.test.ts) leaves out, by endpoint (the events
// API and /v1/track: events/api-and-track.test.ts). Written from api-spec.md, decisions.md and the docs/api.md (the API guide) only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";
import { expectBare400, expectCursorPage, expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "./support";
import { contactEvents, items } from "../support/api";

let srv: TestServer;
let acc: Account;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB contacts more");
});
afterAll(() => srv?.close());

let seq = 0;
const uniq = (p = "m") => `${p}${++seq}-${Date.now()}@more-bb.example`;

const upsert = (body: unknown, who: Account = acc) => srv.api("/contacts", { key: who.secretKey, body });
const get = (id: string, who: Account = acc) => srv.api(`/contacts/${id}`, { key: who.secretKey });
const patch = (id: string, body: unknown, who: Account = acc) => srv.api(`/contacts/${id}`, { method: "PATCH", key: who.secretKey, body });
const del = (path: string, who: Account = acc) => srv.api(path, { method: "DELETE", key: who.secretKey });
const eventsOf = (contactId: string, who: Account = acc) => contactEvents(srv.api, who, contactId);
const track = (body: unknown, who: Account = acc) => srv.api("/v1/track", { key: who.publicKey, body });

function importCsv(csv: string, who: Account = acc, field = "file") {
  const form = new FormData();
  form.append(field, new Blob([csv], { type: "text/csv" }), "contacts.csv");
  return srv.api("/contacts/import", { method: "POST", key: who.secretKey, raw: form });
}

async function waitJob(path: string, who: Account = acc) {
  const read = async () => {
    await srv.drainJobs();
    const res = await srv.api(path, { key: who.secretKey });
    expect(res.status).toBe(200);
    return res.body;
  };
  return waitFor(read, { until: (j) => j.state === "completed" || j.state === "failed", what: `job ${path} to finish` });
}

/** The documented job status shape (import and bulk alike). */
function expectJobShape(job: any, id: string, type: string) {
  expect(job.id).toBe(id);
  expect(job.type).toBe(type);
  expect(["waiting", "active", "completed", "failed"]).toContain(job.state);
  expect(typeof job.progress).toBe("number");
  expect(job.progress).toBeGreaterThanOrEqual(0);
  expect(job.progress).toBeLessThanOrEqual(100);
  for (const k of ["total", "succeeded", "created", "updated", "failed"]) expect(typeof job.result[k]).toBe("number");
  expect(Array.isArray(job.result.errors)).toBe(true);
  expect(isIsoDate(job.createdAt)).toBe(true);
}

describe("POST /contacts: status codes, _meta, email case", () => {
  test("201 on create, 200 on update; _meta.isUpdate is !isNew", async () => {
    const email = uniq();
    const a = await upsert({ email });
    expect(a.status).toBe(201);
    expect(a.body._meta).toEqual({ isNew: true, isUpdate: false });
    const b = await upsert({ email });
    expect(b.status).toBe(200);
    expect(b.body._meta).toEqual({ isNew: false, isUpdate: true });
    expect(b.body.id).toBe(a.body.id);
  });

  test("emails are stored and echoed lower-cased; upsert matches case-insensitively", async () => {
    const email = uniq("MiXeD");
    const a = await upsert({ email });
    expect(a.status).toBe(201);
    expect(a.body.email).toBe(email.toLowerCase());
    const b = await upsert({ email: email.toUpperCase() });
    expect(b.status).toBe(200);
    expect(b.body.id).toBe(a.body.id);
    expect(b.body.email).toBe(email.toLowerCase());
  });

  test("a null or blank email is the bare 400", async () => {
    expectBare400(await upsert({ email: null }));
    expectBare400(await upsert({ email: "" }));
    expectBare400(await upsert({ email: "   " }));
  });

  test("an omitted subscribed keeps an existing contact's state; explicit true resubscribes", async () => {
    const email = uniq();
    const a = (await upsert({ email, subscribed: false })).body;
    expect(a.subscribed).toBe(false);
    const b = await upsert({ email, data: { x: "1" } });
    expect(b.body.subscribed).toBe(false);
    const c = await upsert({ email, subscribed: true });
    expect(c.body.subscribed).toBe(true);
  });

  test("creating records no contact.subscribed event; a flip by upsert does", async () => {
    const email = uniq();
    const a = (await upsert({ email })).body;
    expect((await eventsOf(a.id)).map((e) => e.name)).not.toContain("contact.subscribed");
    await upsert({ email, subscribed: false });
    const evs = await eventsOf(a.id);
    const un = evs.filter((e) => e.name === "contact.unsubscribed");
    expect(un.length).toBe(1);
    expect(typeof un[0].data?.source).toBe("string");
  });

  test("malformed JSON with a valid key is 400 BAD_REQUEST in the envelope (not the bare body)", async () => {
    const res = await srv.api("/contacts", { key: acc.secretKey, raw: "{not json", headers: { "content-type": "application/json" } });
    expectEnvelope(res, 400, "BAD_REQUEST");
  });

  test("no key: 401 whatever the body", async () => {
    expectEnvelope(await srv.api("/contacts", { body: {} }), 401);
    expectEnvelope(await srv.api("/contacts", { body: { email: uniq() } }), 401);
  });

  test("data keys: invalid characters are 422 invalid_key; over 64 KB is 422 too_big; over 256 keys or 16 levels is 422", async () => {
    const e1 = expectValidation(await upsert({ email: uniq(), data: { 'bad"key': 1 } }));
    expect(e1.map((e) => e.code)).toContain("invalid_key");
    expectValidation(await upsert({ email: uniq(), data: { ["k".repeat(129)]: 1 } }));
    expectValidation(await upsert({ email: uniq(), data: { "": 1 } }));
    const e2 = expectValidation(await upsert({ email: uniq(), data: { big: "x".repeat(65 * 1024) } }));
    expect(e2.map((e) => e.code)).toContain("too_big");
    const many: Record<string, number> = {};
    for (let i = 0; i < 257; i++) many[`k${i}`] = i;
    const email = uniq();
    expectValidation(await upsert({ email, data: many }));
    let deep: any = 1;
    for (let i = 0; i < 17; i++) deep = { d: deep };
    expectValidation(await upsert({ email, data: { deep } }));
    // Nothing was created by the refused requests.
    const look = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [email] } });
    expect(look.body.notFound).toEqual([email]);
    // 1-128 characters is fine.
    expect((await upsert({ email: uniq(), data: { ["k".repeat(128)]: 1 } })).status).toBe(201);
  });

  test("POST /contacts moves tracked segments (entry event)", async () => {
    const p = await newProject(srv.api, acc, "Upsert tracked");
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "Team plan", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "team" }] }] } },
    });
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { key: p.secretKey, body: {} }));
    const c = (await upsert({ email: "u@tracked-more.example", data: { plan: "team" } }, p)).body;
    const names = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await eventsOf(c.id, p)).map((e) => e.name);
      },
      { until: (n) => n.includes(`segment.${seg.body.slug}.entry`), what: "segment entry after POST /contacts" },
    );
    expect(names).toContain(`segment.${seg.body.slug}.entry`);
  });

  test("POST /contacts with no body at all is the bare 400 (missing email)", async () => {
    expectBare400(await srv.api("/contacts", { method: "POST", key: acc.secretKey }));
  });
});

describe("PATCH /contacts/:id", () => {
  test("{ value, persistent: true } stores the value; other objects and arrays are stored as JSON values", async () => {
    const c = (await upsert({ email: uniq() })).body;
    const res = await patch(c.id, { data: { plan: { value: "pro", persistent: true }, prefs: { theme: "dark" }, tags: ["a", "b"] } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ plan: "pro", prefs: { theme: "dark" }, tags: ["a", "b"] });
    expect((await get(c.id)).body.data).toEqual({ plan: "pro", prefs: { theme: "dark" }, tags: ["a", "b"] });
  });

  test("{ value, persistent: false } is never stored on the contact", async () => {
    const c = (await upsert({ email: uniq(), data: { keep: "y" } })).body;
    await patch(c.id, { data: { coupon: { value: "SAVE", persistent: false } } });
    const got = (await get(c.id)).body;
    expect(got.data.coupon).toBeUndefined();
    expect(got.data.keep).toBe("y");
  });

  test("the contact's own email is not a conflict; another contact's email in another case is 409 CONFLICT", async () => {
    const a = (await upsert({ email: uniq() })).body;
    const b = (await upsert({ email: uniq() })).body;
    const same = await patch(a.id, { email: a.email });
    expect(same.status).toBe(200);
    expect(same.body.email).toBe(a.email);
    expectEnvelope(await patch(a.id, { email: b.email.toUpperCase() }), 409, "CONFLICT");
    expect((await get(a.id)).body.email).toBe(a.email);
  });

  test("a new email is stored lower-cased", async () => {
    const a = (await upsert({ email: uniq() })).body;
    const next = uniq("ReNamed");
    const res = await patch(a.id, { email: next });
    expect(res.status).toBe(200);
    expect(res.body.email).toBe(next.toLowerCase());
  });

  test("wrong types are 422 naming the field; nothing changes", async () => {
    const a = (await upsert({ email: uniq(), data: { plan: "free" } })).body;
    expectValidation(await patch(a.id, { subscribed: "no" }), "subscribed");
    expectValidation(await patch(a.id, { data: [1, 2] }), "data");
    expectValidation(await patch(a.id, { data: "plan=pro" }), "data");
    const e = expectValidation(await patch(a.id, { data: { "bad\\key": 1 } }));
    expect(e.map((x) => x.code)).toContain("invalid_key");
    const got = (await get(a.id)).body;
    expect(got.subscribed).toBe(true);
    expect(got.data).toEqual({ plan: "free" });
  });

  test("updatedAt moves; createdAt does not", async () => {
    const a = (await upsert({ email: uniq() })).body;
    srv.clock.advance(5000);
    const res = await patch(a.id, { data: { n: 1 } });
    expect(res.body.createdAt).toBe(a.createdAt);
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(a.updatedAt));
  });

  test("the subscription event records data.source", async () => {
    const a = (await upsert({ email: uniq() })).body;
    await patch(a.id, { subscribed: false });
    const ev = (await eventsOf(a.id)).find((e) => e.name === "contact.unsubscribed");
    expect(ev).toBeDefined();
    expect(typeof ev.data.source).toBe("string");
    expect(ev.data.source.length).toBeGreaterThan(0);
  });

  test("a malformed id is 404 (GET, PATCH, DELETE)", async () => {
    expectEnvelope(await get("not-a-uuid"), 404);
    expectEnvelope(await patch("not-a-uuid", { subscribed: false }), 404);
    expectEnvelope(await del("/contacts/not-a-uuid"), 404);
  });

  test("PATCH with an empty body answers the unchanged contact", async () => {
    const c = (await upsert({ email: uniq(), data: { a: "1" } })).body;
    const res = await patch(c.id, {});
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: c.id, email: c.email, subscribed: true, data: { a: "1" }, createdAt: c.createdAt, updatedAt: c.updatedAt });
  });
});

describe("DELETE /contacts/:id", () => {
  test("204 with an empty body; the contact's events go too", async () => {
    const email = uniq();
    const t = await track({ email, event: "before_delete" });
    expectOk(t);
    const id = t.body.data.contact;
    const res = await del(`/contacts/${id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    const evs = items((await srv.api(`/events?contactId=${id}`, { key: acc.secretKey })).body);
    expect(evs.length).toBe(0);
    expectEnvelope(await srv.api(`/events/contact/${id}`, { key: acc.secretKey }), 404);
    // A second delete: the contact does not exist any more.
    expectEnvelope(await del(`/contacts/${id}`), 404);
  });
});

describe("GET /contacts: query parsing and filters", () => {
  let p: Account;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "More list");
    const rows: [string, boolean][] = [
      ["ann_lee@list-more.example", true],
      ["annxlee@list-more.example", true],
      ["bob@list-more.example", false],
      ["carl@list-more.example", true],
      ["dora@other-more.example", false],
    ];
    for (const [email, subscribed] of rows) {
      srv.clock.advance(1000);
      expect((await upsert({ email, subscribed }, p)).status).toBe(201);
    }
  });
  const q = (qs: string) => srv.api(`/contacts${qs}`, { key: p.secretKey });

  test("limit=1000 is clamped (200, not refused)", async () => {
    const res = await q("?limit=1000");
    expectCursorPage(res);
    expect(res.body.data.length).toBe(5);
    expect(res.body.hasMore).toBe(false);
    expect(res.body.total).toBe(5);
  });

  test("a negative, fractional or non-numeric limit is 400 BAD_REQUEST", async () => {
    for (const l of ["-1", "-5", "1.5", "abc", "0"]) expectEnvelope(await q(`?limit=${l}`), 400, "BAD_REQUEST");
  });

  test("a cursor that does not decode is 400 BAD_REQUEST", async () => {
    expectEnvelope(await q("?cursor=garbage!!"), 400, "BAD_REQUEST");
    expectEnvelope(await q("?cursor=eyJmb28iOiJiYXIifQ"), 400, "BAD_REQUEST");
  });

  test("the last page: hasMore false and no cursor", async () => {
    const res = await q("?limit=5");
    expectCursorPage(res);
    expect(res.body.hasMore).toBe(false);
    expect(res.body.cursor ?? null).toBeNull();
  });

  test("subscribed accepts true/false/1/0; anything else is 400", async () => {
    expect((await q("?subscribed=1")).body.total).toBe(3);
    expect((await q("?subscribed=0")).body.total).toBe(2);
    expect((await q("?subscribed=true")).body.total).toBe(3);
    expect((await q("?subscribed=false")).body.total).toBe(2);
    for (const v of ["yes", "maybe", "TRUEISH"]) expectEnvelope(await q(`?subscribed=${v}`), 400, "BAD_REQUEST");
  });

  test("search is case-insensitive and treats % and _ literally", async () => {
    const a = await q("?search=ANN");
    expect(a.body.total).toBe(2);
    const u = await q("?search=_");
    expect(u.body.total).toBe(1);
    expect(u.body.data[0].email).toBe("ann_lee@list-more.example");
    const pct = await q("?search=%25");
    expect(pct.status).toBe(200);
    expect(pct.body.total).toBe(0);
    expect(pct.body.data).toEqual([]);
  });

  test("search and subscribed combine; total is the filtered count; later pages report total 0", async () => {
    const first = await q("?search=list-more&subscribed=true&limit=2");
    expectCursorPage(first);
    expect(first.body.total).toBe(3);
    expect(first.body.hasMore).toBe(true);
    const second = await q(`?search=list-more&subscribed=true&limit=2&cursor=${encodeURIComponent(first.body.cursor)}`);
    expectCursorPage(second);
    expect(second.body.total).toBe(0);
    expect(second.body.hasMore).toBe(false);
    const all = [...first.body.data, ...second.body.data].map((c: any) => c.email);
    expect(all).toEqual(["carl@list-more.example", "annxlee@list-more.example", "ann_lee@list-more.example"]);
  });

  test("sort=email with an unknown dir falls back to desc; dir=asc with an unknown sort orders by createdAt asc", async () => {
    const d = await q("?sort=email&dir=sideways");
    expect(d.status).toBe(200);
    expect(d.body.data.map((c: any) => c.email)).toEqual([
      "dora@other-more.example",
      "carl@list-more.example",
      "bob@list-more.example",
      "annxlee@list-more.example",
      "ann_lee@list-more.example",
    ]);
    const a = await q("?sort=nope&dir=asc&limit=2");
    expect(a.status).toBe(200);
    expect(a.body.data.map((c: any) => c.email)).toEqual(["ann_lee@list-more.example", "annxlee@list-more.example"]);
  });

  test("the list never shows another project's contacts", async () => {
    const other = await newProject(srv.api, acc, "More list other");
    const res = await srv.api("/contacts?search=list-more", { key: other.secretKey });
    expectCursorPage(res);
    expect(res.body.total).toBe(0);
    expect(res.body.data).toEqual([]);
  });

  test("cursor paging over contacts created at the same instant: no duplicates, no gaps", async () => {
    const p = await newProject(srv.api, acc, "Same instant");
    for (let i = 0; i < 13; i++) expect((await upsert({ email: `same${i}@same-more.example` }, p)).status).toBe(201);
    for (const dir of ["asc", "desc"]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let guard = 0; guard < 10; guard++) {
        const res: any = await srv.api(`/contacts?limit=4&dir=${dir}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: p.secretKey });
        expectCursorPage(res);
        seen.push(...res.body.data.map((c: any) => c.email));
        if (!res.body.hasMore) break;
        cursor = res.body.cursor;
      }
      expect(seen.length).toBe(13);
      expect(new Set(seen).size).toBe(13);
    }
  });
});

describe("POST /contacts/lookup", () => {
  test("invalid strings go to notFound; addresses come back as sent; found entries are exactly { id, email, subscribed }", async () => {
    const c = (await upsert({ email: uniq() })).body;
    const res = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [c.email, "not an email", "Nobody@More-BB.example"] } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["found", "notFound"]);
    expect(res.body.found.length).toBe(1);
    expect(Object.keys(res.body.found[0]).sort()).toEqual(["email", "id", "subscribed"]);
    expect(res.body.found[0].id).toBe(c.id);
    expect(res.body.notFound).toEqual(["not an email", "Nobody@More-BB.example"]);
  });

  test("matches regardless of case", async () => {
    const c = (await upsert({ email: uniq() })).body;
    const res = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [c.email.toUpperCase()] } });
    expect(res.body.found.map((f: any) => f.id)).toEqual([c.id]);
    expect(res.body.notFound).toEqual([]);
  });

  test("emails must be an array (422); another project's contacts are not found", async () => {
    expectValidation(await srv.api("/contacts/lookup", { key: acc.secretKey, body: {} }), "emails");
    expectValidation(await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: "a@b.example" } }), "emails");
    const c = (await upsert({ email: uniq() })).body;
    const other = await newProject(srv.api, acc, "Lookup other");
    const res = await srv.api("/contacts/lookup", { key: other.secretKey, body: { emails: [c.email] } });
    expect(res.body.found).toEqual([]);
    expect(res.body.notFound).toEqual([c.email]);
  });

  test("lookup: a very long string is an invalid string and goes to notFound", async () => {
    const long = "x".repeat(400) + "@more-bb.example";
    const res = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [long] } });
    expect(res.status).toBe(200);
    expect(res.body.notFound).toEqual([long]);
  });
});

describe("contact fields (more)", () => {
  let p: Account;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "More fields");
    expect((await upsert({ email: "a@fields-more.example", data: { plan: "pro", tags: ["x"] } }, p)).status).toBe(201);
    expect((await upsert({ email: "b@fields-more.example", data: { plan: "pro" } }, p)).status).toBe(201);
    expect((await upsert({ email: "c@fields-more.example", data: { plan: "free" } }, p)).status).toBe(201);
  });

  test("standard fields list email, subscribed, createdAt, updatedAt; coverage rounded to 2 decimals; arrays are object", async () => {
    const res = await srv.api("/contacts/fields", { key: p.secretKey });
    expect(res.status).toBe(200);
    const std = Object.fromEntries(res.body.standard.map((f: any) => [f.name, f.type]));
    for (const n of ["email", "subscribed", "createdAt", "updatedAt"]) expect(std[n]).toBeDefined();
    expect(std.subscribed).toBe("boolean");
    const custom = Object.fromEntries(res.body.custom.map((f: any) => [f.name, f]));
    expect(custom.tags).toEqual({ name: "tags", path: "data.tags", type: "object", coverage: 33.33 });
    expect(custom.plan).toEqual({ name: "plan", path: "data.plan", type: "string", coverage: 100 });
    for (const f of res.body.custom) expect(["string", "number", "boolean", "date", "object", "mixed"]).toContain(f.type);
  });

  test("an empty project has no custom fields", async () => {
    const empty = await newProject(srv.api, acc, "Fields empty");
    const res = await srv.api("/contacts/fields", { key: empty.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.custom).toEqual([]);
  });

  test("values: :field as data.plan works too; { field, values: [{ value, count }] }, most frequent first", async () => {
    for (const f of ["plan", "data.plan"]) {
      const res = await srv.api(`/contacts/fields/${f}/values`, { key: p.secretKey });
      expect(res.status).toBe(200);
      expect(res.body.field).toBe("plan");
      expect(res.body.values).toEqual([
        { value: "pro", count: 2 },
        { value: "free", count: 1 },
      ]);
    }
  });

  test("values: the top 100 by default, limit up to 1000", async () => {
    const q = await newProject(srv.api, acc, "Fields values");
    const csv = "email,code\n" + Array.from({ length: 150 }, (_, i) => `v${i}@values-more.example,c${i}`).join("\n") + "\n";
    const imp = await importCsv(csv, q);
    expect(imp.status).toBe(202);
    await waitJob(`/contacts/import/${imp.body.jobId}`, q);
    const def = await srv.api("/contacts/fields/code/values", { key: q.secretKey });
    expect(def.body.values.length).toBe(100);
    const more = await srv.api("/contacts/fields/code/values?limit=1000", { key: q.secretKey });
    expect(more.body.values.length).toBe(150);
  });

  test("usage names the segments that reference the field (as plan or data.plan)", async () => {
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "Pro users", condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
    });
    expect(seg.status).toBe(201);
    for (const f of ["plan", "data.plan"]) {
      const res = await srv.api(`/contacts/fields/${f}/usage`, { key: p.secretKey });
      expect(res.status).toBe(200);
      for (const k of ["segments", "campaigns", "workflows"]) expect(Array.isArray(res.body[k])).toBe(true);
      expect(JSON.stringify(res.body.segments)).toContain(seg.body.id);
    }
    const none = await srv.api("/contacts/fields/unused/usage", { key: p.secretKey });
    expect(none.body.segments).toEqual([]);
  });

  test("DELETE /contacts/fields/:field answers { field, contactsUpdated }; data.<key> works too", async () => {
    const q = await newProject(srv.api, acc, "Fields delete");
    await upsert({ email: "d1@fields-more.example", data: { tier: "1", other: "k" } }, q);
    const d2 = (await upsert({ email: "d2@fields-more.example", data: { tier: "2" } }, q)).body;
    await upsert({ email: "d3@fields-more.example", data: { other: "k" } }, q);
    const res = await del("/contacts/fields/data.tier", q);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ field: "tier", contactsUpdated: 2 });
    expect((await get(d2.id, q)).body.data).toEqual({});
    const again = await del("/contacts/fields/tier", q);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ field: "tier", contactsUpdated: 0 });
  });

  test("field values: limit above 1000 is clamped; limit 0 is 400", async () => {
    const p = await newProject(srv.api, acc, "Values clamp");
    await upsert({ email: "v@values-more.example", data: { plan: "x" } }, p);
    const res = await srv.api("/contacts/fields/plan/values?limit=5000", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.values).toEqual([{ value: "x", count: 1 }]);
    expectEnvelope(await srv.api("/contacts/fields/plan/values?limit=0", { key: p.secretKey }), 400, "BAD_REQUEST");
  });

  test("fields are per project", async () => {
    const p = await newProject(srv.api, acc, "Fields mine");
    const other = await newProject(srv.api, acc, "Fields theirs");
    await upsert({ email: "mine@fields-more.example", data: { secretField: "s" } }, p);
    const res = await srv.api("/contacts/fields", { key: other.secretKey });
    expect(res.body.custom.map((f: any) => f.name)).not.toContain("secretField");
    const vals = await srv.api("/contacts/fields/secretField/values", { key: other.secretKey });
    expect(vals.status).toBe(200);
    expect(vals.body.values).toEqual([]);
  });

  test("fields coverage follows a contact delete", async () => {
    const p = await newProject(srv.api, acc, "Coverage delete");
    const a = (await upsert({ email: "a@cov-more.example", data: { plan: "pro" } }, p)).body;
    await upsert({ email: "b@cov-more.example" }, p);
    const cov = async () => (await srv.api("/contacts/fields", { key: p.secretKey })).body.custom.find((f: any) => f.name === "plan")?.coverage;
    expect(await cov()).toBe(50);
    expect((await del(`/contacts/${a.id}`, p)).status).toBe(204);
    expect(await cov()).toBeUndefined();
    await upsert({ email: "c@cov-more.example", data: { plan: "free" } }, p);
    expect(await cov()).toBe(50);
  });

  test("deleting a field is a contact write: tracked segments follow (exit event)", async () => {
    const p = await newProject(srv.api, acc, "Field delete tracked");
    const c = (await upsert({ email: "fd@tracked-more.example", data: { tier: "gold" } }, p)).body;
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "Gold tier", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "gold" }] }] } },
    });
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { key: p.secretKey, body: {} }));
    expect((await del("/contacts/fields/tier", p)).body.contactsUpdated).toBe(1);
    const names = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await eventsOf(c.id, p)).map((e) => e.name);
      },
      { until: (n) => n.includes(`segment.${seg.body.slug}.exit`), what: "segment exit after field delete" },
    );
    expect(names).toContain(`segment.${seg.body.slug}.entry`);
  });
});

describe("CSV import (more)", () => {
  test("job status shape; type import; row numbers count the header as row 1; subscribed y/n and empty keeps", async () => {
    const p = await newProject(srv.api, acc, "Import more");
    const off = (await upsert({ email: "keep-off@import-more.example", subscribed: false }, p)).body;
    const csv = [
      "email,subscribed,plan",
      "a@import-more.example,y,pro", // row 2
      "broken,yes,x", // row 3
      "b@import-more.example,n,free", // row 4
      "keep-off@import-more.example,,team", // row 5
      "c@import-more.example,0,", // row 6
      ",1,nobody", // row 7
    ].join("\r\n");
    const res = await importCsv(csv, p);
    expect(res.status).toBe(202);
    expect(Object.keys(res.body)).toEqual(["jobId"]);
    const job = await waitJob(`/contacts/import/${res.body.jobId}`, p);
    expectJobShape(job, res.body.jobId, "import");
    expect(job.state).toBe("completed");
    expect(job.progress).toBe(100);
    expect(isIsoDate(job.finishedAt)).toBe(true);
    expect(job.result).toMatchObject({ total: 6, succeeded: 4, created: 3, updated: 1, failed: 2 });
    const rows = job.result.errors.map((e: any) => e.row).sort();
    expect(rows).toEqual([3, 7]);
    for (const e of job.result.errors) {
      expect(typeof e.error).toBe("string");
      expect(e).toHaveProperty("email");
    }
    expect(job.result.errors.find((e: any) => e.row === 3).email).toBe("broken");

    const look = await srv.api("/contacts/lookup", {
      key: p.secretKey,
      body: { emails: ["a@import-more.example", "b@import-more.example", "c@import-more.example", off.email] },
    });
    const sub = Object.fromEntries(look.body.found.map((c: any) => [c.email, c.subscribed]));
    expect(sub).toEqual({ "a@import-more.example": true, "b@import-more.example": false, "c@import-more.example": false, [off.email]: false });
    expect((await get(off.id, p)).body.data).toEqual({ plan: "team" });
  });

  test("addresses are stored lower-cased", async () => {
    const p = await newProject(srv.api, acc, "Import case");
    const res = await importCsv("email\nUPPER@Import-More.example\n", p);
    await waitJob(`/contacts/import/${res.body.jobId}`, p);
    const list = await srv.api("/contacts", { key: p.secretKey });
    expect(list.body.data.map((c: any) => c.email)).toEqual(["upper@import-more.example"]);
  });

  test("an empty file is 422 at upload; no file field is 422", async () => {
    expectEnvelope(await importCsv(""), 422, "VALIDATION_ERROR");
    expectEnvelope(await importCsv("email\na@x-more.example\n", acc, "upload"), 422, "VALIDATION_ERROR");
  });

  test("another project's import job is 404; so is a bulk job id asked for by another project", async () => {
    const p = await newProject(srv.api, acc, "Import owner");
    const res = await importCsv("email\nz@import-more.example\n", p);
    expect(res.status).toBe(202);
    await waitJob(`/contacts/import/${res.body.jobId}`, p);
    expectEnvelope(await srv.api(`/contacts/import/${res.body.jobId}`, { key: acc.secretKey }), 404);
    const b = await srv.api("/contacts/bulk-subscribe", { key: p.secretKey, body: { contactIds: [NO_SUCH_ID] } });
    expect(b.status).toBe(202);
    expectEnvelope(await srv.api(`/contacts/bulk/${b.body.jobId}`, { key: acc.secretKey }), 404);
  });

  test("the import moves tracked segments (entry event on the imported contact)", async () => {
    const p = await newProject(srv.api, acc, "Import tracked");
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "Gold", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "gold" }] }] } },
    });
    expect(seg.status).toBe(201);
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { key: p.secretKey, body: {} }));
    const res = await importCsv("email,tier\ng@import-more.example,gold\n", p);
    await waitJob(`/contacts/import/${res.body.jobId}`, p);
    const found = (await srv.api("/contacts/lookup", { key: p.secretKey, body: { emails: ["g@import-more.example"] } })).body.found[0];
    const names = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await eventsOf(found.id, p)).map((e) => e.name);
      },
      { until: (n) => n.includes(`segment.${seg.body.slug}.entry`), what: "segment entry event after import" },
    );
    expect(names).toContain(`segment.${seg.body.slug}.entry`);
  });

  test("import: row numbers are spreadsheet rows even after a blank line or an unreadable row", async () => {
    const p = await newProject(srv.api, acc, "Import rows");
    const csv = [
      "email,plan", // row 1
      "ok1@rows-more.example,a", // row 2
      "", // row 3 (blank)
      "bad\"quote@rows-more.example,b", // row 4 (not readable as CSV)
      "broken,c", // row 5
      "multi@rows-more.example,\"two", // row 6: one quoted cell over two lines
      "lines\"",
      "also-broken,d", // row 7
      "ok2@rows-more.example,e", // row 8
    ].join("\n");
    const res = await importCsv(csv, p);
    expect(res.status).toBe(202);
    const job = await waitJob(`/contacts/import/${res.body.jobId}`, p);
    expect(job.result).toMatchObject({ succeeded: 3, failed: 3 });
    const rows = Object.fromEntries(job.result.errors.map((e: any) => [e.row, e.email]));
    expect(Object.keys(rows).map(Number).sort((a, b) => a - b)).toEqual([4, 5, 7]);
    expect(rows[5]).toBe("broken");
    expect(rows[7]).toBe("also-broken");
    const look = await srv.api("/contacts/lookup", { key: p.secretKey, body: { emails: ["multi@rows-more.example"] } });
    expect((await get(look.body.found[0].id, p)).body.data).toEqual({ plan: "two\nlines" });
  });

  test("import: a flip of an existing contact records the event (source named); a new unsubscribed contact records none", async () => {
    const p = await newProject(srv.api, acc, "Import flips");
    const c = (await upsert({ email: "flip@import-more.example" }, p)).body;
    const res = await importCsv("email,subscribed\nflip@import-more.example,no\nnew-off@import-more.example,no\n", p);
    await waitJob(`/contacts/import/${res.body.jobId}`, p);
    const ev = (await eventsOf(c.id, p)).filter((e) => e.name === "contact.unsubscribed");
    expect(ev.length).toBe(1);
    expect(typeof ev[0].data.source).toBe("string");
    const n = (await srv.api("/contacts/lookup", { key: p.secretKey, body: { emails: ["new-off@import-more.example"] } })).body.found[0];
    expect(n.subscribed).toBe(false);
    expect((await eventsOf(n.id, p)).map((e) => e.name)).not.toContain("contact.unsubscribed");
  });

  test("a CSV of exactly 5 MB is accepted (202)", async () => {
    const p = await newProject(srv.api, acc, "Import 5MB");
    const head = "email,filler\n";
    const row = "not-an-address,".padEnd(1023, "x") + "\n";
    const size = 5 * 1024 * 1024;
    let csv = head + row.repeat(Math.floor((size - head.length) / row.length));
    csv += "y".repeat(size - csv.length);
    expect(Buffer.byteLength(csv)).toBe(size);
    const res = await importCsv(csv, p);
    expect(res.status).toBe(202);
    expect(typeof res.body.jobId).toBe("string");
  });

  test("import: at most 1,000 row errors are kept; failed counts all", async () => {
    const p = await newProject(srv.api, acc, "Import errors cap");
    const csv = "email\n" + Array.from({ length: 1005 }, (_, i) => `bad${i}`).join("\n") + "\nok@cap-more.example\n";
    const res = await importCsv(csv, p);
    const job = await waitJob(`/contacts/import/${res.body.jobId}`, p);
    expect(job.result).toMatchObject({ total: 1006, succeeded: 1, created: 1, failed: 1005 });
    expect(job.result.errors.length).toBe(1000);
    expect(job.result.errors[0]).toMatchObject({ row: 2, email: "bad0" });
  });

  test("import: a UTF-8 byte-order mark before the header does not hide the email column", async () => {
    const p = await newProject(srv.api, acc, "Import BOM");
    const res = await importCsv("\uFEFFemail,plan\nbom@bom-more.example,pro\n", p);
    expect(res.status).toBe(202);
    const job = await waitJob(`/contacts/import/${res.body.jobId}`, p);
    expect(job.result).toMatchObject({ total: 1, created: 1, failed: 0 });
  });
});

describe("bulk jobs (more)", () => {
  test("types, result counts (updated = actual changes), unknown ids as { row, email: null, contactId, error }, events emitted", async () => {
    const p = await newProject(srv.api, acc, "Bulk more");
    const a = (await upsert({ email: "a@bulk-more.example" }, p)).body;
    const b = (await upsert({ email: "b@bulk-more.example", subscribed: false }, p)).body;
    const res = await srv.api("/contacts/bulk-unsubscribe", { key: p.secretKey, body: { contactIds: [a.id, b.id, NO_SUCH_ID] } });
    expect(res.status).toBe(202);
    expect(Object.keys(res.body)).toEqual(["jobId"]);
    const job = await waitJob(`/contacts/bulk/${res.body.jobId}`, p);
    expectJobShape(job, res.body.jobId, "bulk-unsubscribe");
    expect(job.state).toBe("completed");
    expect(job.progress).toBe(100);
    expect(isIsoDate(job.finishedAt)).toBe(true);
    expect(job.result).toMatchObject({ total: 3, succeeded: 2, created: 0, updated: 1, failed: 1 });
    expect(job.result.errors.length).toBe(1);
    expect(job.result.errors[0]).toMatchObject({ email: null, contactId: NO_SUCH_ID });
    expect(typeof job.result.errors[0].row).toBe("number");
    expect(typeof job.result.errors[0].error).toBe("string");
    // The flip is an event on the contact that actually changed, and only on it.
    const evA = (await eventsOf(a.id, p)).filter((e) => e.name === "contact.unsubscribed");
    expect(evA.length).toBe(1);
    expect(typeof evA[0].data.source).toBe("string");
    expect((await eventsOf(b.id, p)).filter((e) => e.name === "contact.unsubscribed").length).toBe(0);

    const s = await srv.api("/contacts/bulk-subscribe", { key: p.secretKey, body: { contactIds: [a.id] } });
    const sj = await waitJob(`/contacts/bulk/${s.body.jobId}`, p);
    expect(sj.type).toBe("bulk-subscribe");
    expect(sj.result).toMatchObject({ total: 1, succeeded: 1, updated: 1, failed: 0 });
    expect((await eventsOf(a.id, p)).filter((e) => e.name === "contact.subscribed").length).toBe(1);

    const d = await srv.api("/contacts/bulk-delete", { key: p.secretKey, body: { contactIds: [b.id] } });
    const dj = await waitJob(`/contacts/bulk/${d.body.jobId}`, p);
    expect(dj.type).toBe("bulk-delete");
    expect(dj.result).toMatchObject({ total: 1, succeeded: 1, failed: 0 });
    expectEnvelope(await get(b.id, p), 404);
  });

  test("1000 ids are accepted; a missing or non-array contactIds is 422", async () => {
    const thousand = Array.from({ length: 1000 }, () => NO_SUCH_ID);
    expect((await srv.api("/contacts/bulk-subscribe", { key: acc.secretKey, body: { contactIds: thousand } })).status).toBe(202);
    for (const path of ["/contacts/bulk-subscribe", "/contacts/bulk-unsubscribe", "/contacts/bulk-delete"]) {
      expectValidation(await srv.api(path, { key: acc.secretKey, body: {} }), "contactIds");
      expectValidation(await srv.api(path, { key: acc.secretKey, body: { contactIds: "x" } }), "contactIds");
    }
  });

  test("bulk unsubscribe moves tracked segments (exit event)", async () => {
    const p = await newProject(srv.api, acc, "Bulk tracked");
    const c = (await upsert({ email: "t@bulk-more.example" }, p)).body;
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "Subs", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "subscribed", operator: "equals", value: true }] }] } },
    });
    expect(seg.status).toBe(201);
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { key: p.secretKey, body: {} }));
    const res = await srv.api("/contacts/bulk-unsubscribe", { key: p.secretKey, body: { contactIds: [c.id] } });
    await waitJob(`/contacts/bulk/${res.body.jobId}`, p);
    const names = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await eventsOf(c.id, p)).map((e) => e.name);
      },
      { until: (n) => n.includes(`segment.${seg.body.slug}.exit`), what: "segment exit event after bulk unsubscribe" },
    );
    expect(names).toContain(`segment.${seg.body.slug}.entry`);
  });

  test("PATCH moves tracked segments (entry event)", async () => {
    const p = await newProject(srv.api, acc, "Patch tracked");
    const c = (await upsert({ email: "p@bulk-more.example" }, p)).body;
    const seg = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: "VIP", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.vip", operator: "equals", value: true }] }] } },
    });
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { key: p.secretKey, body: {} }));
    expect((await patch(c.id, { data: { vip: true } }, p)).status).toBe(200);
    const names = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await eventsOf(c.id, p)).map((e) => e.name);
      },
      { until: (n) => n.includes(`segment.${seg.body.slug}.entry`), what: "segment entry event after PATCH" },
    );
    expect(names.filter((n) => n === `segment.${seg.body.slug}.entry`).length).toBe(1);
  });
});

describe("keys: the public key and no key are refused on contacts endpoints", () => {
  test("401 INVALID_API_KEY", async () => {
    const c = (await upsert({ email: uniq() })).body;
    const pk = acc.publicKey;
    const form = new FormData();
    form.append("file", new Blob(["email\nx@pk-more.example\n"], { type: "text/csv" }), "c.csv");
    const calls: [string, string, unknown?, BodyInit?][] = [
      ["GET", "/contacts"],
      ["GET", `/contacts/${c.id}`],
      ["PATCH", `/contacts/${c.id}`, { subscribed: false }],
      ["DELETE", `/contacts/${c.id}`],
      ["POST", "/contacts/lookup", { emails: [c.email] }],
      ["GET", "/contacts/fields"],
      ["GET", "/contacts/fields/plan/values"],
      ["GET", "/contacts/fields/plan/usage"],
      ["DELETE", "/contacts/fields/plan"],
      ["POST", "/contacts/import", undefined, form],
      ["GET", `/contacts/import/${NO_SUCH_ID}`],
      ["POST", "/contacts/bulk-subscribe", { contactIds: [c.id] }],
      ["POST", "/contacts/bulk-unsubscribe", { contactIds: [c.id] }],
      ["POST", "/contacts/bulk-delete", { contactIds: [c.id] }],
      ["GET", `/contacts/bulk/${NO_SUCH_ID}`],
    ];
    for (const [method, path, body, raw] of calls) {
      expectEnvelope(await srv.api(path, { method, key: pk, body, raw }), 401, "INVALID_API_KEY");
    }
    const still = (await get(c.id)).body;
    expect(still.subscribed).toBe(true);
  });

  test("GET /contacts/:id without a key: 401 in the envelope", async () => {
    const c = (await upsert({ email: uniq() })).body;
    expectEnvelope(await srv.api(`/contacts/${c.id}`), 401);
    expectEnvelope(await srv.api(`/contacts/${c.id}`, { key: "sk_not_a_real_key_0000" }), 401);
  });
});

test("concurrent upserts of one new address create exactly one contact (one 201, the rest 200)", async () => {
  const email = uniq("race");
  const all = await Promise.all(Array.from({ length: 6 }, (_, i) => upsert({ email: i % 2 ? email.toUpperCase() : email })));
  expect(all.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
  expect(new Set(all.map((r) => r.body.id)).size).toBe(1);
  expect(all.filter((r) => r.body._meta.isNew).length).toBe(1);
});

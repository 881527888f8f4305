// Black-box: contacts (upsert, CRUD, cursor list, lookup, fields, import, bulk jobs) from api-spec.md + decisions.md.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";
import { expectBare400, expectCursorPage, expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "./support";
import { items } from "../support/api";


let srv: TestServer;
let acc: Account;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB contacts");
});
afterAll(() => srv?.close());

const CONTACT_KEYS = ["createdAt", "data", "email", "id", "subscribed", "updatedAt"];
let seq = 0;
const uniq = (p = "c") => `${p}${++seq}-${Date.now()}@contacts-bb.example`;

const upsert = (body: unknown, who: Account = acc) => srv.api("/contacts", { key: who.secretKey, body });
const get = (id: string, who: Account = acc) => srv.api(`/contacts/${id}`, { key: who.secretKey });
const patch = (id: string, body: unknown, who: Account = acc) => srv.api(`/contacts/${id}`, { method: "PATCH", key: who.secretKey, body });
/** Items of a list answer that is either a bare array or `{ data: [] }`. */

function expectContact(c: any) {
  for (const k of CONTACT_KEYS) expect(c).toHaveProperty(k);
  expect(typeof c.id).toBe("string");
  expect(typeof c.subscribed).toBe("boolean");
  expect(c.data).toBeObject();
  expect(isIsoDate(c.createdAt)).toBe(true);
  expect(isIsoDate(c.updatedAt)).toBe(true);
}

/** Runs queued jobs, then polls a job status URL until it is completed or failed. */
async function waitJob(path: string, who: Account = acc) {
  const job = async () => {
    await srv.drainJobs();
    const res = await srv.api(path, { key: who.secretKey });
    expect(res.status).toBe(200);
    return res.body;
  };
  return waitFor(job, { until: (j) => j.state === "completed" || j.state === "failed", what: `job ${path} to finish` });
}

describe("POST /contacts (upsert by email)", () => {
  test("creates: the contact with _meta { isNew: true, isUpdate: false }; subscribed defaults to true", async () => {
    const email = uniq();
    const res = await upsert({ email, data: { plan: "pro", seats: 3, trial: false } });
    expectOk(res);
    expectContact(res.body);
    expect(res.body.email).toBe(email);
    expect(res.body.subscribed).toBe(true);
    expect(res.body.data).toEqual({ plan: "pro", seats: 3, trial: false });
    expect(res.body._meta).toEqual({ isNew: true, isUpdate: false });
    const got = await get(res.body.id);
    expect(got.status).toBe(200);
    expectContact(got.body);
    expect(got.body._meta).toBeUndefined();
    expect(got.body.email).toBe(email);
  });

  test("the same email again updates the same contact: _meta { isNew: false, isUpdate: true }", async () => {
    const email = uniq();
    const a = (await upsert({ email, data: { plan: "free" } })).body;
    const b = await upsert({ email, subscribed: false, data: { plan: "pro" } });
    expectOk(b);
    expect(b.body.id).toBe(a.id);
    expect(b.body._meta).toEqual({ isNew: false, isUpdate: true });
    expect(b.body.subscribed).toBe(false);
    expect(b.body.data.plan).toBe("pro");
  });

  test("a missing email is 400 with a bare { error } body", async () => {
    expectBare400(await upsert({ data: { plan: "x" } }));
    expectBare400(await upsert({}));
  });

  test("an invalid email is 422 VALIDATION_ERROR naming email", async () => {
    expectValidation(await upsert({ email: "not-an-email" }), "email");
  });

  test("subscribed and data must have the right types (422)", async () => {
    expectValidation(await upsert({ email: uniq(), subscribed: "yes" }), "subscribed");
    expectValidation(await upsert({ email: uniq(), data: "plan=pro" }), "data");
  });

  test("public key: 401 INVALID_API_KEY and no contact created", async () => {
    const email = uniq();
    expectEnvelope(await upsert({ email }, { ...acc, secretKey: acc.publicKey }), 401, "INVALID_API_KEY");
    const lookup = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [email] } });
    expect(lookup.body.notFound).toEqual([email]);
  });
});

describe("GET/PATCH/DELETE /contacts/:id", () => {
  test("unknown id: 404 on GET, PATCH, DELETE", async () => {
    expectEnvelope(await get(NO_SUCH_ID), 404);
    expectEnvelope(await patch(NO_SUCH_ID, { subscribed: false }), 404);
    expectEnvelope(await srv.api(`/contacts/${NO_SUCH_ID}`, { method: "DELETE", key: acc.secretKey }), 404);
  });

  test("PATCH data rules: primitives stored, null deletes, empty string ignored, reserved keys dropped", async () => {
    const c = (await upsert({ email: uniq(), data: { plan: "free", city: "Oslo", gone: "x" } })).body;
    const res = await patch(c.id, {
      data: {
        plan: "pro",
        seats: 5,
        vip: true,
        gone: null,
        city: "",
        id: "hack",
        svc_id: "hack",
        svc_email: "hack",
        email: "hack@x.example",
        unsubscribeUrl: "http://evil",
        subscribeUrl: "http://evil",
        manageUrl: "http://evil",
      },
    });
    expect(res.status).toBe(200);
    expectContact(res.body);
    expect(res.body.data).toEqual({ plan: "pro", seats: 5, vip: true, city: "Oslo" });
    expect(res.body.id).toBe(c.id);
    expect(res.body.email).toBe(c.email);
    expect((await get(c.id)).body.data).toEqual({ plan: "pro", seats: 5, vip: true, city: "Oslo" });
  });

  test("PATCH email; another contact's email is 409", async () => {
    const a = (await upsert({ email: uniq() })).body;
    const b = (await upsert({ email: uniq() })).body;
    const newEmail = uniq("renamed");
    const res = await patch(a.id, { email: newEmail });
    expect(res.status).toBe(200);
    expect(res.body.email).toBe(newEmail);
    expectEnvelope(await patch(b.id, { email: newEmail }), 409);
    expect((await get(b.id)).body.email).toBe(b.email);
    expectValidation(await patch(b.id, { email: "nope" }), "email");
  });

  test("PATCH subscribed flips emit contact.unsubscribed / contact.subscribed on the contact", async () => {
    const c = (await upsert({ email: uniq() })).body;
    expect((await patch(c.id, { subscribed: false })).body.subscribed).toBe(false);
    expect((await patch(c.id, { subscribed: true })).body.subscribed).toBe(true);
    // Not a flip: no event.
    await patch(c.id, { subscribed: true });
    const ev = await srv.api(`/events/contact/${c.id}`, { key: acc.secretKey });
    expect(ev.status).toBe(200);
    const names = items(ev.body).map((e: any) => e.name);
    expect(names.filter((n: string) => n === "contact.unsubscribed").length).toBe(1);
    expect(names.filter((n: string) => n === "contact.subscribed").length).toBe(1);
  });

  test("DELETE is permanent: GET is 404 afterwards", async () => {
    const c = (await upsert({ email: uniq() })).body;
    const res = await srv.api(`/contacts/${c.id}`, { method: "DELETE", key: acc.secretKey });
    expectOk(res);
    expectEnvelope(await get(c.id), 404);
    // Upserting the email again creates a new contact.
    const again = await upsert({ email: c.email });
    expect(again.body._meta.isNew).toBe(true);
    expect(again.body.id).not.toBe(c.id);
  });

  test("another project's contact is 404", async () => {
    const other = await newProject(srv.api, acc, "Contacts other");
    const c = (await upsert({ email: uniq() })).body;
    expectEnvelope(await get(c.id, other), 404);
    expectEnvelope(await patch(c.id, { subscribed: false }, other), 404);
    expectEnvelope(await srv.api(`/contacts/${c.id}`, { method: "DELETE", key: other.secretKey }), 404);
    expect((await get(c.id)).body.subscribed).toBe(true);
  });
});

describe("GET /contacts (cursor list)", () => {
  let p: Account;
  const emails: string[] = [];
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "Contacts list");
    for (let i = 0; i < 25; i++) {
      srv.clock.advance(1000);
      const email = `person${String(i).padStart(2, "0")}@List-BB.example`;
      emails.push(email);
      expectOk(await upsert({ email, subscribed: i % 5 !== 0, data: { n: i } }, p));
    }
  });
  const q = (qs: string) => srv.api(`/contacts${qs}`, { key: p.secretKey });

  test("defaults: 20 newest first, hasMore, a cursor, total on the first page", async () => {
    const res = await q("");
    expectCursorPage(res);
    expect(res.body.data.length).toBe(20);
    expect(res.body.hasMore).toBe(true);
    expect(typeof res.body.cursor).toBe("string");
    expect(res.body.total).toBe(25);
    for (const c of res.body.data) expectContact(c);
    const got = res.body.data.map((c: any) => c.data.n);
    expect(got).toEqual([24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5]);
  });

  test("the cursor pages to the end; later pages have total 0; no duplicates or gaps", async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const res: any = await q(`?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expectCursorPage(res);
      expect(res.body.total).toBe(pages === 0 ? 25 : 0);
      seen.push(...res.body.data.map((c: any) => c.data.n));
      pages++;
      if (!res.body.hasMore) break;
      cursor = res.body.cursor;
    }
    expect(pages).toBe(4);
    expect(seen).toEqual([...Array(25).keys()].reverse());
  });

  test("limit above 100 is clamped to 100 (not refused)", async () => {
    const res = await q("?limit=500");
    expectCursorPage(res);
    expect(res.body.data.length).toBe(25);
  });

  test("with more than 100 contacts, limit=150 gives 100 and hasMore", async () => {
    const big = await newProject(srv.api, acc, "Contacts 105");
    const form = new FormData();
    const csv = "email\n" + Array.from({ length: 105 }, (_, i) => `bulk${i}@clamp-bb.example`).join("\n") + "\n";
    form.append("file", new Blob([csv], { type: "text/csv" }), "c.csv");
    const imp = await srv.api("/contacts/import", { method: "POST", key: big.secretKey, raw: form });
    expect(imp.status).toBe(202);
    await waitJob(`/contacts/import/${imp.body.jobId}`, big);
    const res = await srv.api("/contacts?limit=150", { key: big.secretKey });
    expectCursorPage(res);
    expect(res.body.data.length).toBe(100);
    expect(res.body.hasMore).toBe(true);
    expect(res.body.total).toBe(105);
    const rest = await srv.api(`/contacts?limit=150&cursor=${encodeURIComponent(res.body.cursor)}`, { key: big.secretKey });
    expect(rest.body.data.length).toBe(5);
    expect(rest.body.hasMore).toBe(false);
    expect(rest.body.total).toBe(0);
  });

  test("limit below 1 is 400", async () => {
    expectEnvelope(await q("?limit=0"), 400);
  });

  test("search is a case-insensitive email substring; total is the filtered count", async () => {
    const res = await q("?search=PERSON1");
    expectCursorPage(res);
    expect(res.body.total).toBe(10);
    expect(res.body.data.map((c: any) => c.data.n).sort((a: number, b: number) => a - b)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
  });

  test("subscribed=true / false filters; omitted gives both", async () => {
    const off = await q("?subscribed=false");
    expect(off.body.total).toBe(5);
    for (const c of off.body.data) expect(c.subscribed).toBe(false);
    const on = await q("?subscribed=true");
    expect(on.body.total).toBe(20);
  });

  test("sort=email dir=asc; unknown sort and dir fall back to createdAt desc", async () => {
    const res = await q("?sort=email&dir=asc&limit=3");
    expect(res.body.data.map((c: any) => c.data.n)).toEqual([0, 1, 2]);
    const fb = await q("?sort=shoeSize&dir=up&limit=3");
    expect(fb.status).toBe(200);
    expect(fb.body.data.map((c: any) => c.data.n)).toEqual([24, 23, 22]);
  });

  test("sort=email pages through the cursor in order", async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    for (;;) {
      const res: any = await q(`?sort=email&dir=desc&limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      seen.push(...res.body.data.map((c: any) => c.data.n));
      if (!res.body.hasMore) break;
      cursor = res.body.cursor;
    }
    expect(seen).toEqual([...Array(25).keys()].reverse());
  });

  test("createdAt asc", async () => {
    const res = await q("?sort=createdAt&dir=asc&limit=3");
    expect(res.body.data.map((c: any) => c.data.n)).toEqual([0, 1, 2]);
  });
});

describe("POST /contacts/lookup", () => {
  test("{ found: [{ id, email, subscribed }], notFound: [email] }", async () => {
    const c = (await upsert({ email: uniq(), subscribed: false })).body;
    const missing = uniq("missing");
    const res = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [c.email, missing] } });
    expect(res.status).toBe(200);
    expect(res.body.found).toEqual([{ id: c.id, email: c.email, subscribed: false }]);
    expect(res.body.notFound).toEqual([missing]);
  });

  test("500 emails are fine, 501 are refused (422)", async () => {
    const five = Array.from({ length: 500 }, (_, i) => `l${i}@lookup-bb.example`);
    const ok = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: five } });
    expect(ok.status).toBe(200);
    expect(ok.body.notFound.length).toBe(500);
    const res = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [...five, "x@lookup-bb.example"] } });
    expectValidation(res, "emails");
  });
});

describe("contact fields", () => {
  let p: Account;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "Fields");
    expectOk(await upsert({ email: "f1@fields-bb.example", data: { plan: "pro", seats: 3 } }, p));
    expectOk(await upsert({ email: "f2@fields-bb.example", data: { plan: "free" } }, p));
    expectOk(await upsert({ email: "f3@fields-bb.example", data: { plan: "pro", vip: true } }, p));
    expectOk(await upsert({ email: "f4@fields-bb.example" }, p));
  });

  test("GET /contacts/fields: standard [{ name, type }] and custom [{ name, path, type, coverage }]", async () => {
    const res = await srv.api("/contacts/fields", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body.standard)).toBe(true);
    const std = res.body.standard.map((f: any) => f.name);
    for (const n of ["email", "subscribed", "createdAt"]) expect(std).toContain(n);
    for (const f of res.body.standard) expect(typeof f.type).toBe("string");
    const custom = Object.fromEntries(res.body.custom.map((f: any) => [f.name, f]));
    expect(custom.plan).toEqual({ name: "plan", path: "data.plan", type: "string", coverage: 75 });
    expect(custom.seats).toMatchObject({ path: "data.seats", type: "number", coverage: 25 });
    expect(custom.vip).toMatchObject({ path: "data.vip", type: "boolean", coverage: 25 });
  });

  test("inferred types also include date, object and mixed", async () => {
    const q = await newProject(srv.api, acc, "Field types");
    expectOk(await upsert({ email: "t1@fields-bb.example", data: { born: "1990-05-01", mix: 1, prefs: { a: 1 } } }, q));
    expectOk(await upsert({ email: "t2@fields-bb.example", data: { born: "1985-02-03T10:00:00Z", mix: "one" } }, q));
    const res = await srv.api("/contacts/fields", { key: q.secretKey });
    const custom = Object.fromEntries(res.body.custom.map((f: any) => [f.name, f]));
    expect(custom.born).toMatchObject({ type: "date", coverage: 100 });
    expect(custom.mix).toMatchObject({ type: "mixed", coverage: 100 });
    expect(custom.prefs).toMatchObject({ type: "object", coverage: 50 });
  });

  test("GET /contacts/fields/:field/values: { field, values: [{ value, count }] }", async () => {
    const res = await srv.api("/contacts/fields/plan/values", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.field).toBe("plan");
    const counts = Object.fromEntries(res.body.values.map((v: any) => [v.value, v.count]));
    expect(counts).toEqual({ pro: 2, free: 1 });
  });

  test("GET /contacts/fields/:field/usage answers (segments, campaigns, workflows)", async () => {
    const res = await srv.api("/contacts/fields/plan/usage", { key: p.secretKey });
    expect(res.status).toBe(200);
    const json = JSON.stringify(res.body);
    for (const k of ["segments", "campaigns", "workflows"]) expect(json).toContain(k);
  });

  test("DELETE /contacts/fields/:field removes the key from every contact of the project only", async () => {
    const other = await newProject(srv.api, acc, "Fields other");
    const keep = (await upsert({ email: "keep@fields-bb.example", data: { seats: 9 } }, other)).body;
    expectOk(await srv.api("/contacts/fields/seats", { method: "DELETE", key: p.secretKey }));
    const fields = await srv.api("/contacts/fields", { key: p.secretKey });
    expect(fields.body.custom.map((f: any) => f.name)).not.toContain("seats");
    expect((await get(keep.id, other)).body.data).toEqual({ seats: 9 });
  });
});

describe("CSV import", () => {
  const importCsv = (csv: string, who: Account = acc) => {
    const form = new FormData();
    form.append("file", new Blob([csv], { type: "text/csv" }), "contacts.csv");
    return srv.api("/contacts/import", { method: "POST", key: who.secretKey, raw: form });
  };

  test("queued (202 { jobId }); valid rows imported, invalid rows reported; other columns become string data", async () => {
    const p = await newProject(srv.api, acc, "Import");
    expectOk(await upsert({ email: "existing@import-bb.example", data: { plan: "old" } }, p));
    const csv = [
      "email,plan,seats,subscribed",
      "new1@import-bb.example,pro,3,true",
      "existing@import-bb.example,team,10,no",
      "not-an-email,x,1,yes",
      "new2@import-bb.example,free,,1",
    ].join("\n");
    const res = await importCsv(csv, p);
    expect(res.status).toBe(202);
    expect(typeof res.body.jobId).toBe("string");
    const job = await waitJob(`/contacts/import/${res.body.jobId}`, p);
    expect(job).toMatchObject({ id: res.body.jobId, state: "completed", progress: 100 });
    expect(typeof job.type).toBe("string");
    expect(job.result).toMatchObject({ total: 4, succeeded: 3, created: 2, updated: 1, failed: 1 });
    expect(job.result.errors.length).toBe(1);
    expect(job.result.errors[0]).toMatchObject({ email: "not-an-email" });
    expect(typeof job.result.errors[0].row).toBe("number");
    expect(typeof job.result.errors[0].error).toBe("string");

    const look = await srv.api("/contacts/lookup", { key: p.secretKey, body: { emails: ["new1@import-bb.example", "existing@import-bb.example", "new2@import-bb.example"] } });
    const byEmail = Object.fromEntries(look.body.found.map((c: any) => [c.email, c]));
    expect(byEmail["new1@import-bb.example"].subscribed).toBe(true);
    expect(byEmail["existing@import-bb.example"].subscribed).toBe(false);
    expect(byEmail["new2@import-bb.example"].subscribed).toBe(true);
    const existing = (await get(byEmail["existing@import-bb.example"].id, p)).body;
    expect(existing.data.plan).toBe("team");
    expect(existing.data.seats).toBe("10");
  });

  test("a CSV without an email column is refused at upload: 422 VALIDATION_ERROR (README \"Contacts\"), no job", async () => {
    const before = (await srv.api("/contacts?limit=1", { key: acc.secretKey })).body.total;
    const err = expectEnvelope(await importCsv("name,plan\nAnn,pro\n"), 422, "VALIDATION_ERROR");
    // The field error names the missing column.
    expect(err.errors!.some((e) => e.message.includes("email"))).toBe(true);
    expect((await srv.api("/contacts?limit=1", { key: acc.secretKey })).body.total).toBe(before);
  });

  test("a file over 5 MB is refused (413 PAYLOAD_TOO_LARGE)", async () => {
    const row = "someone@import-bb.example,".padEnd(100, "x") + "\n";
    const big = "email,filler\n" + row.repeat(Math.ceil((5 * 1024 * 1024 + 10) / row.length));
    expectEnvelope(await importCsv(big), 413, "PAYLOAD_TOO_LARGE");
  });

  test("an unknown import job is 404", async () => {
    expectEnvelope(await srv.api(`/contacts/import/${NO_SUCH_ID}`, { key: acc.secretKey }), 404);
  });
});

describe("bulk subscribe / unsubscribe / delete", () => {
  test("queued with 202 { jobId }; the job status has the documented shape; the change is applied", async () => {
    const p = await newProject(srv.api, acc, "Bulk");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await upsert({ email: `b${i}@bulk-bb.example` }, p)).body.id);
    const un = await srv.api("/contacts/bulk-unsubscribe", { key: p.secretKey, body: { contactIds: ids } });
    expect(un.status).toBe(202);
    const job = await waitJob(`/contacts/bulk/${un.body.jobId}`, p);
    expect(job).toMatchObject({ id: un.body.jobId, state: "completed", progress: 100 });
    for (const id of ids) expect((await get(id, p)).body.subscribed).toBe(false);

    const sub = await srv.api("/contacts/bulk-subscribe", { key: p.secretKey, body: { contactIds: [ids[0]] } });
    expect(sub.status).toBe(202);
    await waitJob(`/contacts/bulk/${sub.body.jobId}`, p);
    expect((await get(ids[0]!, p)).body.subscribed).toBe(true);

    const del = await srv.api("/contacts/bulk-delete", { key: p.secretKey, body: { contactIds: ids.slice(1) } });
    expect(del.status).toBe(202);
    await waitJob(`/contacts/bulk/${del.body.jobId}`, p);
    expectEnvelope(await get(ids[1]!, p), 404);
    expect((await get(ids[0]!, p)).status).toBe(200);
  });

  test("1 to 1000 contact ids: 0 or 1001 is 422", async () => {
    for (const path of ["/contacts/bulk-subscribe", "/contacts/bulk-unsubscribe", "/contacts/bulk-delete"]) {
      expectValidation(await srv.api(path, { key: acc.secretKey, body: { contactIds: [] } }), "contactIds");
      const many = Array.from({ length: 1001 }, () => NO_SUCH_ID);
      expectValidation(await srv.api(path, { key: acc.secretKey, body: { contactIds: many } }), "contactIds");
    }
  });

  test("another project's contact ids are not touched", async () => {
    const other = await newProject(srv.api, acc, "Bulk other");
    const c = (await upsert({ email: uniq() })).body;
    const res = await srv.api("/contacts/bulk-delete", { key: other.secretKey, body: { contactIds: [c.id] } });
    expect(res.status).toBe(202);
    await waitJob(`/contacts/bulk/${res.body.jobId}`, other);
    expect((await get(c.id)).status).toBe(200);
  });

  test("an unknown bulk job is 404", async () => {
    expectEnvelope(await srv.api(`/contacts/bulk/${NO_SUCH_ID}`, { key: acc.secretKey }), 404);
  });
});

// Black-box: templates (CRUD, duplicate, usage, offset list) and the sender rule on create/update.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { expectBare400, expectEnvelope, expectOffsetPage, expectOk, expectValidation, newProject, NO_SUCH_ID } from "./support";

let srv: TestServer;
let dns: TestDns;
let acc: Account;
const FROM = "hello@tpl.bb.example";
const base = { name: "Welcome", subject: "Welcome {{firstName}}", body: "<p>Hi {{firstName}}</p>", from: FROM };
const TEMPLATE_KEYS = ["body", "createdAt", "description", "from", "fromName", "id", "name", "projectId", "replyTo", "subject", "type", "updatedAt"];

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server] } });
  acc = await createAccount(srv.api, "BB templates");
  await addVerifiedDomain(srv.api, dns, acc, "tpl.bb.example");
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

const create = (body: unknown, who: Account = acc) => srv.api("/templates", { key: who.secretKey, body });
const get = (id: string, who: Account = acc) => srv.api(`/templates/${id}`, { key: who.secretKey });
const patch = (id: string, body: unknown) => srv.api(`/templates/${id}`, { method: "PATCH", key: acc.secretKey, body });

describe("POST /templates", () => {
  test("creates with every field; the resource comes back directly (no wrapper) with all Template fields", async () => {
    const createdFrom = srv.clock.now();
    const res = await create({ ...base, description: "internal", fromName: "The Team", replyTo: "support@elsewhere.example", type: "TRANSACTIONAL" });
    expect(res.status).toBe(201); // docs/api.md "Conventions": creating resources answers 201
    expect(res.body.success).toBeUndefined();
    for (const k of TEMPLATE_KEYS) expect(res.body).toHaveProperty(k);
    expect(res.body).toMatchObject({
      ...base,
      description: "internal",
      fromName: "The Team",
      replyTo: "support@elsewhere.example",
      type: "TRANSACTIONAL",
      projectId: acc.projectId,
    });
    expect(typeof res.body.id).toBe("string");
    expectTimeBetween(res.body.createdAt, createdFrom, srv.clock.now());
    expect(res.body.updatedAt).toBe(res.body.createdAt);
    const got = await get(res.body.id);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  test("type defaults to MARKETING; every type is accepted; an unknown type is 422", async () => {
    expect((await create(base)).body.type).toBe("MARKETING");
    for (const type of ["TRANSACTIONAL", "MARKETING", "HEADLESS"]) expect((await create({ ...base, type })).body.type).toBe(type);
    expectValidation(await create({ ...base, type: "NEWSLETTER" }), "type");
  });

  test("missing from is 400 with a bare { error } body", async () => {
    const { from: _, ...noFrom } = base;
    expectBare400(await create(noFrom));
  });

  test("a missing from is a bare 400 even when other fields are missing too; a null or empty from as well", async () => {
    expectBare400(await create({ name: "x" }));
    expectBare400(await create({ ...base, from: null }));
    expectBare400(await create({ ...base, from: "" }));
  });

  test("name, subject and body are required: 422 VALIDATION_ERROR naming the field", async () => {
    for (const field of ["name", "subject", "body"]) {
      const b: Record<string, unknown> = { ...base };
      delete b[field];
      expectValidation(await create(b), field);
    }
  });

  test("from, replyTo must be email addresses (422 invalid_string)", async () => {
    const e1 = expectValidation(await create({ ...base, from: "not an email" }), "from");
    expect(e1.find((e) => e.field === "from")!.code).toBe("invalid_string");
    expectValidation(await create({ ...base, replyTo: "nope" }), "replyTo");
  });

  test("an unverified sender domain is 403 with code INTERNAL_SERVER_ERROR and a message naming the domain; nothing is created", async () => {
    const before = (await srv.api("/templates", { key: acc.secretKey })).body.total;
    const res = await create({ ...base, from: "a@unverified.bb.example" });
    const err = expectEnvelope(res, 403, "INTERNAL_SERVER_ERROR");
    expect(err.message).toContain("unverified.bb.example");
    expect((await srv.api("/templates", { key: acc.secretKey })).body.total).toBe(before);
  });

  test("a pending (added but not verified) domain does not count", async () => {
    expectOk(await srv.api("/domains", { key: acc.secretKey, body: { projectId: acc.projectId, domain: "pending-tpl.bb.example" } }));
    expectEnvelope(await create({ ...base, from: "a@pending-tpl.bb.example" }), 403, "INTERNAL_SERVER_ERROR");
  });

  test("a dashboard session with X-Project-Id can create", async () => {
    const res = await srv.api("/templates", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId }, body: base });
    expectOk(res);
    expect(res.body.projectId).toBe(acc.projectId);
  });

  test("a non-object body is 422 VALIDATION_ERROR (decisions.md \"Errors\": body validation), never 500", async () => {
    for (const body of [[], "string", 42]) expectEnvelope(await create(body), 422, "VALIDATION_ERROR");
  });
});

describe("GET/PATCH/DELETE /templates/:id", () => {
  test("PATCH updates the given fields only and moves updatedAt", async () => {
    const t = (await create({ ...base, description: "keep me" })).body;
    srv.clock.advance(1000);
    const res = await patch(t.id, { name: "Renamed", type: "HEADLESS" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ...base, name: "Renamed", type: "HEADLESS", description: "keep me", id: t.id });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(t.updatedAt));
    expect(res.body.createdAt).toBe(t.createdAt);
    expect((await get(t.id)).body.name).toBe("Renamed");
  });

  test("PATCH to a sender on an unverified domain is 403 INTERNAL_SERVER_ERROR and changes nothing", async () => {
    const t = (await create(base)).body;
    expectEnvelope(await patch(t.id, { from: "x@nope.bb.example", name: "should not stick" }), 403, "INTERNAL_SERVER_ERROR");
    expect((await get(t.id)).body).toMatchObject({ from: FROM, name: base.name });
  });

  test("PATCH with an invalid field is 422 and changes nothing", async () => {
    const t = (await create(base)).body;
    expectValidation(await patch(t.id, { type: "BOGUS" }), "type");
    expectValidation(await patch(t.id, { replyTo: "not-an-email" }), "replyTo");
    expect((await get(t.id)).body.type).toBe("MARKETING");
  });

  test("PATCH/GET/DELETE of an unknown id: 404", async () => {
    expectEnvelope(await patch(NO_SUCH_ID, { name: "x" }), 404, "NOT_FOUND");
    expectEnvelope(await get(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/templates/${NO_SUCH_ID}`, { method: "DELETE", key: acc.secretKey }), 404, "NOT_FOUND");
  });

  test("DELETE removes it: GET is 404 afterwards, a second DELETE is 404", async () => {
    const t = (await create(base)).body;
    expectOk(await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey }));
    expectEnvelope(await get(t.id), 404);
    expectEnvelope(await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey }), 404);
  });
});

describe("POST /templates/:id/duplicate and GET /templates/:id/usage", () => {
  test("duplicate returns the new template id; the copy has the same content and the original is unchanged", async () => {
    const t = (await create({ ...base, name: "Original", type: "HEADLESS" })).body;
    const res = await srv.api(`/templates/${t.id}/duplicate`, { method: "POST", key: acc.secretKey });
    expectOk(res);
    const newId = typeof res.body === "string" ? res.body : (res.body.id ?? res.body.data?.id);
    expect(typeof newId).toBe("string");
    expect(newId).not.toBe(t.id);
    const copy = (await get(newId)).body;
    expect(copy).toMatchObject({ subject: base.subject, body: base.body, from: FROM, type: "HEADLESS", projectId: acc.projectId });
    expect((await get(t.id)).body).toEqual(t);
  });

  test("usage lists campaigns and workflow steps that reference it (none yet)", async () => {
    const t = (await create(base)).body;
    const res = await srv.api(`/templates/${t.id}/usage`, { key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.campaigns).toEqual([]);
    expect(res.body.workflows).toEqual([]);
  });

  test("duplicate and usage of an unknown id: 404", async () => {
    expectEnvelope(await srv.api(`/templates/${NO_SUCH_ID}/duplicate`, { method: "POST", key: acc.secretKey }), 404);
    expectEnvelope(await srv.api(`/templates/${NO_SUCH_ID}/usage`, { key: acc.secretKey }), 404);
  });
});

describe("GET /templates (offset list)", () => {
  let p: Account;
  const names = ["Alpha welcome", "beta receipt", "Gamma digest", "delta reset", "Epsilon promo"];
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "BB list");
    await addVerifiedDomain(srv.api, dns, p, "list.bb.example");
    const types = ["MARKETING", "TRANSACTIONAL", "MARKETING", "TRANSACTIONAL", "HEADLESS"];
    for (let i = 0; i < names.length; i++) {
      srv.clock.advance(1000);
      const res = await create(
        {
          name: names[i],
          subject: i === 2 ? "Your WEEKLY news" : `Subject ${i}`,
          body: "<p>x</p>",
          from: "a@list.bb.example",
          type: types[i],
          ...(i === 3 ? { description: "Password RESET flow" } : {}),
        },
        p,
      );
      expectOk(res);
    }
  });
  const q = (qs: string) => srv.api(`/templates${qs}`, { key: p.secretKey });

  test("defaults: page 1, pageSize 20, newest first, { data, page, pageSize, total, totalPages }", async () => {
    const res = await q("");
    expectOffsetPage(res, 1, 20, 5);
    expect(res.body.data.map((t: any) => t.name)).toEqual([...names].reverse());
    for (const k of TEMPLATE_KEYS) expect(res.body.data[0]).toHaveProperty(k);
  });

  test("page and pageSize", async () => {
    const p1 = await q("?page=1&pageSize=2");
    expectOffsetPage(p1, 1, 2, 5);
    expect(p1.body.data.map((t: any) => t.name)).toEqual(["Epsilon promo", "delta reset"]);
    const p3 = await q("?page=3&pageSize=2");
    expectOffsetPage(p3, 3, 2, 5);
    expect(p3.body.data.map((t: any) => t.name)).toEqual(["Alpha welcome"]);
    const past = await q("?page=9&pageSize=2");
    expectOffsetPage(past, 9, 2, 5);
    expect(past.body.data).toEqual([]);
  });

  test("page and pageSize below 1 are refused (400)", async () => {
    expectEnvelope(await q("?page=0"), 400);
    expectEnvelope(await q("?page=-1"), 400);
    expectEnvelope(await q("?pageSize=0"), 400);
  });

  test("pageSize above 100 is honoured for templates (only segment members are capped at 100)", async () => {
    const res = await q("?pageSize=150");
    expectOffsetPage(res, 1, 150, 5);
  });

  test("type filter", async () => {
    const res = await q("?type=TRANSACTIONAL");
    expectOffsetPage(res, 1, 20, 2);
    expect(res.body.data.map((t: any) => t.name).sort()).toEqual(["beta receipt", "delta reset"]);
    expectOffsetPage(await q("?type=HEADLESS"), 1, 20, 1);
  });

  test("search is case-insensitive over name, description and subject", async () => {
    const byName = await q("?search=ALPHA");
    expectOffsetPage(byName, 1, 20, 1);
    expect(byName.body.data[0].name).toBe("Alpha welcome");
    const bySubject = await q("?search=weekly");
    expect(bySubject.body.data.map((t: any) => t.name)).toEqual(["Gamma digest"]);
    const byDescription = await q("?search=password%20reset");
    expect(byDescription.body.data.map((t: any) => t.name)).toEqual(["delta reset"]);
    expectOffsetPage(await q("?search=zzz-nothing"), 1, 20, 0);
    expect((await q("?search=zzz-nothing")).body.totalPages).toBe(0);
  });

  test("search and type combine; total counts the filtered rows", async () => {
    const res = await q("?type=MARKETING&search=a");
    expect(res.body.total).toBe(res.body.data.length);
    for (const t of res.body.data) expect(t.type).toBe("MARKETING");
  });

  test("sort=name (case-insensitive) with dir=asc and desc; sort=createdAt dir=asc", async () => {
    const asc = await q("?sort=name&dir=asc");
    expect(asc.body.data.map((t: any) => t.name)).toEqual(["Alpha welcome", "beta receipt", "delta reset", "Epsilon promo", "Gamma digest"]);
    const desc = await q("?sort=name&dir=desc");
    expect(desc.body.data.map((t: any) => t.name)).toEqual(["Gamma digest", "Epsilon promo", "delta reset", "beta receipt", "Alpha welcome"]);
    const oldest = await q("?sort=createdAt&dir=asc");
    expect(oldest.body.data.map((t: any) => t.name)).toEqual(names);
  });

  test("sort=updatedAt follows the last change", async () => {
    const all = (await q("?sort=createdAt&dir=asc")).body.data;
    srv.clock.advance(1000);
    expect((await srv.api(`/templates/${all[0].id}`, { method: "PATCH", key: p.secretKey, body: { subject: "changed" } })).status).toBe(200);
    const res = await q("?sort=updatedAt&dir=desc");
    expect(res.body.data[0].id).toBe(all[0].id);
  });

  test("an unknown sort or dir falls back to the default (createdAt desc)", async () => {
    const res = await q("?sort=bogus&dir=sideways");
    expect(res.status).toBe(200);
    expect(res.body.data.map((t: any) => t.name)).toEqual([...names].reverse());
  });

  test("only this project's templates are listed", async () => {
    const other = await newProject(srv.api, acc, "Other list");
    expectOffsetPage(await srv.api("/templates", { key: other.secretKey }), 1, 20, 0);
  });
});

describe("project reset", () => {
  test("POST /users/@me/projects/:id/reset wipes templates; the keys keep working", async () => {
    const p = await newProject(srv.api, acc, "Reset me");
    await addVerifiedDomain(srv.api, dns, p, "reset.bb.example");
    expectOk(await create({ ...base, from: "a@reset.bb.example" }, p));
    expectOk(await srv.api(`/users/@me/projects/${p.projectId}/reset`, { method: "POST", cookie: p.cookie }));
    expectOffsetPage(await srv.api("/templates", { key: p.secretKey }), 1, 20, 0);
  });
});

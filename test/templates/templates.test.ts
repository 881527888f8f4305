import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { getTemplate, viewTemplate } from "../../src/modules/templates";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let dns: TestDns;
let acc: Account;
let other: Account;

const base = { name: "Welcome", subject: "Welcome {{ firstName ?? \"there\" }}", body: "<p>Hi {{firstName}}</p>", from: "hello@tpl.example" };

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server] } });
  acc = await createAccount(srv.api, "Templates");
  other = await createAccount(srv.api, "Other");
  await addVerifiedDomain(srv.api, dns, acc, "tpl.example");
  await addVerifiedDomain(srv.api, dns, other, "other-tpl.example");
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

const create = (body: Record<string, unknown>, who: Account = acc) => srv.api("/templates", { key: who.secretKey, body });
const patch = (id: string, body: Record<string, unknown>) => srv.api(`/templates/${id}`, { method: "PATCH", key: acc.secretKey, body });

describe("create", () => {
  test("201 with the template; type defaults to MARKETING", async () => {
    const res = await create({ ...base, description: "internal note", fromName: "Tpl Team", replyTo: "support@elsewhere.example" });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      ...base,
      description: "internal note",
      fromName: "Tpl Team",
      replyTo: "support@elsewhere.example",
      type: "MARKETING",
      projectId: acc.projectId,
    });
    expect(Date.parse(res.body.createdAt)).toBeGreaterThan(0);
    const got = await srv.api(`/templates/${res.body.id}`, { key: acc.secretKey });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  test("optional fields come back as null; every type is accepted", async () => {
    for (const type of ["TRANSACTIONAL", "MARKETING", "HEADLESS"]) {
      const res = await create({ ...base, type });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ type, description: null, fromName: null, replyTo: null });
    }
  });

  test("a missing from is a bare 400 { error }", async () => {
    for (const body of [{ name: "x", subject: "s", body: "b" }, { ...base, from: undefined }, { ...base, from: "" }, { ...base, from: null }, { name: "only" }]) {
      const res = await create(body);
      expect(res.status).toBe(400);
      expect(Object.keys(res.body)).toEqual(["error"]);
      expect(res.body.error).toContain("from");
    }
  });

  test("a sender whose domain is not verified for the project is 403 naming the domain", async () => {
    for (const from of ["hello@unverified.example", "hello@sub.tpl.example", "hello@other-tpl.example"]) {
      const res = await create({ ...base, from });
      expect(res.status).toBe(403);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe("INTERNAL_SERVER_ERROR");
      expect(res.body.error.statusCode).toBe(403);
      expect(res.body.error.message).toContain(from.split("@")[1]!);
    }
    // The From domain is compared case-insensitively.
    expect((await create({ ...base, from: "Hello@TPL.Example" })).status).toBe(201);
  });

  test("other invalid fields are 422 VALIDATION_ERROR naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, name: undefined }, "name"],
      [{ ...base, name: "" }, "name"],
      [{ ...base, subject: undefined }, "subject"],
      [{ ...base, subject: "Hello\r\nBcc: x@y.example" }, "subject"],
      [{ ...base, subject: "x".repeat(999) }, "subject"],
      [{ ...base, body: "" }, "body"],
      [{ ...base, from: "not-an-email" }, "from"],
      [{ ...base, replyTo: "nope" }, "replyTo"],
      [{ ...base, type: "NEWSLETTER" }, "type"],
      [{ ...base, fromName: "Evil\nBcc: x" }, "fromName"],
    ];
    for (const [body, field] of cases) {
      const res = await create(body);
      expect(res.status, field).toBe(422);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
      expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  test("a template syntax error is 422 with its position", async () => {
    const res = await create({ ...base, body: "<p>Hello</p>\n<p>{{ firstName </p>" });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("VALIDATION_ERROR");
    expect(res.body.error.message).toContain("line 2, column 4");
    expect(res.body.error.errors[0]).toMatchObject({ field: "body", code: "invalid_template" });
    expect(res.body.error.errors[0].message).toContain("position 16");
    expect(res.body.error.details.body).toEqual({ position: 16, line: 2, column: 4, reason: expect.any(String) });

    const subj = await create({ ...base, subject: "Hi {{ name" });
    expect(subj.status).toBe(422);
    expect(subj.body.error.errors[0].field).toBe("subject");
  });

  test("the public key and a missing key are 401, whatever the body", async () => {
    expect((await srv.api("/templates", { key: acc.publicKey, body: base })).status).toBe(401);
    expect((await srv.api("/templates", { key: acc.publicKey, body: {} })).status).toBe(401);
    expect((await srv.api("/templates", { body: {} })).status).toBe(401);
  });
});

describe("get, patch, delete", () => {
  test("unknown ids and other projects' templates are 404", async () => {
    const mine = (await create(base)).body;
    expect((await srv.api("/templates/01900000-0000-7000-8000-000000000000", { key: acc.secretKey })).status).toBe(404);
    expect((await srv.api(`/templates/${mine.id}`, { key: other.secretKey })).status).toBe(404);
    expect((await srv.api(`/templates/${mine.id}`, { method: "PATCH", key: other.secretKey, body: { name: "x" } })).status).toBe(404);
    expect((await srv.api(`/templates/${mine.id}`, { method: "DELETE", key: other.secretKey })).status).toBe(404);
    expect((await srv.api(`/templates/${mine.id}/duplicate`, { method: "POST", key: other.secretKey })).status).toBe(404);
    expect((await srv.api(`/templates/${mine.id}/usage`, { key: other.secretKey })).status).toBe(404);
  });

  test("patch changes only the given fields, null clears optional ones", async () => {
    const t = (await create({ ...base, description: "d", replyTo: "r@x.example", fromName: "N" })).body;
    srv.clock.advance(1000);
    const res = await patch(t.id, { name: "Renamed", type: "TRANSACTIONAL", replyTo: null, description: null });
    expect(res.status).toBe(200);
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(t.updatedAt));
    expect(res.body).toEqual({ ...t, name: "Renamed", type: "TRANSACTIONAL", replyTo: null, description: null, fromName: "N", updatedAt: res.body.updatedAt });
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).body).toEqual(res.body);
    // An empty patch changes nothing.
    expect((await patch(t.id, {})).body).toEqual(res.body);
  });

  test("patch applies the create rules to the fields it changes", async () => {
    const t = (await create(base)).body;
    const unverified = await patch(t.id, { from: "x@unverified.example" });
    expect(unverified.status).toBe(403);
    expect(unverified.body.error.message).toContain("unverified.example");
    const syntax = await patch(t.id, { body: "{{ broken" });
    expect(syntax.status).toBe(422);
    expect(syntax.body.error.errors[0]).toMatchObject({ field: "body", code: "invalid_template" });
    expect((await patch(t.id, { name: "" })).status).toBe(422);
    expect((await patch(t.id, { from: null })).status).toBe(422);
    expect((await patch(t.id, { subject: "a\nb" })).status).toBe(422);
    // Nothing of the refused patches was applied.
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).body).toEqual(t);
    expect((await patch(t.id, { from: "news@tpl.example" })).body.from).toBe("news@tpl.example");
  });

  test("an unchanged from is not re-checked, so a template stays editable after its domain fails", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "fading.example");
    const t = (await create({ ...base, from: "news@fading.example" })).body;
    dns.remove(d.records.find((r) => r.purpose === "dkim")!.name);
    expect((await srv.api(`/domains/${d.id}/verify`, { key: acc.secretKey })).body.status).toBe("FAILED");
    const res = await patch(t.id, { ...base, name: "Still editable", from: "NEWS@fading.example" });
    expect(res.status).toBe(200);
    expect(res.body.name).toBe("Still editable");
    expect((await patch(t.id, { from: "other@fading.example" })).status).toBe(403);
    expect((await create({ ...base, from: "news@fading.example" })).status).toBe(403);
  });

  test("delete removes it", async () => {
    const t = (await create(base)).body;
    const del = await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey });
    expect(del.status).toBe(200);
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).status).toBe(404);
    expect((await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey })).status).toBe(404);
  });
});

describe("duplicate and usage", () => {
  test("duplicate returns the new template (and its id); the original is unchanged", async () => {
    const t = (await create({ ...base, name: "Original", description: "d", type: "HEADLESS" })).body;
    const dup = await srv.api(`/templates/${t.id}/duplicate`, { method: "POST", key: acc.secretKey });
    expect(dup.status).toBe(201);
    expect(dup.body.id).not.toBe(t.id);
    expect(dup.body).toMatchObject({ name: "Original (copy)", description: "d", subject: t.subject, body: t.body, from: t.from, type: "HEADLESS" });
    expect((await srv.api(`/templates/${dup.body.id}`, { key: acc.secretKey })).status).toBe(200);
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).body).toEqual(t);
  });

  test("usage lists campaigns and workflow steps from the modules that reference templates", async () => {
    const t = (await create(base)).body;
    const empty = await srv.api(`/templates/${t.id}/usage`, { key: acc.secretKey });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ campaigns: [], workflows: [] });

    // What the campaigns and workflows modules plug in.
    srv.ctx.contributions.templateUsage.push(async (_c, projectId, templateId) => ({
      campaigns: projectId === acc.projectId && templateId === t.id ? [{ id: "c1", name: "Launch", status: "DRAFT" }] : [],
    }));
    srv.ctx.contributions.templateUsage.push(async (_c, projectId, templateId) => ({
      workflows: projectId === acc.projectId && templateId === t.id ? [{ id: "w1", name: "Onboarding", stepId: "s1" }] : [],
    }));
    const used = await srv.api(`/templates/${t.id}/usage`, { key: acc.secretKey });
    expect(used.body).toEqual({ campaigns: [{ id: "c1", name: "Launch", status: "DRAFT" }], workflows: [{ id: "w1", name: "Onboarding", stepId: "s1" }] });

    // A template a workflow step sends cannot be deleted out from under it.
    const del = await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey });
    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe("INVALID_STATE");
    expect(del.body.error.details.workflows).toHaveLength(1);
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).status).toBe(200);
    srv.ctx.contributions.templateUsage.length = 0;
  });

  test("getTemplate/viewTemplate serve other modules, scoped by project", async () => {
    const t = (await create(base)).body;
    const row = await getTemplate(srv.ctx, acc.projectId, t.id);
    expect(viewTemplate(row)).toEqual(t);
    await expect(getTemplate(srv.ctx, other.projectId, t.id)).rejects.toMatchObject({ status: 404 });
  });
});

describe("list", () => {
  let p: Account;
  const names = ["banana", "Apple", "cherry", "date", "Elderberry"];
  beforeAll(async () => {
    p = await createAccount(srv.api, "Listing");
    await addVerifiedDomain(srv.api, dns, p, "list.example");
    for (const [i, name] of names.entries()) {
      const res = await create(
        {
          name,
          description: i === 3 ? "Seasonal 50%_OFF note" : null,
          subject: i === 2 ? "Your INVOICE is ready" : "Hello",
          body: "<p>x</p>",
          from: "a@list.example",
          type: i % 2 ? "TRANSACTIONAL" : "MARKETING",
        },
        p,
      );
      expect(res.status).toBe(201);
      srv.clock.advance(1000);
    }
  });
  const list = (q = "") => srv.api(`/templates${q}`, { key: p.secretKey });

  test("offset pages: { data, page, pageSize, total, totalPages }, newest first by default", async () => {
    const first = await list("?pageSize=2");
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ page: 1, pageSize: 2, total: 5, totalPages: 3 });
    expect(first.body.data.map((t: { name: string }) => t.name)).toEqual(["Elderberry", "date"]);
    const third = await list("?pageSize=2&page=3");
    expect(third.body.data.map((t: { name: string }) => t.name)).toEqual(["banana"]);
    expect((await list("?page=9")).body).toMatchObject({ data: [], page: 9, total: 5 });
    expect((await list()).body.pageSize).toBe(20);
  });

  test("sort and dir, with unknown values falling back to createdAt desc", async () => {
    const byName = await list("?sort=name&dir=asc");
    expect(byName.body.data.map((t: { name: string }) => t.name)).toEqual(["Apple", "banana", "cherry", "date", "Elderberry"]);
    expect((await list("?sort=name")).body.data[0].name).toBe("Elderberry");
    expect((await list("?sort=createdAt&dir=asc")).body.data[0].name).toBe("banana");
    expect((await list("?sort=bogus&dir=sideways")).body.data.map((t: { name: string }) => t.name)).toEqual([...names].reverse());
    const byUpdated = await list("?sort=updatedAt&dir=asc");
    expect(byUpdated.body.data[0].name).toBe("banana");
  });

  test("type filter; an unknown type is 400", async () => {
    const tx = await list("?type=TRANSACTIONAL");
    expect(tx.body.total).toBe(2);
    expect(tx.body.data.every((t: { type: string }) => t.type === "TRANSACTIONAL")).toBe(true);
    expect((await list("?type=MARKETING")).body.total).toBe(3);
    const bad = await list("?type=SPAM");
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("BAD_REQUEST");
  });

  test("search is case-insensitive over name, description and subject; wildcards are literal", async () => {
    const q = async (s: string) => (await list(`?search=${encodeURIComponent(s)}`)).body.data.map((t: { name: string }) => t.name).sort();
    expect(await q("APPLE")).toEqual(["Apple"]);
    expect(await q("invoice")).toEqual(["cherry"]);
    expect(await q("seasonal")).toEqual(["date"]);
    expect(await q("50%_off")).toEqual(["date"]);
    expect(await q("%")).toEqual(["date"]);
    expect(await q("_")).toEqual(["date"]);
    expect(await q("zzz")).toEqual([]);
    const combined = await list("?search=e&type=TRANSACTIONAL&sort=name&dir=asc");
    expect(combined.body.data.map((t: { name: string }) => t.name)).toEqual(["Apple", "date"]);
    expect(combined.body.total).toBe(2);
  });

  test("bad page parameters are 400; another project's templates never show", async () => {
    expect((await list("?page=0")).status).toBe(400);
    expect((await list("?pageSize=abc")).status).toBe(400);
    const theirs = await srv.api("/templates", { key: other.secretKey });
    expect(theirs.body.data.some((t: { projectId: string }) => t.projectId !== other.projectId)).toBe(false);
  });

  test("setup-state counts templates", async () => {
    const state = await srv.api(`/projects/${p.projectId}/setup-state`, { key: p.secretKey });
    expect(state.body).toMatchObject({ templates: 5, domains: 1, verifiedDomains: 1 });
  });
});

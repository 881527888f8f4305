// Black-box: sender domains (POST /domains, GET /domains/project/:projectId, GET /domains/:id/verify,
// DELETE /domains/:id), DNS verification against a real DNS server, and the sender rule it feeds.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { publishRecords, type DomainView } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "./support";

const HOSTNAME = "mx-out.bb.example";
let srv: TestServer;
let dns: TestDns;
let acc: Account;
/** Another user with their own project (a stranger to `acc`'s project). */
let b: Account;

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server], hostname: HOSTNAME } });
  acc = await createAccount(srv.api, "BB domains");
  b = await createAccount(srv.api, "BB domains, other user");
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

const add = (domain: string, who: Account = acc) => srv.api<DomainView>("/domains", { key: who.secretKey, body: { projectId: who.projectId, domain } });
const verify = (id: string, who: Account = acc) => srv.api<DomainView>(`/domains/${id}/verify`, { key: who.secretKey });
const list = (who: Account = acc) => srv.api<DomainView[]>(`/domains/project/${who.projectId}`, { key: who.secretKey });
const template = (from: string, who: Account = acc) =>
  srv.api("/templates", { key: who.secretKey, body: { name: "t", subject: "s", body: "<p>b</p>", from } });
const rec = (d: DomainView, purpose: string) => d.records.find((r) => r.purpose === purpose)!;

function expectDomainShape(d: any, domain: string, projectId: string) {
  for (const k of ["id", "domain", "projectId", "verified", "status", "records", "createdAt", "updatedAt"]) expect(d).toHaveProperty(k);
  expect(d.domain).toBe(domain);
  expect(d.projectId).toBe(projectId);
  expect(typeof d.verified).toBe("boolean");
  expect(["PENDING", "VERIFIED", "FAILED"]).toContain(d.status);
  expect(d.verified).toBe(d.status === "VERIFIED");
  expect(isIsoDate(d.createdAt)).toBe(true);
  expect(isIsoDate(d.updatedAt)).toBe(true);
  expect(Array.isArray(d.records)).toBe(true);
  for (const r of d.records) {
    for (const k of ["type", "name", "value", "purpose", "required", "status"]) expect(r).toHaveProperty(k);
    expect(["dkim", "spf", "return-path", "dmarc"]).toContain(r.purpose);
    expect(typeof r.required).toBe("boolean");
    expect(typeof r.value).toBe("string");
  }
}

describe("POST /domains", () => {
  test("adds a PENDING domain and returns the DNS records to publish", async () => {
    const res = await add("shape.bb.example");
    expectOk(res);
    const d = res.body;
    expectDomainShape(d, "shape.bb.example", acc.projectId);
    expect(d.status).toBe("PENDING");
    expect(d.verified).toBe(false);

    const purposes = d.records.map((r) => r.purpose).sort();
    expect(purposes).toEqual(["dkim", "dmarc", "return-path", "spf"]);
    const dkim = rec(d, "dkim");
    expect(dkim.type).toBe("TXT");
    expect(dkim.required).toBe(true);
    expect(dkim.name).toMatch(/^[a-z0-9-_]+\._domainkey\.shape\.bb\.example$/i);
    expect(dkim.value).toMatch(/^v=DKIM1;/);
    expect(dkim.value).toMatch(/p=[A-Za-z0-9+/=]{100,}/);
    // Only the DKIM record is required; the others are recommended.
    for (const p of ["spf", "return-path", "dmarc"]) expect(rec(d, p).required).toBe(false);
    // The bounce subdomain's MX points at MAILSVC_HOSTNAME.
    const rp = rec(d, "return-path");
    expect(rp.type).toBe("MX");
    expect(rp.name.endsWith(".shape.bb.example")).toBe(true);
    expect(rp.value.replace(/\.$/, "")).toBe(HOSTNAME);
    expect(rec(d, "spf").type).toBe("TXT");
    expect(rec(d, "spf").value).toMatch(/^v=spf1 /);
    expect(rec(d, "dmarc").name).toBe("_dmarc.shape.bb.example");
    expect(rec(d, "dmarc").value).toMatch(/^v=DMARC1/);
  });

  test("the same domain twice in one project is 409; two domains get different DKIM keys", async () => {
    const first = await add("twice.bb.example");
    expectOk(first);
    expectEnvelope(await add("twice.bb.example"), 409);
    const shape = (await list()).body.find((d) => d.domain === "shape.bb.example")!;
    expect(rec(first.body, "dkim").value).not.toBe(rec(shape, "dkim").value);
  });

  test("missing or invalid domain is 422", async () => {
    expectValidation(await srv.api("/domains", { key: acc.secretKey, body: { projectId: acc.projectId } }), "domain");
    for (const domain of ["", "not a domain", "no-dot", "-bad-.example", "a..b.example", "http://x.example/"]) {
      const res = await add(domain);
      try {
        expectValidation(res, "domain");
      } catch (e) {
        throw new Error(`${JSON.stringify(domain)}: ${(e as Error).message}`);
      }
    }
  });

  test("with the secret key of project A, adding a domain to project B is 404 and nothing is added", async () => {
    const res = await srv.api("/domains", { key: acc.secretKey, body: { projectId: b.projectId, domain: "cross.bb.example" } });
    expectEnvelope(res, 404, "NOT_FOUND");
    expect((await list(b)).body.map((d) => d.domain)).not.toContain("cross.bb.example");
  });

  test("the same domain may be added by two projects; each gets its own key", async () => {
    const x = await add("shared.bb.example");
    const y = await add("shared.bb.example", b);
    expectOk(x);
    expectOk(y);
    expect(rec(x.body, "dkim").value).not.toBe(rec(y.body, "dkim").value);
  });
});

describe("GET /domains/project/:projectId", () => {
  test("a bare array of the project's domains, verified and pending", async () => {
    const p = await newProject(srv.api, acc, "List");
    const pending = (await add("pending.list.bb.example", p)).body;
    const ver = (await add("verified.list.bb.example", p)).body;
    publishRecords(dns, ver);
    expect((await verify(ver.id, p)).body.status).toBe("VERIFIED");
    const res = await list(p);
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body.map((d) => d.domain).sort()).toEqual(["pending.list.bb.example", "verified.list.bb.example"]);
    for (const d of res.body) expectDomainShape(d, d.domain, p.projectId);
    expect(res.body.find((d) => d.id === pending.id)!.status).toBe("PENDING");
    expect(res.body.find((d) => d.id === ver.id)!.verified).toBe(true);
  });

  test("an empty project gives []", async () => {
    const p = await newProject(srv.api, acc, "Empty");
    const res = await list(p);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });
});

describe("GET /domains/:id/verify", () => {
  test("nothing published: still PENDING, not verified", async () => {
    const d = (await add("unpublished.bb.example")).body;
    const res = await verify(d.id);
    expect(res.status).toBe(200);
    expectDomainShape(res.body, "unpublished.bb.example", acc.projectId);
    expect(res.body.verified).toBe(false);
    expect(res.body.status).not.toBe("VERIFIED");
    // The recommended records without the DKIM one do not verify it either.
    publishRecords(dns, d, ["spf", "return-path", "dmarc"]);
    const again = await verify(d.id);
    expect(again.body.verified).toBe(false);
    expect(rec(again.body, "spf").status).toBe("VERIFIED");
  });

  test("the DKIM record alone (the only required one) verifies the domain; its record shows VERIFIED", async () => {
    const d = (await add("dkim-only.bb.example")).body;
    publishRecords(dns, d, ["dkim"]);
    const res = await verify(d.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("VERIFIED");
    expect(res.body.verified).toBe(true);
    expect(rec(res.body, "dkim").status).toBe("VERIFIED");
    expect(rec(res.body, "spf").status).not.toBe("VERIFIED");
    // Then every record published: every record VERIFIED.
    publishRecords(dns, d);
    const all = await verify(d.id);
    expect(all.body.status).toBe("VERIFIED");
    for (const r of all.body.records) expect(r.status).toBe("VERIFIED");
  });

  test("a DKIM record with another key does not verify", async () => {
    const d = (await add("wrongkey.bb.example")).body;
    const other = (await list()).body.find((x) => x.domain === "shape.bb.example")!;
    dns.setLongTxt(rec(d, "dkim").name, rec(other, "dkim").value);
    const res = await verify(d.id);
    expect(res.body.verified).toBe(false);
    expect(res.body.status).not.toBe("VERIFIED");
  });

  test("a verified domain whose DKIM record disappears goes to FAILED at the next check (no cached answer)", async () => {
    const d = (await add("vanish.bb.example")).body;
    publishRecords(dns, d);
    expect((await verify(d.id)).body.status).toBe("VERIFIED");
    expectOk(await template("hello@vanish.bb.example"));
    dns.remove(rec(d, "dkim").name);
    const res = await verify(d.id);
    expect(res.body.status).toBe("FAILED");
    expect(res.body.verified).toBe(false);
    // ... and stops being usable as a sender.
    const t = await template("hello@vanish.bb.example");
    const err = expectEnvelope(t, 403, "INTERNAL_SERVER_ERROR");
    expect(err.message).toContain("vanish.bb.example");
  });

  test("another project's domain id is 404 (and an unknown id is 404)", async () => {
    const d = (await list()).body.find((x) => x.domain === "shape.bb.example")!;
    expectEnvelope(await verify(d.id, b), 404);
    expectEnvelope(await verify(NO_SUCH_ID), 404);
  });
});

describe("background re-verification every MAILSVC_DOMAIN_CHECK_INTERVAL (5 minutes by default)", () => {
  test("a pending domain whose records appear becomes VERIFIED without calling verify", async () => {
    const d = (await add("bg-up.bb.example")).body;
    publishRecords(dns, d);
    srv.clock.advance(5 * 60_000 + 1000);
    await srv.drainJobs();
    const got = (await list()).body.find((x) => x.id === d.id)!;
    expect(got.status).toBe("VERIFIED");
  });

  test("a verified domain whose DKIM record disappears becomes FAILED without calling verify", async () => {
    const d = (await add("bg-down.bb.example")).body;
    publishRecords(dns, d);
    expect((await verify(d.id)).body.status).toBe("VERIFIED");
    dns.remove(rec(d, "dkim").name);
    srv.clock.advance(5 * 60_000 + 1000);
    await srv.drainJobs();
    const got = (await list()).body.find((x) => x.id === d.id)!;
    expect(got.status).toBe("FAILED");
    expectEnvelope(await template("x@bg-down.bb.example"), 403, "INTERNAL_SERVER_ERROR");
  });
});

describe("sender rule", () => {
  test("a subdomain of a verified domain is not verified by it (403 INTERNAL_SERVER_ERROR naming it)", async () => {
    const d = (await add("parent.bb.example")).body;
    publishRecords(dns, d);
    expect((await verify(d.id)).body.verified).toBe(true);
    expectOk(await template("a@parent.bb.example"));
    const err = expectEnvelope(await template("a@news.parent.bb.example"), 403, "INTERNAL_SERVER_ERROR");
    expect(err.message).toContain("news.parent.bb.example");
    // The match is case-insensitive.
    expectOk(await template("Someone@PARENT.bb.example"));
  });

  test("a domain verified by another project does not cover this one", async () => {
    const d = (await add("theirs.bb.example", b)).body;
    publishRecords(dns, d);
    expect((await verify(d.id, b)).body.verified).toBe(true);
    expectOk(await template("x@theirs.bb.example", b));
    expectEnvelope(await template("x@theirs.bb.example"), 403, "INTERNAL_SERVER_ERROR");
  });
});

describe("DELETE /domains/:id", () => {
  test("removes the domain: gone from the list, verify is 404, and it no longer covers senders", async () => {
    const d = (await add("gone.bb.example")).body;
    publishRecords(dns, d);
    await verify(d.id);
    expectOk(await template("a@gone.bb.example"));
    const res = await srv.api(`/domains/${d.id}`, { method: "DELETE", key: acc.secretKey });
    expectOk(res);
    expect((await list()).body.find((x) => x.id === d.id)).toBeUndefined();
    expectEnvelope(await verify(d.id), 404);
    expectEnvelope(await srv.api(`/domains/${d.id}`, { method: "DELETE", key: acc.secretKey }), 404);
    expectEnvelope(await template("a@gone.bb.example"), 403, "INTERNAL_SERVER_ERROR");
  });

  test("it can then be added again (new id, new key, PENDING)", async () => {
    const again = await add("gone.bb.example");
    expectOk(again);
    expect(again.body.status).toBe("PENDING");
    expect((await list()).body.filter((x) => x.domain === "gone.bb.example").length).toBe(1);
  });
});

describe("domains with a member's dashboard session", () => {
  test("a member's session can add, list, verify and delete; a non-member's session is refused", async () => {
    const p = await newProject(srv.api, acc, "Session domains");
    const created = await srv.api<DomainView>("/domains", { cookie: p.cookie, body: { projectId: p.projectId, domain: "session.bb.example" } });
    expectOk(created);
    expect(created.body.projectId).toBe(p.projectId);
    const l = await srv.api<DomainView[]>(`/domains/project/${p.projectId}`, { cookie: p.cookie });
    expect(l.status).toBe(200);
    expect(l.body.map((d) => d.domain)).toEqual(["session.bb.example"]);
    publishRecords(dns, created.body);
    expect((await srv.api<DomainView>(`/domains/${created.body.id}/verify`, { cookie: p.cookie })).body.status).toBe("VERIFIED");

    const stranger = b;
    for (const res of [
      await srv.api(`/domains/project/${p.projectId}`, { cookie: stranger.cookie }),
      await srv.api(`/domains/${created.body.id}/verify`, { cookie: stranger.cookie }),
      await srv.api(`/domains/${created.body.id}`, { method: "DELETE", cookie: stranger.cookie }),
      await srv.api("/domains", { cookie: stranger.cookie, body: { projectId: p.projectId, domain: "evil.bb.example" } }),
    ]) {
      expectEnvelope(res, 404, "NOT_FOUND");
    }
    expect((await srv.api(`/domains/project/${p.projectId}`, { cookie: p.cookie })).body.length).toBe(1);
    expectOk(await srv.api(`/domains/${created.body.id}`, { method: "DELETE", cookie: p.cookie }));
  });
});

describe("MAILSVC_DOMAIN_CHECK_INTERVAL", () => {
  test("a 1-minute interval re-checks after a minute, not before", async () => {
    const fast = await startServer({ config: { dnsServers: [dns.server], domainCheckIntervalMs: 60_000 } });
    try {
      const p = await createAccount(fast.api, "Fast checks");
      const d = (await fast.api<DomainView>("/domains", { key: p.secretKey, body: { projectId: p.projectId, domain: "fast.bb.example" } })).body;
      publishRecords(dns, d);
      const status = async () => (await fast.api<DomainView[]>(`/domains/project/${p.projectId}`, { key: p.secretKey })).body[0]!.status;
      fast.clock.advance(30_000);
      await fast.drainJobs();
      expect(await status()).toBe("PENDING");
      fast.clock.advance(31_000);
      await fast.drainJobs();
      expect(await status()).toBe("VERIFIED");
    } finally {
      await fast.close();
    }
  });
});

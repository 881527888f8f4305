// Black-box: authentication rules and the error envelope, on the secret-key endpoints of templates,
// /v1/verify, emails, domains and the project pages (every route: test/hostile/fuzz.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectEnvelope, expectOk, expectValidation, NO_SUCH_ID, UUID } from "./support";

let srv: TestServer;
let dns: TestDns;
let acc: Account;
/** Another user with their own project. */
let other: Account;
let templateId: string;
let domainId: string;

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server] } });
  acc = await createAccount(srv.api, "BB auth");
  other = await createAccount(srv.api, "BB auth, other user");
  const d = await addVerifiedDomain(srv.api, dns, acc, "bb-auth.example");
  domainId = d.id;
  const t = await srv.api("/templates", {
    key: acc.secretKey,
    body: { name: "T", subject: "S", body: "<p>B</p>", from: "a@bb-auth.example" },
  });
  expectOk(t);
  templateId = t.body.id;
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

/** Secret-key endpoints of each of those areas, with a body that would otherwise be valid where one is needed. */
function secretEndpoints(): { method: string; path: string; body?: unknown }[] {
  const p = acc.projectId;
  return [
    { method: "GET", path: "/templates" },
    { method: "POST", path: "/templates", body: { name: "T", subject: "S", body: "B", from: "a@bb-auth.example" } },
    { method: "GET", path: `/templates/${templateId}` },
    { method: "PATCH", path: `/templates/${templateId}`, body: { name: "Renamed" } },
    { method: "DELETE", path: `/templates/${templateId}` },
    { method: "POST", path: `/templates/${templateId}/duplicate` },
    { method: "GET", path: `/templates/${templateId}/usage` },
    { method: "POST", path: "/v1/verify", body: { email: "someone@bb-auth.example" } },
    { method: "GET", path: "/emails" },
    { method: "GET", path: `/emails/${NO_SUCH_ID}` },
    { method: "POST", path: "/domains", body: { projectId: p, domain: "other-bb.example" } },
    { method: "GET", path: `/domains/project/${p}` },
    { method: "GET", path: `/domains/${domainId}/verify` },
    { method: "DELETE", path: `/domains/${domainId}` },
    { method: "GET", path: `/projects/${p}/members` },
    { method: "POST", path: `/projects/${p}/members`, body: { email: "nobody@example.com" } },
    { method: "GET", path: `/projects/${p}/setup-state` },
    { method: "GET", path: `/projects/${p}/security` },
  ];
}

describe("the public key is refused everywhere but /v1/track", () => {
  test("pk_ on every secret-key endpoint: 401 INVALID_API_KEY in the envelope, nothing done", async () => {
    for (const e of secretEndpoints()) {
      const res = await srv.api(e.path, { method: e.method, key: acc.publicKey, body: e.body });
      try {
        expectEnvelope(res, 401, "INVALID_API_KEY");
      } catch (err) {
        throw new Error(`${e.method} ${e.path}: ${(err as Error).message}`);
      }
    }
    // Nothing was performed: the template and the domain are still there, nothing was added.
    expect((await srv.api(`/templates/${templateId}`, { key: acc.secretKey })).body.name).toBe("T");
    const domains = await srv.api(`/domains/project/${acc.projectId}`, { key: acc.secretKey });
    expect(domains.body.map((d: any) => d.domain)).toEqual(["bb-auth.example"]);
    expect((await srv.api("/templates", { key: acc.secretKey })).body.total).toBe(1);
  });

  test("no Authorization header: 401 in the envelope on every secret-key endpoint", async () => {
    for (const e of secretEndpoints()) {
      const res = await srv.api(e.path, { method: e.method, body: e.body });
      try {
        expectEnvelope(res, 401);
      } catch (err) {
        throw new Error(`${e.method} ${e.path}: ${(err as Error).message}`);
      }
    }
  });

  test("an unknown key, a malformed header and a non-Bearer scheme are 401", async () => {
    const headersList = [
      { authorization: "Bearer sk_this_key_does_not_exist_at_all" },
      { authorization: "Bearer pk_this_key_does_not_exist_at_all" },
      { authorization: `Bearer ${acc.secretKey}x` },
      { authorization: acc.secretKey },
      { authorization: `Basic ${btoa("user:pass")}` },
      { authorization: "Bearer" },
    ];
    for (const headers of headersList) {
      const res = await srv.api("/templates", { headers });
      try {
        expectEnvelope(res, 401);
      } catch (err) {
        throw new Error(`${JSON.stringify(headers)}: ${(err as Error).message}`);
      }
    }
  });

  test("auth comes before validation: a bad body with a pk is still 401, not 422/400", async () => {
    expectEnvelope(await srv.api("/templates", { key: acc.publicKey, body: { name: 1 } }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/templates", { key: acc.publicKey, body: { name: "x", subject: "s", body: "b" } }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/v1/verify", { key: acc.publicKey, body: {} }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/domains", { body: { domain: "" } }), 401);
  });

  test("the secret key works on a secret-key endpoint (200); the default rate limit is 1000 per minute", async () => {
    const res = await srv.api("/templates", { key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit-limit")).toBe("1000");
  });

  test("Bearer is case-insensitive in the scheme name", async () => {
    const res = await srv.api("/templates", { headers: { authorization: `bearer ${acc.secretKey}` } });
    expect(res.status).toBe(200);
  });
});

describe("GET /config", () => {
  test("no authentication; { version, features: { signups, billing, relay, inboundSmtp, tracking } }", async () => {
    const res = await srv.api("/config");
    expect(res.status).toBe(200);
    expect(typeof res.body.version).toBe("string");
    expect(Object.keys(res.body.features).sort()).toEqual(["billing", "inboundSmtp", "relay", "signups", "tracking"]);
    for (const v of Object.values(res.body.features)) expect(typeof v).toBe("boolean");
    expect(res.body.features).toMatchObject({ signups: true, billing: false, relay: false, inboundSmtp: false });
  });

  test("a key, even a public one or a bad one, does not get in the way", async () => {
    expect((await srv.api("/config", { key: acc.publicKey })).status).toBe(200);
    expect((await srv.api("/config", { key: acc.secretKey })).status).toBe(200);
  });
});

describe("error envelope", () => {
  test("unknown route: 404 in the envelope (NOT_FOUND)", async () => {
    expectEnvelope(await srv.api("/no/such/route"), 404, "NOT_FOUND");
    expectEnvelope(await srv.api("/v1/no-such", { key: acc.secretKey, body: {} }), 404, "NOT_FOUND");
  });

  test("unknown resource id: 404 NOT_FOUND in the envelope", async () => {
    expectEnvelope(await srv.api(`/templates/${NO_SUCH_ID}`, { key: acc.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/templates/not-a-uuid`, { key: acc.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/emails/${NO_SUCH_ID}`, { key: acc.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/domains/${NO_SUCH_ID}/verify`, { key: acc.secretKey }), 404, "NOT_FOUND");
  });

  test("malformed JSON is 400 (BAD_REQUEST) in the envelope on every JSON endpoint", async () => {
    const raw = '{"name": "x",';
    for (const path of ["/templates", "/v1/verify", "/domains", `/projects/${acc.projectId}/members`]) {
      const res = await srv.api(path, { method: "POST", key: acc.secretKey, raw, headers: { "content-type": "application/json" } });
      try {
        expectEnvelope(res, 400, "BAD_REQUEST");
      } catch (err) {
        throw new Error(`${path}: ${(err as Error).message}`);
      }
    }
    expectEnvelope(await srv.api(`/templates/${templateId}`, { method: "PATCH", key: acc.secretKey, raw, headers: { "content-type": "application/json" } }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/auth/signup", { method: "POST", raw, headers: { "content-type": "application/json" } }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/auth/login", { method: "POST", raw, headers: { "content-type": "application/json" } }), 400, "BAD_REQUEST");
  });

  test("a body field that fails validation is 422 VALIDATION_ERROR with errors[] { field, message, code }", async () => {
    const errors = expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: { email: "not-an-email" } }), "email");
    expect(errors.find((e) => e.field === "email")!.code).toBe("invalid_string");
    expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: {} }), "email");
    expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: { email: 42 } }), "email");
  });

  test("error.requestId differs per request", async () => {
    const a = expectEnvelope(await srv.api(`/templates/${NO_SUCH_ID}`, { key: acc.secretKey }), 404);
    const b = expectEnvelope(await srv.api(`/templates/${NO_SUCH_ID}`, { key: acc.secretKey }), 404);
    expect(a.requestId).toMatch(UUID);
    expect(a.requestId).not.toBe(b.requestId);
  });

  test("bad query parameters are 400 in the envelope (page=0, pageSize=abc, limit=0)", async () => {
    expectEnvelope(await srv.api("/templates?page=0", { key: acc.secretKey }), 400);
    expectEnvelope(await srv.api("/templates?pageSize=abc", { key: acc.secretKey }), 400);
    expectEnvelope(await srv.api("/emails?limit=0", { key: acc.secretKey }), 400);
    expectEnvelope(await srv.api("/emails?limit=abc", { key: acc.secretKey }), 400);
  });
});

describe("dashboard session on project resource endpoints", () => {
  test("cookie + X-Project-Id of a project the user belongs to works like the secret key", async () => {
    const res = await srv.api("/templates", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId } });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    const em = await srv.api("/emails", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId } });
    expect(em.status).toBe(200);
  });

  test("cookie + X-Project-Id of someone else's project is refused (403)", async () => {
    const res = await srv.api("/templates", { cookie: other.cookie, headers: { "x-project-id": acc.projectId } });
    expectEnvelope(res, 403);
  });

  test("a cookie that is not a valid session is 401", async () => {
    const res = await srv.api("/templates", { cookie: "token=not.a.jwt", headers: { "x-project-id": acc.projectId } });
    expectEnvelope(res, 401);
  });

  test("/v1/verify is a public API path: secret key only (a session is not enough)", async () => {
    const res = await srv.api("/v1/verify", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId }, body: { email: "a@b.example" } });
    expectEnvelope(res, 401);
  });
});

describe("tenants never see each other", () => {
  test("another project's secret key gets 404 for this project's template and domain", async () => {
    expectEnvelope(await srv.api(`/templates/${templateId}`, { key: other.secretKey }), 404);
    expectEnvelope(await srv.api(`/templates/${templateId}`, { method: "PATCH", key: other.secretKey, body: { name: "pwned" } }), 404);
    expectEnvelope(await srv.api(`/templates/${templateId}`, { method: "DELETE", key: other.secretKey }), 404);
    expectEnvelope(await srv.api(`/templates/${templateId}/duplicate`, { method: "POST", key: other.secretKey }), 404);
    expectEnvelope(await srv.api(`/templates/${templateId}/usage`, { key: other.secretKey }), 404);
    expect((await srv.api("/templates", { key: other.secretKey })).body.total).toBe(0);
    expectEnvelope(await srv.api(`/domains/${domainId}/verify`, { key: other.secretKey }), 404);
    expectEnvelope(await srv.api(`/domains/${domainId}`, { method: "DELETE", key: other.secretKey }), 404);
    expectEnvelope(await srv.api(`/domains/project/${acc.projectId}`, { key: other.secretKey }), 404, "NOT_FOUND");
    expect((await srv.api(`/templates/${templateId}`, { key: acc.secretKey })).body.name).toBe("T");
  });
});

describe("keys and sessions do not mix", () => {
  test("an X-Project-Id header next to a secret key is ignored: the key's project is used", async () => {
    const res = await srv.api("/templates", { key: other.secretKey, headers: { "x-project-id": acc.projectId } });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(0);
    expectEnvelope(await srv.api(`/templates/${templateId}`, { key: other.secretKey, headers: { "x-project-id": acc.projectId } }), 404);
  });

  test("dashboard session endpoints refuse API keys with 401", async () => {
    for (const key of [acc.secretKey, acc.publicKey]) {
      expectEnvelope(await srv.api("/users/@me", { key }), 401);
      expectEnvelope(await srv.api("/users/@me/projects", { key }), 401);
      expectEnvelope(await srv.api(`/users/@me/projects/${acc.projectId}/regenerate-keys`, { method: "POST", key }), 401);
    }
  });

  test("a public key on a session endpoint is 401 INVALID_API_KEY", async () => {
    expectEnvelope(await srv.api("/users/@me", { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/users/@me/projects", { key: acc.publicKey }), 401, "INVALID_API_KEY");
  });

  test("malformed JSON without a valid key is 401, not 400; with a valid key it is 400 in the envelope", async () => {
    const raw = '{"name":';
    const headers = { "content-type": "application/json" };
    expectEnvelope(await srv.api("/templates", { method: "POST", raw, headers }), 401);
    expectEnvelope(await srv.api("/templates", { method: "POST", key: acc.publicKey, raw, headers }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/templates", { method: "POST", key: acc.secretKey, raw, headers }), 400, "BAD_REQUEST");
    // Also where the spec's bare { error } applies to a missing field: a broken body is still the envelope.
    expectEnvelope(await srv.api("/contacts", { method: "POST", key: acc.secretKey, raw, headers }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/auth/login", { method: "POST", raw, headers }), 400, "BAD_REQUEST");
  });
});

describe("account e-mail endpoints without MAILSVC_SYSTEM_FROM", () => {
  test("request-password-reset and request-verification say clearly that account email is off (4xx envelope)", async () => {
    // decisions.md names no status, only that "those features say so clearly": a 4xx naming the setting.
    for (const res of [
      await srv.api("/auth/request-password-reset", { body: { email: acc.email } }),
      await srv.api("/auth/request-verification", { method: "POST", cookie: acc.cookie }),
    ]) {
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      const err = expectEnvelope(res, res.status);
      expect(`${err.message} ${err.suggestion ?? ""}`).toContain("MAILSVC_SYSTEM_FROM");
    }
  });

  test("verify-email and reset-password with an unknown token are 400", async () => {
    expectEnvelope(await srv.api("/auth/verify-email", { body: { token: "nope" } }), 400);
    expectEnvelope(await srv.api("/auth/reset-password", { body: { token: "nope", password: "a new password" } }), 400);
  });
});

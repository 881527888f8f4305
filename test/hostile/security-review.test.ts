// Security review regressions: each test is a vulnerability found by attacking the running service
// (role escalation through the project object, sessions that outlived logout and password resets,
// login CSRF, a webhook address check that a trailing dot slipped past).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { cookieOf, expectEnvelope, expectOk } from "../blackbox/support";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

setDefaultTimeout(30_000);

let srv: TestServer;
let owner: Account;
let member: Account;
let outsider: Account;
beforeAll(async () => {
  srv = await startServer();
  owner = await createAccount(srv.api, "Owned");
  member = await createAccount(srv.api, "Member's own");
  outsider = await createAccount(srv.api, "Outsider");
  expectOk(await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie, body: { email: member.email, role: "MEMBER" } }));
});
afterAll(() => srv.close());

const PASSWORD = "correct horse battery";

/** A fresh session of `acc` (login), as `token=...`. */
async function login(acc: Account): Promise<string> {
  const res = await srv.api("/auth/login", { body: { email: acc.email, password: PASSWORD } });
  expect(res.status).toBe(200);
  return cookieOf(res, "token")!.pair;
}

describe("a MEMBER (read-only role) never receives the project's secrets", () => {
  // Before: a MEMBER read the secret key here, and the key acts as ADMIN on /projects/:id/* (invite an ADMIN,
  // remove ADMINs) and keeps working after the MEMBER is removed from the project.
  test("GET /users/@me/projects shows a MEMBER no secret key and no webhook secret; OWNER still sees them", async () => {
    const asMember = (await srv.api("/users/@me/projects", { cookie: member.cookie })).body.find((p: any) => p.id === owner.projectId);
    expect(asMember.role).toBe("MEMBER");
    expect(asMember.public).toBe(owner.publicKey);
    expect(asMember.secret).toBeNull();
    expect(asMember.webhookSecret).toBeNull();
    // Their own project is theirs in full.
    const own = (await srv.api("/users/@me/projects", { cookie: member.cookie })).body.find((p: any) => p.id === member.projectId);
    expect(own.secret).toBe(member.secretKey);
    const asOwner = (await srv.api("/users/@me/projects", { cookie: owner.cookie })).body.find((p: any) => p.id === owner.projectId);
    expect(asOwner.secret).toBe(owner.secretKey);
    expect(asOwner.webhookSecret).toMatch(/^whsec_/);
  });
});

describe("logout and password reset end sessions (the session is a signed token, not just a cookie)", () => {
  test("GET /auth/logout: the logged-out token is refused afterwards; the user's other sessions stay", async () => {
    const acc = await createAccount(srv.api, "Logout");
    const stolen = await login(acc);
    const other = await login(acc);
    expect((await srv.api("/users/@me", { cookie: stolen })).status).toBe(200);
    expectOk(await srv.api("/auth/logout", { cookie: stolen }));
    expectEnvelope(await srv.api("/users/@me", { cookie: stolen }), 401, "UNAUTHORIZED");
    expectEnvelope(await srv.api("/contacts", { cookie: stolen, headers: { "x-project-id": acc.projectId } }), 401, "UNAUTHORIZED");
    expect((await srv.api("/users/@me", { cookie: other })).status).toBe(200);
    // Logging out twice, or without a session, still answers 200.
    expectOk(await srv.api("/auth/logout", { cookie: stolen }));
    expectOk(await srv.api("/auth/logout"));
  });

  test("POST /auth/reset-password ends every session issued before it; a login afterwards works", async () => {
    const acc = await createAccount(srv.api, "Reset");
    const before = await login(acc);
    // A reset token as requestPasswordReset stores it (sha256 of the token; the mail path is tested elsewhere).
    const token = randomBytes(32).toString("base64url");
    const now = srv.clock.now();
    await srv.ctx.db
      .insertInto("account_tokens")
      .values({ token_hash: createHash("sha256").update(token).digest("hex"), user_id: acc.userId, kind: "reset", expires_at: now + 3_600_000, used_at: null, created_at: now })
      .execute();
    srv.clock.advance(1000);
    expectOk(await srv.api("/auth/reset-password", { body: { token, password: "a brand new password" } }));
    expectEnvelope(await srv.api("/users/@me", { cookie: before }), 401, "UNAUTHORIZED");
    expectEnvelope(await srv.api("/users/@me", { cookie: acc.cookie }), 401, "UNAUTHORIZED");
    const res = await srv.api("/auth/login", { body: { email: acc.email, password: "a brand new password" } });
    expect(res.status).toBe(200);
    expect((await srv.api("/users/@me", { cookie: cookieOf(res, "token")!.pair })).status).toBe(200);
  });
});

describe("login CSRF: another site cannot sign the browser in", () => {
  test("POST /auth/login and /auth/signup with a foreign Origin are 403 and set no cookie; our own origin works", async () => {
    const evil = { origin: "https://evil.example" };
    const li = await srv.api("/auth/login", { headers: evil, body: { email: outsider.email, password: PASSWORD } });
    expectEnvelope(li, 403, "FORBIDDEN");
    expect(cookieOf(li, "token")).toBeNull();
    const su = await srv.api("/auth/signup", { headers: evil, body: { email: `csrf${Date.now()}@example.com`, password: PASSWORD } });
    expectEnvelope(su, 403, "FORBIDDEN");
    expect(cookieOf(su, "token")).toBeNull();
    expectEnvelope(await srv.api("/auth/login", { headers: { "sec-fetch-site": "cross-site" }, body: { email: outsider.email, password: PASSWORD } }), 403, "FORBIDDEN");
    const ok = await srv.api("/auth/login", { headers: { origin: srv.url }, body: { email: outsider.email, password: PASSWORD } });
    expect(ok.status).toBe(200);
    expect(cookieOf(ok, "token")).not.toBeNull();
  });
});

describe("outbound webhook addresses", () => {
  test("'localhost.' (the fully qualified form) is refused at creation like 'localhost'", async () => {
    for (const url of ["http://localhost./x", "http://LOCALHOST../x", "http://api.localhost./x"]) {
      const r = await srv.api("/webhook-endpoints", { key: owner.secretKey, body: { url, events: ["*"] } });
      expectEnvelope(r, 422, "VALIDATION_ERROR");
      expect(r.body.error.errors[0]).toMatchObject({ field: "url", code: "refused" });
    }
  });
});

describe("the API docs page (same origin as the dashboard)", () => {
  test("GET /docs cannot be framed (clickjacking) or sniffed", async () => {
    const res = await fetch(srv.url + "/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("password guessing is throttled per address", () => {
  test("10 failed logins in 15 minutes: then 429 with Retry-After, the right password included; the window passes", async () => {
    const victim = await createAccount(srv.api, "Guessed");
    for (let i = 0; i < 10; i++) expectEnvelope(await srv.api("/auth/login", { body: { email: victim.email, password: `wrong ${i}` } }), 401);
    const refused = await srv.api("/auth/login", { body: { email: victim.email.toUpperCase(), password: PASSWORD } });
    expectEnvelope(refused, 429, "RATE_LIMIT_EXCEEDED");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Other addresses are not affected.
    expect((await srv.api("/auth/login", { body: { email: owner.email, password: PASSWORD } })).status).toBe(200);
    srv.clock.advance(15 * 60_000 + 1000);
    expect((await srv.api("/auth/login", { body: { email: victim.email, password: PASSWORD } })).status).toBe(200);
  });
});

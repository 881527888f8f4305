import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";

let srv: TestServer;
let a: Account;
let b: Account;
beforeAll(async () => {
  srv = await startServer();
  a = await createAccount(srv.api, "A");
  b = await createAccount(srv.api, "B");
});
afterAll(() => srv.close());

const membersPath = (acc: Account) => `/projects/${acc.projectId}/members`;

describe("API keys", () => {
  test("no key on a secret-key path is 401 in the envelope", async () => {
    const r = await srv.api(membersPath(a));
    expect(r.status).toBe(401);
    expect(r.body.success).toBe(false);
    expect(r.body.error.statusCode).toBe(401);
    expect(r.body.error.code).toBe("INVALID_API_KEY");
    expect(r.body.error.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof r.body.timestamp).toBe("string");
  });

  test("an error's timestamp is the service clock's time, like every other time the service shows", async () => {
    srv.clock.advance(3 * 86_400_000);
    const from = srv.clock.now();
    const r = await srv.api(membersPath(a));
    expect(r.status).toBe(401);
    expectTimeBetween(r.body.timestamp, from, srv.clock.now());
  });

  test("a bad key is 401", async () => {
    for (const key of ["sk_notarealkeyatall123", "garbage", "pk_0000000000000000"]) {
      const r = await srv.api(membersPath(a), { key });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("INVALID_API_KEY");
    }
    const r = await srv.api(membersPath(a), { headers: { authorization: "Basic abc" } });
    expect(r.status).toBe(401);
  });

  test("a public key on a secret-key path is 401 INVALID_API_KEY", async () => {
    const r = await srv.api(membersPath(a), { key: a.publicKey });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("INVALID_API_KEY");
  });

  test("the secret key works and derives its own project only", async () => {
    const ok = await srv.api(membersPath(a), { key: a.secretKey });
    expect(ok.status).toBe(200);
    expect(ok.body[0].email).toBe(a.email);
    const other = await srv.api(membersPath(b), { key: a.secretKey });
    expect(other.status).toBe(404);
  });

  test("rotated keys stop working at once; the new ones work", async () => {
    const acc = await createAccount(srv.api, "rotating");
    const r = await srv.api(`/users/@me/projects/${acc.projectId}/regenerate-keys`, { method: "POST", cookie: acc.cookie });
    expect(r.status).toBe(200);
    expect(r.body.public).toStartWith("pk_");
    expect(r.body.secret).toStartWith("sk_");
    expect(r.body.secret).not.toBe(acc.secretKey);
    expect((await srv.api(membersPath(acc), { key: acc.secretKey })).status).toBe(401);
    expect((await srv.api(membersPath(acc), { key: r.body.secret })).status).toBe(200);
  });
});

describe("sessions", () => {
  test("signup, login, @me, logout", async () => {
    const email = `s${Date.now()}@example.com`;
    const su = await srv.api("/auth/signup", { body: { email, password: "password123" } });
    expect(su.status).toBe(201);
    expect(su.body).toEqual({ success: true, data: { id: expect.any(String), email } });
    const setCookie = su.headers.get("set-cookie")!;
    expect(setCookie).toContain("HttpOnly");
    expect(setCookie).toContain("SameSite=Lax");

    expect((await srv.api("/auth/signup", { body: { email, password: "password123" } })).status).toBe(409);
    const bad = await srv.api("/auth/login", { body: { email, password: "wrong-password" } });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe("UNAUTHORIZED");

    const li = await srv.api("/auth/login", { body: { email, password: "password123" } });
    expect(li.status).toBe(200);
    const cookie = li.headers.get("set-cookie")!.split(";")[0]!;
    const me = await srv.api("/users/@me", { cookie });
    expect(me.status).toBe(200);
    expect(me.body.email).toBe(email);

    expect((await srv.api("/users/@me")).status).toBe(401);
    expect((await srv.api("/users/@me", { cookie: "token=forged.jwt.value" })).status).toBe(401);

    const lo = await srv.api("/auth/logout", { cookie });
    expect(lo.status).toBe(200);
    expect(lo.headers.get("set-cookie")).toContain("Max-Age=0");
  });

  test("short passwords and bad emails are 422 with field details", async () => {
    const r = await srv.api("/auth/signup", { body: { email: "not-an-email", password: "short" } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    const fields = r.body.error.errors.map((e: any) => e.field).sort();
    expect(fields).toEqual(["email", "password"]);
    const emailErr = r.body.error.errors.find((e: any) => e.field === "email");
    expect(emailErr).toMatchObject({ code: "invalid_string", received: "not-an-email" });
    expect(typeof emailErr.message).toBe("string");
  });

  test("session + X-Project-Id works only for members", async () => {
    const ok = await srv.api(membersPath(a), { cookie: a.cookie, headers: { "x-project-id": a.projectId } });
    expect(ok.status).toBe(200);
    const mine = await srv.api(`/projects/${a.projectId}/setup-state`, { cookie: a.cookie });
    expect(mine.status).toBe(200);
    const notMine = await srv.api(`/projects/${b.projectId}/setup-state`, { cookie: a.cookie });
    expect(notMine.status).toBe(404);
  });

  test("a user of project A cannot touch project B", async () => {
    expect((await srv.api(`/users/@me/projects/${b.projectId}`, { method: "PATCH", cookie: a.cookie, body: { name: "x" } })).status).toBe(404);
    expect((await srv.api(`/users/@me/projects/${b.projectId}`, { method: "DELETE", cookie: a.cookie })).status).toBe(404);
    expect((await srv.api(`/users/@me/projects/${b.projectId}/regenerate-keys`, { method: "POST", cookie: a.cookie })).status).toBe(404);
    const list = await srv.api("/users/@me/projects", { cookie: a.cookie });
    expect(list.body.map((p: any) => p.id)).toEqual([a.projectId]);
    expect(list.body[0].role).toBe("OWNER");
  });

  test("cross-origin cookie writes are refused", async () => {
    const r = await srv.api("/users/@me/projects", { cookie: a.cookie, body: { name: "evil" }, headers: { origin: "https://evil.example" } });
    expect(r.status).toBe(403);
  });

  test("account email endpoints say clearly that account email is not configured", async () => {
    const r = await srv.api("/auth/request-password-reset", { body: { email: a.email } });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain("not configured");
  });
});

describe("plumbing", () => {
  test("malformed JSON is 400, unknown route 404, both in the envelope", async () => {
    const r = await srv.api("/auth/login", { raw: "{nope", headers: { "content-type": "application/json" } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("BAD_REQUEST");
    const nf = await srv.api("/no/such/route");
    expect(nf.status).toBe(404);
    expect(nf.body.error.code).toBe("NOT_FOUND");
    expect(nf.body.error.requestId).toBeString();
  });

  test("GET /config needs no auth", async () => {
    const r = await srv.api("/config");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ version: expect.any(String), features: { signups: true, billing: false } });
  });
});

test("GET /v1/key tells which project and key type a key belongs to", async () => {
  const s = await srv.api("/v1/key", { key: a.secretKey });
  expect(s.body).toEqual({ success: true, data: { projectId: a.projectId, type: "secret" } });
  const p = await srv.api("/v1/key", { key: a.publicKey });
  expect(p.body.data.type).toBe("public");
});

test("CORS: browsers may call key-authenticated endpoints (preflight and response headers), never with credentials", async () => {
  const pre = await srv.api("/v1/key", { method: "OPTIONS", headers: { origin: "https://shop.example", "access-control-request-headers": "authorization, content-type" } });
  expect(pre.status).toBe(204);
  expect(pre.headers.get("access-control-allow-origin")).toBe("*");
  expect(pre.headers.get("access-control-allow-headers")).toContain("authorization");
  expect(pre.headers.get("access-control-allow-credentials")).toBeNull();
  const r = await srv.api("/v1/key", { key: a.publicKey, headers: { origin: "https://shop.example" } });
  expect(r.headers.get("access-control-allow-origin")).toBe("*");
  const err = await srv.api("/v1/key", { key: "pk_wrongwrongwrong", headers: { origin: "https://shop.example" } });
  expect(err.status).toBe(401);
  expect(err.headers.get("access-control-allow-origin")).toBe("*");
});

describe("GET /auth/session", () => {
  test("answers 200 with the user for a session, with null without one or with a dead one (never 401)", async () => {
    const me = await srv.api("/auth/session", { cookie: a.cookie });
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ id: a.userId, email: a.email });

    for (const cookie of [undefined, "token=abc.def.ghi", "token="]) {
      const r = await srv.api("/auth/session", { cookie });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ user: null });
    }
    // An API key is no session.
    expect((await srv.api("/auth/session", { key: a.secretKey })).body).toEqual({ user: null });

    // Logged out: the same cookie is no session any more; /users/@me keeps its 401.
    const c = await createAccount(srv.api, "C");
    expect((await srv.api("/auth/logout", { cookie: c.cookie })).status).toBe(200);
    expect((await srv.api("/auth/session", { cookie: c.cookie })).body).toEqual({ user: null });
    expect((await srv.api("/users/@me", { cookie: c.cookie })).status).toBe(401);
  });
});

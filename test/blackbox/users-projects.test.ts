// Black-box: signup/login/logout, the session cookie, projects, key rotation, members.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { cookieOf, expectEnvelope, expectOk, expectValidation, newProject, NO_SUCH_ID } from "./support";

let srv: TestServer;
/** A signed-up user with a project, and a second user who is a stranger to it. */
let main: Account;
let stranger: Account;
let seq = 0;
const freshEmail = () => `bb-user-${Date.now()}-${++seq}@example.com`;
const PASSWORD = "a long enough password";
/** The password test/support/server.ts createAccount signs up with. */
const MAIN_PASSWORD = "correct horse battery";

beforeAll(async () => {
  srv = await startServer();
  main = await createAccount(srv.api, "Main");
  stranger = await createAccount(srv.api, "Stranger");
});
afterAll(() => srv.close());

async function signup(email = freshEmail(), password = PASSWORD) {
  const res = await srv.api("/auth/signup", { body: { email, password } });
  return { res, email, cookie: cookieOf(res, "token")?.pair ?? "" };
}

describe("POST /auth/signup", () => {
  test("success: { success: true, data: { id, email } } and an httpOnly SameSite=Lax cookie `token` for 7 days", async () => {
    const { res, email } = await signup();
    expectOk(res);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data).sort()).toEqual(["email", "id"]);
    expect(typeof res.body.data.id).toBe("string");
    expect(res.body.data.email).toBe(email);
    const c = cookieOf(res, "token");
    expect(c).not.toBeNull();
    expect(c!.value.split(".").length).toBe(3); // a JWT
    expect(c!.attrs).toContain("httponly");
    expect(c!.attrs).toContain("samesite=lax");
    const maxAge = /max-age=(\d+)/.exec(c!.attrs);
    const expires = /expires=([^;]+)/.exec(c!.attrs);
    expect(maxAge || expires).toBeTruthy();
    if (maxAge) expect(Number(maxAge[1])).toBe(7 * 24 * 3600);
  });

  test("an email already taken is 409 in the envelope (also with other letter case)", async () => {
    expectEnvelope((await signup(main.email)).res, 409);
    expectEnvelope((await signup(main.email.toUpperCase())).res, 409);
  });

  test("a password shorter than 8 characters is 422 naming password (not echoed back); exactly 8 is fine", async () => {
    const short = await signup(freshEmail(), "pw12345");
    expectValidation(short.res, "password");
    expect(short.res.text).not.toContain("pw12345");
    expectOk((await signup(freshEmail(), "12345678")).res);
  });

  test("a missing or invalid email is 422 naming email", async () => {
    expectValidation((await srv.api("/auth/signup", { body: { password: PASSWORD } })), "email");
    expectValidation((await srv.api("/auth/signup", { body: { email: "not-an-email", password: PASSWORD } })), "email");
    expectValidation((await srv.api("/auth/signup", { body: { email: freshEmail() } })), "password");
  });
});

describe("POST /auth/login, GET /auth/logout, GET /users/@me", () => {
  test("login: same shape as signup and a new session cookie that opens /users/@me", async () => {
    const email = main.email;
    const res = await srv.api("/auth/login", { body: { email, password: MAIN_PASSWORD } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { id: main.userId, email } });
    const c = cookieOf(res, "token");
    expect(c).not.toBeNull();
    expect(c!.attrs).toContain("httponly");
    const me = await srv.api("/users/@me", { cookie: c!.pair });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(main.userId);
    expect(me.body.email).toBe(email);
  });

  test("wrong password and unknown email are both 401 in the envelope", async () => {
    expectEnvelope(await srv.api("/auth/login", { body: { email: main.email, password: "wrong password!" } }), 401);
    expectEnvelope(await srv.api("/auth/login", { body: { email: freshEmail(), password: PASSWORD } }), 401);
  });

  test("a wrong password of any length is 401 bad credentials, not 422", async () => {
    expectEnvelope(await srv.api("/auth/login", { body: { email: main.email, password: "wrong" } }), 401);
    expectEnvelope(await srv.api("/auth/login", { body: { email: main.email, password: "x" } }), 401);
  });

  test("/users/@me without a session is 401; with a bad cookie 401", async () => {
    expectEnvelope(await srv.api("/users/@me"), 401);
    expectEnvelope(await srv.api("/users/@me", { cookie: "token=abc.def.ghi" }), 401);
  });

  test("/users/@me with an API key instead of the session is 401", async () => {
    const acc = main;
    expectEnvelope(await srv.api("/users/@me", { key: acc.secretKey }), 401);
  });

  test("logout clears the cookie", async () => {
    // A session of its own: the logged-out one ends (main.cookie is used by the tests below).
    const login = await srv.api("/auth/login", { body: { email: main.email, password: MAIN_PASSWORD } });
    const res = await srv.api("/auth/logout", { cookie: cookieOf(login, "token")!.pair });
    expectOk(res);
    const c = cookieOf(res, "token");
    expect(c).not.toBeNull();
    const cleared = c!.value === "" || /max-age=0/.test(c!.attrs) || /expires=thu, 01 jan 1970/.test(c!.attrs);
    expect(cleared).toBe(true);
  });

  test("GET /auth/oauth-config answers without a session", async () => {
    expectOk(await srv.api("/auth/oauth-config"));
  });
});

describe("signups disabled (MAILSVC_DISABLE_SIGNUPS)", () => {
  test("/auth/signup is 403 in the envelope and /config says signups: false", async () => {
    const off = await startServer({ config: { disableSignups: true } });
    try {
      const res = await off.api("/auth/signup", { body: { email: freshEmail(), password: PASSWORD } });
      expectEnvelope(res, 403);
      expect(cookieOf(res, "token")).toBeNull();
      expect((await off.api("/config")).body.features.signups).toBe(false);
    } finally {
      await off.close();
    }
  });
});

const PROJECT_KEYS = ["createdAt", "disabled", "disabledReason", "id", "name", "public", "secret", "tracking", "updatedAt"];

describe("projects", () => {
  test("create: the project object with both keys; the creator is OWNER in the list", async () => {
    const cookie = main.cookie;
    const createdFrom = srv.clock.now();
    const res = await srv.api("/users/@me/projects", { cookie, body: { name: "Shop" } });
    expect(res.status).toBe(201); // docs/api.md "Conventions": creating resources answers 201
    for (const k of PROJECT_KEYS) expect(res.body).toHaveProperty(k);
    expect(res.body.name).toBe("Shop");
    expect(res.body.public).toMatch(/^pk_/);
    expect(res.body.secret).toMatch(/^sk_/);
    expect(res.body.disabled).toBe(false);
    expect(res.body.disabledReason).toBeNull();
    expect(res.body.tracking).toBe("MARKETING_ONLY");
    expectTimeBetween(res.body.createdAt, createdFrom, srv.clock.now());
    expect(res.body.updatedAt).toBe(res.body.createdAt);

    const list = await srv.api("/users/@me/projects", { cookie });
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    const mine = list.body.find((p: any) => p.id === res.body.id);
    expect(mine).toBeDefined();
    for (const k of [...PROJECT_KEYS, "role"]) expect(mine).toHaveProperty(k);
    expect(mine.role).toBe("OWNER");
    expect(mine.public).toBe(res.body.public);
    expect(mine.secret).toBe(res.body.secret);

    // The keys work at once.
    expect((await srv.api("/templates", { key: res.body.secret })).status).toBe(200);
  });

  test("project endpoints need a session (401 without, 401 with an API key)", async () => {
    const acc = main;
    expectEnvelope(await srv.api("/users/@me/projects"), 401);
    expectEnvelope(await srv.api("/users/@me/projects", { body: { name: "x" } }), 401);
    expectEnvelope(await srv.api("/users/@me/projects", { key: acc.secretKey }), 401);
  });

  test("create without a name is 422", async () => {
    expectValidation(await srv.api("/users/@me/projects", { cookie: main.cookie, body: {} }), "name");
  });

  test("PATCH updates the name and the tracking mode (ENABLED, DISABLED, MARKETING_ONLY); others are 422", async () => {
    const acc = await newProject(srv.api, main);
    for (const tracking of ["DISABLED", "MARKETING_ONLY", "ENABLED"]) {
      const res = await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking } });
      expect(res.status).toBe(200);
      expect(res.body.tracking).toBe(tracking);
    }
    const renamed = await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { name: "Renamed" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe("Renamed");
    expectValidation(await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking: "SOMETIMES" } }), "tracking");
    const list = await srv.api("/users/@me/projects", { cookie: acc.cookie });
    expect(list.body.find((p: any) => p.id === acc.projectId).name).toBe("Renamed");
  });

  test("regenerate-keys rotates both keys; the old ones stop working at once", async () => {
    const acc = await newProject(srv.api, main);
    const res = await srv.api(`/users/@me/projects/${acc.projectId}/regenerate-keys`, { method: "POST", cookie: acc.cookie });
    expectOk(res);
    expect(res.body.public).toMatch(/^pk_/);
    expect(res.body.secret).toMatch(/^sk_/);
    expect(res.body.public).not.toBe(acc.publicKey);
    expect(res.body.secret).not.toBe(acc.secretKey);
    expectEnvelope(await srv.api("/templates", { key: acc.secretKey }), 401);
    expect((await srv.api("/templates", { key: res.body.secret })).status).toBe(200);
    // The new public key is still refused on secret-key endpoints.
    expectEnvelope(await srv.api("/templates", { key: res.body.public }), 401, "INVALID_API_KEY");
    // The list shows the new keys.
    const list = await srv.api("/users/@me/projects", { cookie: acc.cookie });
    const p = list.body.find((x: any) => x.id === acc.projectId);
    expect(p.public).toBe(res.body.public);
    expect(p.secret).toBe(res.body.secret);
  });

  test("another user's project: PATCH, rotate, delete, reset and security are 404 (never revealing it exists) and change nothing", async () => {
    const owner = await newProject(srv.api, main);
    const tries = [
      srv.api(`/users/@me/projects/${owner.projectId}`, { method: "PATCH", cookie: stranger.cookie, body: { name: "pwned" } }),
      srv.api(`/users/@me/projects/${owner.projectId}/regenerate-keys`, { method: "POST", cookie: stranger.cookie }),
      srv.api(`/users/@me/projects/${owner.projectId}/reset`, { method: "POST", cookie: stranger.cookie }),
      srv.api(`/users/@me/projects/${owner.projectId}`, { method: "DELETE", cookie: stranger.cookie }),
      srv.api(`/users/@me/projects/${owner.projectId}/security`, { cookie: stranger.cookie }),
    ];
    for (const res of await Promise.all(tries)) expectEnvelope(res, 404, "NOT_FOUND");
    expect((await srv.api("/templates", { key: owner.secretKey })).status).toBe(200);
  });

  test("DELETE removes the project: its keys stop working and it leaves the list", async () => {
    const acc = await newProject(srv.api, main);
    expectOk(await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "DELETE", cookie: acc.cookie }));
    expectEnvelope(await srv.api("/templates", { key: acc.secretKey }), 401);
    const list = await srv.api("/users/@me/projects", { cookie: acc.cookie });
    expect(list.body.find((p: any) => p.id === acc.projectId)).toBeUndefined();
  });

  test("unknown project id: 404", async () => {
    const acc = main;
    expectEnvelope(await srv.api(`/users/@me/projects/${NO_SUCH_ID}`, { method: "PATCH", cookie: acc.cookie, body: { name: "x" } }), 404);
  });

  test("security: bounce and complaint rates of the project", async () => {
    const acc = main;
    for (const res of [
      await srv.api(`/users/@me/projects/${acc.projectId}/security`, { cookie: acc.cookie }),
      await srv.api(`/projects/${acc.projectId}/security`, { key: acc.secretKey }),
      await srv.api(`/projects/${acc.projectId}/security`, { cookie: acc.cookie }),
    ]) {
      expect(res.status).toBe(200);
      const json = JSON.stringify(res.body).toLowerCase();
      expect(json).toContain("bounce");
      expect(json).toContain("complaint");
    }
  });

  test("setup-state answers for the secret key and a member's session", async () => {
    const acc = main;
    expect((await srv.api(`/projects/${acc.projectId}/setup-state`, { key: acc.secretKey })).status).toBe(200);
    expect((await srv.api(`/projects/${acc.projectId}/setup-state`, { cookie: acc.cookie })).status).toBe(200);
    expectEnvelope(await srv.api(`/projects/${acc.projectId}/setup-state`, { key: stranger.secretKey }), 404, "NOT_FOUND");
  });
});

describe("members", () => {
  let owner: Account;
  let member: Account;
  beforeAll(async () => {
    // A new project of `main` (its only member), and `stranger` (a user with a project of their own) to invite.
    owner = await newProject(srv.api, main, "Team");
    member = stranger;
  });

  test("invite an existing user by email (role MEMBER by default); the list shows both", async () => {
    const res = await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie, body: { email: member.email } });
    expectOk(res);
    expect(res.body.role).toBe("MEMBER");
    const list = await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie });
    expect(list.status).toBe(200);
    const arr = Array.isArray(list.body) ? list.body : list.body.data;
    const roles = Object.fromEntries(arr.map((m: any) => [m.email, m.role]));
    expect(roles[owner.email]).toBe("OWNER");
    expect(roles[member.email]).toBe("MEMBER");
  });

  test("the new member's session reaches the project's resources with X-Project-Id; the project is in their list", async () => {
    const res = await srv.api("/templates", { cookie: member.cookie, headers: { "x-project-id": owner.projectId } });
    expect(res.status).toBe(200);
    const list = await srv.api("/users/@me/projects", { cookie: member.cookie });
    expect(list.body.find((p: any) => p.id === owner.projectId)?.role).toBe("MEMBER");
  });

  test("a MEMBER cannot invite, rotate keys or delete the project (403)", async () => {
    const third = await createAccount(srv.api, "Third");
    expectEnvelope(await srv.api(`/projects/${owner.projectId}/members`, { cookie: member.cookie, body: { email: third.email } }), 403);
    expectEnvelope(await srv.api(`/users/@me/projects/${owner.projectId}/regenerate-keys`, { method: "POST", cookie: member.cookie }), 403);
    expectEnvelope(await srv.api(`/users/@me/projects/${owner.projectId}`, { method: "DELETE", cookie: member.cookie }), 403);
    expect((await srv.api("/templates", { key: owner.secretKey })).status).toBe(200);
  });

  test("inviting twice is 409; inviting an unknown email is 404; a bad role is 422", async () => {
    expectEnvelope(await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie, body: { email: member.email } }), 409);
    expectEnvelope(await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie, body: { email: freshEmail() } }), 404);
    expectValidation(await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie, body: { email: member.email, role: "KING" } }), "role");
  });

  test("change a role (PATCH); the last OWNER cannot be demoted (409)", async () => {
    const res = await srv.api(`/projects/${owner.projectId}/members/${member.userId}`, { method: "PATCH", cookie: owner.cookie, body: { role: "ADMIN" } });
    expect(res.status).toBe(200);
    expect(res.body.role).toBe("ADMIN");
    expectEnvelope(
      await srv.api(`/projects/${owner.projectId}/members/${owner.userId}`, { method: "PATCH", cookie: owner.cookie, body: { role: "MEMBER" } }),
      409,
      "INVALID_STATE",
    );
  });

  test("remove a member; the removed user's session no longer reaches the project", async () => {
    expectOk(await srv.api(`/projects/${owner.projectId}/members/${member.userId}`, { method: "DELETE", cookie: owner.cookie }));
    const res = await srv.api("/templates", { cookie: member.cookie, headers: { "x-project-id": owner.projectId } });
    expectEnvelope(res, 403);
    const list = await srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie });
    const arr = Array.isArray(list.body) ? list.body : list.body.data;
    expect(arr.map((m: any) => m.email)).toEqual([owner.email]);
  });

  test("the last OWNER cannot be removed (409)", async () => {
    expectEnvelope(await srv.api(`/projects/${owner.projectId}/members/${owner.userId}`, { method: "DELETE", cookie: owner.cookie }), 409, "INVALID_STATE");
  });

  test("members of another project cannot list this project's members", async () => {
    expectEnvelope(await srv.api(`/projects/${owner.projectId}/members`, { cookie: member.cookie }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/projects/${owner.projectId}/members`, { key: member.secretKey }), 404, "NOT_FOUND");
  });
});

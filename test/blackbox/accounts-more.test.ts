// Black-box, beyond users-projects/domains/auth-errors/rate-limit/operator: the session cookie and its lifetime,
// cross-origin writes, the project object (webhookSecret), roles OWNER/ADMIN/MEMBER and the secret key as ADMIN,
// setup-state, project reset, domain view details, the error envelope at the edge, /config, and the CLI.
// Written from api-spec.md, decisions.md and the documented choices (README, docs/) only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { publishRecords, type DomainView } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, freeTcpPort, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { cookieOf, expectEnvelope, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "./support";

const HOSTNAME = "mx-out.more-bb.example";
let srv: TestServer;
let dns: TestDns;
/** Owner of the projects the tests create; `x`, `y`, `z`: other users (each with a project of their own). */
let main: Account;
let x: Account;
let y: Account;
let z: Account;
let seq = 0;
const freshEmail = () => `bb-more-${Date.now()}-${++seq}@example.com`;
const PASSWORD = "a long enough password";

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server], hostname: HOSTNAME } });
  [main, x, y, z] = await Promise.all([
    createAccount(srv.api, "More main"),
    createAccount(srv.api, "More X"),
    createAccount(srv.api, "More Y"),
    createAccount(srv.api, "More Z"),
  ]);
});
afterAll(async () => {
  await srv?.close();
  await dns?.close();
});

const rec = (d: DomainView, purpose: string) => d.records.find((r) => r.purpose === purpose)!;
const members = async (projectId: string, auth: { cookie?: string; key?: string }) => {
  const res = await srv.api(`/projects/${projectId}/members`, auth);
  expect(res.status).toBe(200);
  const arr = Array.isArray(res.body) ? res.body : res.body.data;
  return Object.fromEntries(arr.map((m: any) => [m.email, m.role])) as Record<string, string>;
};

describe("signup and login", () => {
  test("signup answers 201; the email is stored and echoed lower-cased and login accepts any letter case", async () => {
    const email = `MiXeD-${Date.now()}@Example.COM`;
    const res = await srv.api("/auth/signup", { body: { email, password: PASSWORD } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ success: true, data: { id: res.body.data.id, email: email.toLowerCase() } });
    const login = await srv.api("/auth/login", { body: { email: email.toUpperCase(), password: PASSWORD } });
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ success: true, data: { id: res.body.data.id, email: email.toLowerCase() } });
    const me = await srv.api("/users/@me", { cookie: cookieOf(login, "token")!.pair });
    expect(me.body.email).toBe(email.toLowerCase());
  });

  test("login's cookie: `token`, a JWT, httpOnly, SameSite=Lax, 7 days", async () => {
    const res = await srv.api("/auth/login", { body: { email: main.email, password: "correct horse battery" } });
    expect(res.status).toBe(200);
    const c = cookieOf(res, "token")!;
    expect(c).not.toBeNull();
    expect(c.value.split(".").length).toBe(3);
    expect(c.attrs).toContain("httponly");
    expect(c.attrs).toContain("samesite=lax");
    const maxAge = /max-age=(\d+)/.exec(c.attrs);
    if (maxAge) expect(Number(maxAge[1])).toBe(7 * 24 * 3600);
    else expect(/expires=/.test(c.attrs)).toBe(true);
  });

  test("login without a password, or with a non-string email, is 422 (body validation), not 401", async () => {
    expectValidation(await srv.api("/auth/login", { body: { email: main.email } }), "password");
    expectValidation(await srv.api("/auth/login", { body: { password: PASSWORD } }), "email");
    expectValidation(await srv.api("/auth/login", { body: { email: 42, password: PASSWORD } }), "email");
    expect(cookieOf(await srv.api("/auth/login", { body: { email: main.email } }), "token")).toBeNull();
  });

  test("a failed signup sets no cookie and creates no user (409, 422)", async () => {
    const dup = await srv.api("/auth/signup", { body: { email: main.email, password: PASSWORD } });
    expectEnvelope(dup, 409, "CONFLICT");
    expect(cookieOf(dup, "token")).toBeNull();
    const email = freshEmail();
    const short = await srv.api("/auth/signup", { body: { email, password: "short" } });
    expectValidation(short, "password");
    expect(cookieOf(short, "token")).toBeNull();
    // The email is still free: nothing was written by the refused request.
    expect((await srv.api("/auth/signup", { body: { email, password: PASSWORD } })).status).toBe(201);
  });

  test("token and password-reset bodies are validated (422 naming the field) before the token is looked up", async () => {
    expectValidation(await srv.api("/auth/verify-email", { body: {} }), "token");
    expectValidation(await srv.api("/auth/reset-password", { body: { token: "nope", password: "short" } }), "password");
    expectValidation(await srv.api("/auth/reset-password", { body: { password: PASSWORD } }), "token");
    expectValidation(await srv.api("/auth/request-password-reset", { body: { email: "not-an-email" } }), "email");
    expectValidation(await srv.api("/auth/request-password-reset", { body: {} }), "email");
  });

  test("bad credentials are 401 UNAUTHORIZED with no cookie", async () => {
    const res = await srv.api("/auth/login", { body: { email: main.email, password: "not the password" } });
    expectEnvelope(res, 401, "UNAUTHORIZED");
    expect(cookieOf(res, "token")).toBeNull();
  });

  test("a body sent without Content-Type is parsed as JSON", async () => {
    const res = await srv.api("/auth/login", { method: "POST", raw: JSON.stringify({ email: main.email, password: "correct horse battery" }) });
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(main.userId);
  });

  test("/users/@me: the current user, never the password hash", async () => {
    const me = await srv.api("/users/@me", { cookie: main.cookie });
    expect(me.status).toBe(200);
    expect(me.body.id).toBe(main.userId);
    expect(me.body.email).toBe(main.email);
    for (const k of Object.keys(me.body)) expect(k.toLowerCase()).not.toContain("password");
    expect(me.text).not.toContain("argon2");
    expect(me.text).not.toContain("correct horse battery");
  });

  test("logout answers 200 and clears the cookie also without a session", async () => {
    const res = await srv.api("/auth/logout");
    expect(res.status).toBe(200);
    const c = cookieOf(res, "token");
    expect(c).not.toBeNull();
    expect(c!.value === "" || /max-age=0/.test(c!.attrs) || /expires=thu, 01 jan 1970/.test(c!.attrs)).toBe(true);
  });
});

describe("sessions", () => {
  test("the session outlives a restart (the JWT secret is stored in the database)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-bb-more-"));
    const dbPath = join(dir, "s.db");
    try {
      const a = await startServer({ dbPath });
      const signup = await a.api("/auth/signup", { body: { email: freshEmail(), password: PASSWORD } });
      expect(signup.status).toBe(201);
      const cookie = cookieOf(signup, "token")!.pair;
      await a.close();
      const b = await startServer({ dbPath });
      try {
        const me = await b.api("/users/@me", { cookie });
        expect(me.status).toBe(200);
        expect(me.body.id).toBe(signup.body.data.id);
      } finally {
        await b.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a session is refused after 7 days (on the service clock)", async () => {
    const s = await startServer();
    try {
      const signup = await s.api("/auth/signup", { body: { email: freshEmail(), password: PASSWORD } });
      const cookie = cookieOf(signup, "token")!.pair;
      s.clock.advance(6 * 24 * 3600_000);
      expect((await s.api("/users/@me", { cookie })).status).toBe(200);
      s.clock.advance(24 * 3600_000 + 60_000);
      expectEnvelope(await s.api("/users/@me", { cookie }), 401);
    } finally {
      await s.close();
    }
  });

  test("X-Project-Id naming a project that does not exist is 403, like one the user is not in", async () => {
    expectEnvelope(await srv.api("/templates", { cookie: main.cookie, headers: { "x-project-id": NO_SUCH_ID } }), 403);
    expectEnvelope(await srv.api("/templates", { cookie: main.cookie, headers: { "x-project-id": x.projectId } }), 403);
    expectEnvelope(
      await srv.api("/templates", { cookie: main.cookie, headers: { "x-project-id": x.projectId }, body: { name: "t", subject: "s", body: "b", from: "a@b.example" } }),
      403,
    );
    expect((await srv.api("/templates", { key: x.secretKey })).body.total).toBe(0);
  });

  test("cookie-authenticated writes from another origin are refused (403) and change nothing; same origin works", async () => {
    const evil = await srv.api("/users/@me/projects", { cookie: main.cookie, headers: { origin: "https://evil.example" }, body: { name: "CSRF" } });
    expectEnvelope(evil, 403);
    const list = await srv.api("/users/@me/projects", { cookie: main.cookie });
    expect(list.body.map((p: any) => p.name)).not.toContain("CSRF");
    const ok = await srv.api("/users/@me/projects", { cookie: main.cookie, headers: { origin: srv.url }, body: { name: "Same origin" } });
    expect(ok.status).toBe(201);
  });

  test("CORS: any origin may call a key-authenticated endpoint, without credentials", async () => {
    const res = await srv.api("/templates", { key: main.secretKey, headers: { origin: "https://app.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-allow-credentials")).not.toBe("true");
  });
});

describe("project object and key rotation", () => {
  test("create returns webhookSecret (whsec_…) with the other fields; the list adds role", async () => {
    const res = await srv.api("/users/@me/projects", { cookie: main.cookie, body: { name: "Fields" } });
    expect(res.status).toBe(201);
    for (const k of ["id", "name", "public", "secret", "webhookSecret", "disabled", "disabledReason", "tracking", "createdAt", "updatedAt"]) {
      expect(res.body).toHaveProperty(k);
    }
    expect(res.body.webhookSecret).toMatch(/^whsec_/);
    expect(isIsoDate(res.body.createdAt)).toBe(true);
    const mine = (await srv.api("/users/@me/projects", { cookie: main.cookie })).body.find((p: any) => p.id === res.body.id);
    expect(mine.role).toBe("OWNER");
    expect(mine.webhookSecret).toBe(res.body.webhookSecret);
  });

  test("PATCH returns the project with a new updatedAt", async () => {
    const p = await newProject(srv.api, main, "Patch me");
    srv.clock.advance(1000);
    const from = srv.clock.now();
    const res = await srv.api(`/users/@me/projects/${p.projectId}`, { method: "PATCH", cookie: main.cookie, body: { name: "Patched" } });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(p.projectId);
    expect(res.body.name).toBe("Patched");
    expectTimeBetween(res.body.updatedAt, from, srv.clock.now());
    expect(Date.parse(res.body.createdAt)).toBeLessThan(from);
  });

  test("rotation returns new keys and a new webhookSecret; the old public key fails at once on /v1/track, the new one works", async () => {
    const p = await newProject(srv.api, main, "Rotate");
    const before = (await srv.api("/users/@me/projects", { cookie: main.cookie })).body.find((q: any) => q.id === p.projectId);
    const track = (key: string) => srv.api("/v1/track", { key, body: { email: "r@rotate.example", event: "ping" } });
    expect((await track(p.publicKey)).status).toBe(200);
    const res = await srv.api(`/users/@me/projects/${p.projectId}/regenerate-keys`, { method: "POST", cookie: main.cookie });
    expect(res.status).toBe(200);
    expect(res.body.public).toMatch(/^pk_/);
    expect(res.body.secret).toMatch(/^sk_/);
    expectEnvelope(await track(p.publicKey), 401);
    expect((await track(res.body.public)).status).toBe(200);
    const after = (await srv.api("/users/@me/projects", { cookie: main.cookie })).body.find((q: any) => q.id === p.projectId);
    expect(after.webhookSecret).toMatch(/^whsec_/);
    expect(after.webhookSecret).not.toBe(before.webhookSecret);
    if (res.body.webhookSecret !== undefined) expect(res.body.webhookSecret).toBe(after.webhookSecret);
  });

  test("malformed JSON on the session endpoints is 400 BAD_REQUEST in the envelope", async () => {
    const raw = '{"name":';
    const headers = { "content-type": "application/json" };
    const p = main.projectId;
    for (const [method, path] of [
      ["POST", "/users/@me/projects"],
      ["PATCH", `/users/@me/projects/${p}`],
      ["PATCH", `/projects/${p}/members/${main.userId}`],
      ["POST", "/auth/verify-email"],
      ["POST", "/auth/reset-password"],
      ["POST", "/auth/request-password-reset"],
    ] as const) {
      const res = await srv.api(path, { method, cookie: main.cookie, raw, headers });
      try {
        expectEnvelope(res, 400, "BAD_REQUEST");
      } catch (e) {
        throw new Error(`${method} ${path}: ${(e as Error).message}`);
      }
    }
  });
});

describe("roles: OWNER, ADMIN, MEMBER; the secret key acts as ADMIN", () => {
  let team: Account;
  beforeAll(async () => {
    team = await newProject(srv.api, main, "Roles");
    expectOk(await srv.api(`/projects/${team.projectId}/members`, { cookie: main.cookie, body: { email: x.email, role: "ADMIN" } }));
    expectOk(await srv.api(`/projects/${team.projectId}/members`, { cookie: main.cookie, body: { email: y.email } }));
  });
  const asX = (path: string, opts: any = {}) => srv.api(path, { ...opts, cookie: x.cookie });
  const asY = (path: string, opts: any = {}) => srv.api(path, { ...opts, cookie: y.cookie });

  test("invite answers 201 with the role; the list shows OWNER, ADMIN, MEMBER", async () => {
    expect(await members(team.projectId, { cookie: main.cookie })).toEqual({ [main.email]: "OWNER", [x.email]: "ADMIN", [y.email]: "MEMBER" });
    const third = await newProject(srv.api, main, "Invite status");
    const res = await srv.api(`/projects/${third.projectId}/members`, { cookie: main.cookie, body: { email: z.email, role: "ADMIN" } });
    expect(res.status).toBe(201);
    expect(res.body.role).toBe("ADMIN");
  });

  test("invite by email in another letter case finds the user", async () => {
    const p = await newProject(srv.api, main, "Invite case");
    const res = await srv.api(`/projects/${p.projectId}/members`, { cookie: main.cookie, body: { email: z.email.toUpperCase() } });
    expectOk(res);
    expect((await members(p.projectId, { cookie: main.cookie }))[z.email]).toBe("MEMBER");
  });

  test("a MEMBER can read: members, setup-state, security, resources with X-Project-Id, its role in the list", async () => {
    expect((await asY(`/projects/${team.projectId}/members`)).status).toBe(200);
    expect((await asY(`/projects/${team.projectId}/setup-state`)).status).toBe(200);
    expect((await asY(`/projects/${team.projectId}/security`)).status).toBe(200);
    expect((await asY("/templates", { headers: { "x-project-id": team.projectId } })).status).toBe(200);
    expect((await asY("/users/@me/projects")).body.find((p: any) => p.id === team.projectId).role).toBe("MEMBER");
  });

  test("a MEMBER cannot rename, set tracking, reset, change roles or remove members (403) and changes nothing", async () => {
    expectEnvelope(await asY(`/users/@me/projects/${team.projectId}`, { method: "PATCH", body: { name: "by member" } }), 403);
    expectEnvelope(await asY(`/users/@me/projects/${team.projectId}`, { method: "PATCH", body: { tracking: "DISABLED" } }), 403);
    expectEnvelope(await asY(`/users/@me/projects/${team.projectId}/reset`, { method: "POST" }), 403);
    expectEnvelope(await asY(`/projects/${team.projectId}/members/${x.userId}`, { method: "PATCH", body: { role: "MEMBER" } }), 403);
    expectEnvelope(await asY(`/projects/${team.projectId}/members/${x.userId}`, { method: "DELETE" }), 403);
    expectEnvelope(await asY(`/projects/${team.projectId}/members/${y.userId}`, { method: "PATCH", body: { role: "OWNER" } }), 403);
    const p = (await srv.api("/users/@me/projects", { cookie: main.cookie })).body.find((q: any) => q.id === team.projectId);
    expect(p.name).toBe("Roles");
    expect(p.tracking).toBe("MARKETING_ONLY");
    expect(await members(team.projectId, { cookie: main.cookie })).toEqual({ [main.email]: "OWNER", [x.email]: "ADMIN", [y.email]: "MEMBER" });
  });

  test("any member may add, verify and delete a domain", async () => {
    const add = await srv.api<DomainView>("/domains", { cookie: y.cookie, body: { projectId: team.projectId, domain: "member.more-bb.example" } });
    expect(add.status).toBe(201);
    expect((await asY(`/domains/${add.body.id}/verify`)).status).toBe(200);
    expect((await asY(`/domains/${add.body.id}`, { method: "DELETE" })).body).toEqual({ success: true });
  });

  test("an ADMIN can rename, set tracking, rotate keys and manage non-owner members", async () => {
    const renamed = await asX(`/users/@me/projects/${team.projectId}`, { method: "PATCH", body: { name: "Roles by admin", tracking: "ENABLED" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe("Roles by admin");
    expect(renamed.body.tracking).toBe("ENABLED");
    const rot = await asX(`/users/@me/projects/${team.projectId}/regenerate-keys`, { method: "POST" });
    expect(rot.status).toBe(200);
    team = { ...team, secretKey: rot.body.secret, publicKey: rot.body.public };
    expectOk(await asX(`/projects/${team.projectId}/members`, { body: { email: z.email } }));
    const promoted = await asX(`/projects/${team.projectId}/members/${z.userId}`, { method: "PATCH", body: { role: "ADMIN" } });
    expect(promoted.status).toBe(200);
    expect(promoted.body.role).toBe("ADMIN");
    expectOk(await asX(`/projects/${team.projectId}/members/${z.userId}`, { method: "DELETE" }));
    expect((await members(team.projectId, { cookie: main.cookie }))[z.email]).toBeUndefined();
  });

  test("an ADMIN cannot touch an OWNER, make an OWNER, delete or reset the project (403)", async () => {
    expectEnvelope(await asX(`/projects/${team.projectId}/members/${main.userId}`, { method: "PATCH", body: { role: "MEMBER" } }), 403);
    expectEnvelope(await asX(`/projects/${team.projectId}/members/${main.userId}`, { method: "DELETE" }), 403);
    expectEnvelope(await asX(`/projects/${team.projectId}/members/${y.userId}`, { method: "PATCH", body: { role: "OWNER" } }), 403);
    expectEnvelope(await asX(`/projects/${team.projectId}/members/${x.userId}`, { method: "PATCH", body: { role: "OWNER" } }), 403);
    expectEnvelope(await asX(`/users/@me/projects/${team.projectId}`, { method: "DELETE" }), 403);
    expectEnvelope(await asX(`/users/@me/projects/${team.projectId}/reset`, { method: "POST" }), 403);
    expect(await members(team.projectId, { cookie: main.cookie })).toEqual({ [main.email]: "OWNER", [x.email]: "ADMIN", [y.email]: "MEMBER" });
    expect((await srv.api("/templates", { key: team.secretKey })).status).toBe(200);
  });

  test("the secret key acts as ADMIN on /projects/:id/*: lists and invites, but cannot demote the OWNER", async () => {
    expect((await members(team.projectId, { key: team.secretKey }))[main.email]).toBe("OWNER");
    expectOk(await srv.api(`/projects/${team.projectId}/members`, { key: team.secretKey, body: { email: z.email } }));
    expectEnvelope(await srv.api(`/projects/${team.projectId}/members/${main.userId}`, { method: "PATCH", key: team.secretKey, body: { role: "MEMBER" } }), 403);
    expectOk(await srv.api(`/projects/${team.projectId}/members/${z.userId}`, { method: "DELETE", key: team.secretKey }));
  });

  test("member PATCH: an unknown user is 404, a bad role 422", async () => {
    expectEnvelope(await srv.api(`/projects/${team.projectId}/members/${NO_SUCH_ID}`, { method: "PATCH", cookie: main.cookie, body: { role: "ADMIN" } }), 404);
    expectEnvelope(await srv.api(`/projects/${team.projectId}/members/${NO_SUCH_ID}`, { method: "DELETE", cookie: main.cookie }), 404);
    expectValidation(await srv.api(`/projects/${team.projectId}/members/${y.userId}`, { method: "PATCH", cookie: main.cookie, body: { role: "KING" } }), "role");
  });

  test("with two OWNERs one may be demoted; then the remaining one is the last and cannot be (409 INVALID_STATE)", async () => {
    const p = await newProject(srv.api, main, "Two owners");
    expectOk(await srv.api(`/projects/${p.projectId}/members`, { cookie: main.cookie, body: { email: x.email, role: "OWNER" } }));
    expect((await members(p.projectId, { cookie: main.cookie }))[x.email]).toBe("OWNER");
    // The other OWNER demotes the creator.
    const d = await srv.api(`/projects/${p.projectId}/members/${main.userId}`, { method: "PATCH", cookie: x.cookie, body: { role: "MEMBER" } });
    expect(d.status).toBe(200);
    expectEnvelope(await srv.api(`/projects/${p.projectId}/members/${x.userId}`, { method: "PATCH", cookie: x.cookie, body: { role: "ADMIN" } }), 409, "INVALID_STATE");
    expectEnvelope(await srv.api(`/projects/${p.projectId}/members/${x.userId}`, { method: "DELETE", cookie: x.cookie }), 409, "INVALID_STATE");
    // Now a MEMBER, the creator can no longer delete the project.
    expectEnvelope(await srv.api(`/users/@me/projects/${p.projectId}`, { method: "DELETE", cookie: main.cookie }), 403);
  });
});

describe("setup-state and project reset", () => {
  test("setup-state: hasDomain, hasVerifiedDomain, hasContacts, hasSentEmail, firstSendAt, completed follow the project", async () => {
    const p = await newProject(srv.api, main, "Setup");
    const state = async () => {
      const res = await srv.api(`/projects/${p.projectId}/setup-state`, { key: p.secretKey });
      expect(res.status).toBe(200);
      return res.body;
    };
    const s0 = await state();
    expect(s0).toMatchObject({ hasDomain: false, hasVerifiedDomain: false, hasContacts: false, hasSentEmail: false, firstSendAt: null, completed: false });
    const d = (await srv.api<DomainView>("/domains", { key: p.secretKey, body: { domain: "setup.more-bb.example" } })).body;
    expect(await state()).toMatchObject({ hasDomain: true, hasVerifiedDomain: false });
    publishRecords(dns, d);
    expect((await srv.api<DomainView>(`/domains/${d.id}/verify`, { key: p.secretKey })).body.status).toBe("VERIFIED");
    expect(await state()).toMatchObject({ hasDomain: true, hasVerifiedDomain: true, hasContacts: false });
    expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: "c@setup.example" } }));
    expect(await state()).toMatchObject({ hasContacts: true, hasSentEmail: false, completed: false });
  });

  test("reset (OWNER): contacts and templates go; the project, its keys, members and domains stay", async () => {
    const p = await newProject(srv.api, main, "Reset");
    expectOk(await srv.api(`/projects/${p.projectId}/members`, { cookie: main.cookie, body: { email: x.email, role: "ADMIN" } }));
    const d = (await srv.api<DomainView>("/domains", { key: p.secretKey, body: { domain: "reset.more-bb.example" } })).body;
    publishRecords(dns, d);
    expect((await srv.api<DomainView>(`/domains/${d.id}/verify`, { key: p.secretKey })).body.verified).toBe(true);
    expectOk(await srv.api("/templates", { key: p.secretKey, body: { name: "t", subject: "s", body: "<p>b</p>", from: "a@reset.more-bb.example" } }));
    expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: "c1@reset.example" } }));
    expectOk(await srv.api("/v1/track", { key: p.publicKey, body: { email: "c2@reset.example", event: "signed_up" } }));
    expectOk(await srv.api("/segments", { key: p.secretKey, body: { name: "static one", type: "STATIC" } }));
    const sent = await srv.api("/v1/send", { key: p.secretKey, body: { to: "c4@reset.example", from: "a@reset.more-bb.example", subject: "Hi", body: "<p>hi</p>" } });
    expect(sent.status).toBe(200);
    const usedBefore = (await srv.api(`/users/@me/projects/${p.projectId}/billing-consumption`, { cookie: main.cookie })).body.transactional.used;
    expect(usedBefore).toBe(1);

    expectEnvelope(await srv.api(`/users/@me/projects/${p.projectId}/reset`, { method: "POST", cookie: x.cookie }), 403);
    expect((await srv.api("/templates", { key: p.secretKey })).body.total).toBe(1);

    const res = await srv.api(`/users/@me/projects/${p.projectId}/reset`, { method: "POST", cookie: main.cookie });
    expect(res.status).toBe(200);
    expect((await srv.api("/templates", { key: p.secretKey })).body.total).toBe(0);
    const contacts = await srv.api("/contacts", { key: p.secretKey });
    expect(contacts.status).toBe(200);
    expect(contacts.body.data).toEqual([]);
    expect((await srv.api("/segments", { key: p.secretKey })).body).toEqual([]);
    expect((await srv.api("/emails", { key: p.secretKey })).body.data).toEqual([]);
    expect((await srv.api("/events", { key: p.secretKey })).text).not.toContain("signed_up");
    // This month's consumption is kept (a reset is not a way around a cap).
    expect((await srv.api(`/users/@me/projects/${p.projectId}/billing-consumption`, { cookie: main.cookie })).body.transactional.used).toBe(1);
    // Kept: the keys (both), the members, the domain (still verified), the project itself.
    expect((await srv.api("/v1/track", { key: p.publicKey, body: { email: "c3@reset.example", event: "back" } })).status).toBe(200);
    expect(await members(p.projectId, { cookie: main.cookie })).toEqual({ [main.email]: "OWNER", [x.email]: "ADMIN" });
    const domains = await srv.api<DomainView[]>(`/domains/project/${p.projectId}`, { key: p.secretKey });
    expect(domains.body.map((q) => [q.domain, q.status])).toEqual([["reset.more-bb.example", "VERIFIED"]]);
    expectOk(await srv.api("/templates", { key: p.secretKey, body: { name: "t2", subject: "s", body: "<p>b</p>", from: "a@reset.more-bb.example" } }));
    expect((await srv.api("/users/@me/projects", { cookie: main.cookie })).body.some((q: any) => q.id === p.projectId)).toBe(true);
  });

  test("reset of an unknown project is 404", async () => {
    expectEnvelope(await srv.api(`/users/@me/projects/${NO_SUCH_ID}/reset`, { method: "POST", cookie: main.cookie }), 404);
  });
});

describe("domains: the view in detail", () => {
  test("POST answers 201 with selector mailsvc<8 hex>, bounceDomain bounces.<domain>, verifiedAt/lastCheckedAt null; projectId may be omitted with a secret key", async () => {
    const res = await srv.api<DomainView>("/domains", { key: main.secretKey, body: { domain: "view.more-bb.example" } });
    expect(res.status).toBe(201);
    const d = res.body;
    expect(d.projectId).toBe(main.projectId);
    expect(d.selector).toMatch(/^mailsvc[0-9a-f]{8}$/);
    expect(d.bounceDomain).toBe("bounces.view.more-bb.example");
    expect(d.verifiedAt).toBeNull();
    expect(d.lastCheckedAt).toBeNull();
    expect(d.status).toBe("PENDING");
    expect(rec(d, "dkim").name).toBe(`${d.selector}._domainkey.view.more-bb.example`);
    expect(rec(d, "return-path").name).toBe("bounces.view.more-bb.example");
    expect(rec(d, "spf").name).toBe("bounces.view.more-bb.example");
    for (const r of d.records) expect(r.status).toBe("PENDING");
    // GET /domains/:id exists and gives the same view.
    const got = await srv.api<DomainView>(`/domains/${d.id}`, { key: main.secretKey });
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(d.id);
    expect(got.body.selector).toBe(d.selector);
    expectEnvelope(await srv.api(`/domains/${d.id}`, { key: x.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/domains/${NO_SUCH_ID}`, { key: main.secretKey }), 404, "NOT_FOUND");
  });

  test("verification sets lastCheckedAt and verifiedAt; quotes, spaces and split strings in the published value don't matter", async () => {
    const d = (await srv.api<DomainView>("/domains", { key: main.secretKey, body: { domain: "spaced.more-bb.example" } })).body;
    const dkim = rec(d, "dkim");
    // Split at odd places, with spaces after the semicolons.
    const spaced = dkim.value.replace(/;\s*/g, "; ");
    dns.set(dkim.name, "TXT", [[spaced.slice(0, 7), spaced.slice(7, 200), spaced.slice(200)]]);
    const from = srv.clock.now();
    const res = await srv.api<DomainView>(`/domains/${d.id}/verify`, { key: main.secretKey });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("VERIFIED");
    expectTimeBetween(res.body.verifiedAt, from, srv.clock.now());
    expectTimeBetween(res.body.lastCheckedAt, from, srv.clock.now());
  });

  test("never seen, and another key published: FAILED (not PENDING); nothing published: PENDING", async () => {
    const a = (await srv.api<DomainView>("/domains", { key: main.secretKey, body: { domain: "otherkey.more-bb.example" } })).body;
    const b = (await srv.api<DomainView>("/domains", { key: main.secretKey, body: { domain: "nothing.more-bb.example" } })).body;
    dns.setLongTxt(rec(a, "dkim").name, rec(b, "dkim").value);
    const va = await srv.api<DomainView>(`/domains/${a.id}/verify`, { key: main.secretKey });
    expect(va.body.status).toBe("FAILED");
    expect(va.body.verified).toBe(false);
    const vb = await srv.api<DomainView>(`/domains/${b.id}/verify`, { key: main.secretKey });
    expect(vb.body.status).toBe("PENDING");
    expect(vb.body.verifiedAt).toBeNull();
    // The status follows the record: once ours is published, the FAILED domain verifies.
    publishRecords(dns, a);
    const again = await srv.api<DomainView>(`/domains/${a.id}/verify`, { key: main.secretKey });
    expect(again.body.status).toBe("VERIFIED");
    expect(again.body.verified).toBe(true);
  });

  test("a DNS lookup failure changes nothing: a VERIFIED domain stays VERIFIED, the record's detail says why", async () => {
    const own = await startDns();
    const s = await startServer({ config: { dnsServers: [own.server] } });
    try {
      const acc = await createAccount(s.api, "DNS down");
      const d = (await s.api<DomainView>("/domains", { key: acc.secretKey, body: { domain: "down.more-bb.example" } })).body;
      publishRecords(own, d);
      expect((await s.api<DomainView>(`/domains/${d.id}/verify`, { key: acc.secretKey })).body.status).toBe("VERIFIED");
      await own.close();
      const res = await s.api<DomainView>(`/domains/${d.id}/verify`, { key: acc.secretKey });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe("VERIFIED");
      expect(res.body.verified).toBe(true);
      const dkim = rec(res.body, "dkim") as any;
      expect(typeof dkim.detail).toBe("string");
      expect(dkim.detail.length).toBeGreaterThan(0);
      // And a template from it is still accepted.
      expectOk(await s.api("/templates", { key: acc.secretKey, body: { name: "t", subject: "s", body: "<p>b</p>", from: "a@down.more-bb.example" } }));
    } finally {
      await s.close();
    }
  });

  test("a subdomain of a verified domain, added itself, starts PENDING with its own key", async () => {
    const parent = (await srv.api<DomainView>("/domains", { key: main.secretKey, body: { domain: "top.more-bb.example" } })).body;
    publishRecords(dns, parent);
    expect((await srv.api<DomainView>(`/domains/${parent.id}/verify`, { key: main.secretKey })).body.verified).toBe(true);
    const sub = await srv.api<DomainView>("/domains", { key: main.secretKey, body: { domain: "news.top.more-bb.example" } });
    expect(sub.status).toBe(201);
    expect(sub.body.status).toBe("PENDING");
    expect(sub.body.verified).toBe(false);
    expect(rec(sub.body, "dkim").value).not.toBe(rec(parent, "dkim").value);
    expect((await srv.api<DomainView>(`/domains/${sub.body.id}/verify`, { key: main.secretKey })).body.verified).toBe(false);
  });

  test("DELETE answers { success: true }, also while a template uses the domain", async () => {
    const p = await newProject(srv.api, main, "Delete in use");
    const d = (await srv.api<DomainView>("/domains", { key: p.secretKey, body: { domain: "inuse.more-bb.example" } })).body;
    publishRecords(dns, d);
    await srv.api(`/domains/${d.id}/verify`, { key: p.secretKey });
    expectOk(await srv.api("/templates", { key: p.secretKey, body: { name: "t", subject: "s", body: "<p>b</p>", from: "a@inuse.more-bb.example" } }));
    const res = await srv.api(`/domains/${d.id}`, { method: "DELETE", key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
    expect((await srv.api(`/domains/project/${p.projectId}`, { key: p.secretKey })).body).toEqual([]);
  });

  test("GET /domains/project/:projectId of an unknown project is 404; a non-string domain is 422", async () => {
    expectEnvelope(await srv.api(`/domains/project/${NO_SUCH_ID}`, { key: main.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/domains/project/${NO_SUCH_ID}`, { cookie: main.cookie }), 404, "NOT_FOUND");
    expectValidation(await srv.api("/domains", { key: main.secretKey, body: { domain: 42 } }), "domain");
  });
});

describe("the error envelope at the edge", () => {
  test("unknown routes are 404 NOT_FOUND for every method, with and without a session", async () => {
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
      expectEnvelope(await srv.api("/no/such/thing", { method }), 404, "NOT_FOUND");
      expectEnvelope(await srv.api("/users/@me/no-such", { method, cookie: main.cookie }), 404, "NOT_FOUND");
    }
  });

  test("JSON nested deeper than 32 levels is 422 VALIDATION_ERROR (too_deep), also on signup", async () => {
    const deep = "[".repeat(40) + "]".repeat(40);
    const raw = `{"email":"deep@example.com","password":"long enough pw","x":${deep}}`;
    const res = await srv.api("/auth/signup", { method: "POST", raw, headers: { "content-type": "application/json" } });
    const err = expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(err.errors!.map((e) => e.code)).toContain("too_deep");
    expectEnvelope(await srv.api("/auth/login", { body: { email: "deep@example.com", password: "long enough pw" } }), 401);
  });

  test("a declared body over 1 MB is 413 PAYLOAD_TOO_LARGE in the envelope", async () => {
    const raw = JSON.stringify({ email: main.email, password: "x".repeat(1_100_000) });
    expectEnvelope(await srv.api("/auth/login", { method: "POST", raw, headers: { "content-type": "application/json" } }), 413, "PAYLOAD_TOO_LARGE");
    expectEnvelope(
      await srv.api("/users/@me/projects", { method: "POST", cookie: main.cookie, raw: JSON.stringify({ name: "y".repeat(1_100_000) }), headers: { "content-type": "application/json" } }),
      413,
      "PAYLOAD_TOO_LARGE",
    );
  });

  test("validation errors name the field with { field, message, code } on project and member bodies", async () => {
    expectValidation(await srv.api("/users/@me/projects", { cookie: main.cookie, body: { name: 42 } }), "name");
    expectValidation(await srv.api(`/projects/${main.projectId}/members`, { cookie: main.cookie, body: { email: "not-an-email" } }), "email");
    expectValidation(await srv.api(`/projects/${main.projectId}/members`, { cookie: main.cookie, body: {} }), "email");
  });
});

describe("rate limit: per project, shared by all its keys and sessions", () => {
  test("rotated keys and sessions (with X-Project-Id, or naming the project in the path) spend one budget, with the RateLimit headers", async () => {
    const rl = await startServer({ config: { rateLimit: 6 } });
    try {
      const acc = await createAccount(rl.api, "RL more");
      const remaining = (res: { status: number; headers: Headers; text: string }) => {
        if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${res.text}`);
        expect(res.headers.get("ratelimit-limit")).toBe("6");
        expect(res.headers.get("ratelimit-reset")).toMatch(/^\d+$/);
        return res.headers.get("ratelimit-remaining");
      };
      expect(remaining(await rl.api("/templates", { key: acc.secretKey }))).toBe("5");
      const rot = await rl.api(`/users/@me/projects/${acc.projectId}/regenerate-keys`, { method: "POST", cookie: acc.cookie });
      expect(rot.status).toBe(200);
      expect(remaining(await rl.api(`/domains/project/${acc.projectId}`, { key: rot.body.secret }))).toBe("4");
      expect(remaining(await rl.api("/templates", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId } }))).toBe("3");
      // Domain and /projects/:id endpoints name the project themselves: a member's session there is the project's traffic too.
      expect(remaining(await rl.api(`/domains/project/${acc.projectId}`, { cookie: acc.cookie }))).toBe("2");
      expect(remaining(await rl.api(`/projects/${acc.projectId}/members`, { cookie: acc.cookie }))).toBe("1");
      expect(remaining(await rl.api("/v1/track", { key: rot.body.public, body: { email: "a@rl.example", event: "e" } }))).toBe("0");
      const over = await rl.api("/templates", { key: rot.body.secret });
      expectEnvelope(over, 429, "RATE_LIMIT_EXCEEDED");
      expect(over.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(over.headers.get("ratelimit-remaining")).toBe("0");
      for (const res of [
        await rl.api(`/domains/project/${acc.projectId}`, { cookie: acc.cookie }),
        await rl.api("/domains", { cookie: acc.cookie, body: { projectId: acc.projectId, domain: "rl-session.example" } }),
        await rl.api(`/projects/${acc.projectId}/setup-state`, { cookie: acc.cookie }),
        await rl.api(`/projects/${acc.projectId}/members`, { cookie: acc.cookie }),
      ]) {
        expectEnvelope(res, 429, "RATE_LIMIT_EXCEEDED");
        expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
      }
      rl.clock.advance(61_000);
      expect((await rl.api(`/domains/project/${acc.projectId}`, { key: rot.body.secret })).body).toEqual([]);
    } finally {
      await rl.close();
    }
  });
});

describe("GET /config reflects the configuration without revealing it", () => {
  test("relay, billing and inbound SMTP on, signups off: features say so; no secret in the answer; signup is 403 FORBIDDEN", async () => {
    const on = await startServer({
      config: {
        disableSignups: true,
        inboundSmtpPort: await freeTcpPort(),
        smtpRelay: "smtp://relayuser:relay-pass-123@127.0.0.1:2525",
        stripeSecretKey: "sk_test_config_secret_1",
        stripeWebhookSecret: "whsec_config_secret_2",
        stripePriceId: "price_123",
      },
    });
    try {
      const res = await on.api("/config");
      expect(res.status).toBe(200);
      expect(res.body.features).toMatchObject({ relay: true, billing: true, signups: false, inboundSmtp: true });
      expect(typeof res.body.features.tracking).toBe("boolean");
      for (const s of ["relay-pass-123", "relayuser", "sk_test_config_secret_1", "whsec_config_secret_2"]) expect(res.text).not.toContain(s);
      const signup = await on.api("/auth/signup", { body: { email: freshEmail(), password: PASSWORD } });
      expectEnvelope(signup, 403, "FORBIDDEN");
      expect(cookieOf(signup, "token")).toBeNull();
    } finally {
      await on.close();
    }
  });
});

describe("operator CLI", () => {
  const MAIN = join(import.meta.dir, "../../src/main.ts");
  type CliResult = { code: number | null; out: string; err: string };
  async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
    const p = Bun.spawn([process.execPath, MAIN, ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  }
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "mailsvc-bb-more-cli-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("migrate creates the database and its folder (--db flag and MAILSVC_DB); exit 0", async () => {
    const a = join(dir, "flag", "sub", "m.db");
    const b = join(dir, "env", "m.db");
    const [ra, rb] = await Promise.all([cli(["migrate", "--db", a]), cli(["migrate"], { MAILSVC_DB: b })]);
    expect(ra.code).toBe(0);
    expect(rb.code).toBe(0);
    expect(existsSync(a)).toBe(true);
    expect(existsSync(b)).toBe(true);
    // Running it again is fine.
    expect((await cli(["migrate", "--db", a])).code).toBe(0);
  });

  test("--help lists every setting's flag", async () => {
    const r = await cli(["--help"]);
    expect(r.code).toBe(0);
    for (const flag of [
      "--db", "--host", "--port", "--public-url", "--hostname", "--jwt-secret", "--disable-signups", "--dns-servers", "--mx-port",
      "--smtp-relay", "--inbound-smtp-port", "--system-from", "--rate-limit", "--idempotency-ttl-hours", "--domain-check-interval",
      "--retry-schedule",
    ]) {
      expect(r.out).toContain(flag);
    }
  });

  test("user create: lower-cased email, JSON on stdout, flags win over the environment; errors exit non-zero", async () => {
    const db = join(dir, "users.db");
    const r = await cli(["user", "create", "--email", "Op.Person@Example.COM", "--password", "a long password", "--project", "CLI", "--db", db], {
      MAILSVC_DB: join(dir, "ignored", "x.db"),
    });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.user.email).toBe("op.person@example.com");
    expect(out.project.name).toBe("CLI");
    expect(existsSync(db)).toBe(true);
    expect(existsSync(join(dir, "ignored", "x.db"))).toBe(false);
    const [missingEmail, missingPassword, taken, unknownCmd, backupNoFile, badEmail] = await Promise.all([
      cli(["user", "create", "--password", "a long password", "--db", db]),
      cli(["user", "create", "--email", "p2@example.com", "--db", db]),
      cli(["user", "create", "--email", "OP.PERSON@example.com", "--password", "a long password", "--db", db]),
      cli(["no-such-command", "--db", db]),
      cli(["backup", "--db", db]),
      // An address login would refuse (422) must not become a user who can never sign in.
      cli(["user", "create", "--email", "not-an-email", "--password", "a long password", "--db", db]),
    ]);
    // Creating users is the operator's way in when signups are disabled.
    const off = await cli(["user", "create", "--email", "off@example.com", "--password", "a long password", "--db", db], { MAILSVC_DISABLE_SIGNUPS: "true" });
    expect(off.code).toBe(0);
    for (const [name, res] of Object.entries({ missingEmail, missingPassword, taken, unknownCmd, backupNoFile, badEmail })) {
      if (res.code === 0) throw new Error(`${name}: expected a non-zero exit, got 0: ${res.out}`);
      expect(res.err.length + res.out.length).toBeGreaterThan(0);
    }
  });

  test("backup <file> of a stopped database writes a usable copy; exit 0", async () => {
    const db = join(dir, "src.db");
    const made = await cli(["user", "create", "--email", "b@example.com", "--password", "a long password", "--project", "B", "--db", db]);
    expect(made.code).toBe(0);
    const key = JSON.parse(made.out).project.secret;
    const copy = join(dir, "bk", "copy.db");
    const r = await cli(["backup", copy, "--db", db]);
    expect(r.code).toBe(0);
    const s = await startServer({ dbPath: copy, config: { db: copy } }); // the CLI's SQLite file, on either suite engine
    try {
      expect((await s.api("/templates", { key })).status).toBe(200);
      expect((await s.api("/auth/login", { body: { email: "b@example.com", password: "a long password" } })).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let owner: Account;
let admin: Account;
let member: Account;
beforeAll(async () => {
  srv = await startServer();
  owner = await createAccount(srv.api, "Team");
  admin = await createAccount(srv.api, "admin's own");
  member = await createAccount(srv.api, "member's own");
});
afterAll(() => srv.close());

const path = (suffix = "") => `/projects/${owner.projectId}/members${suffix}`;
const as = (acc: Account) => ({ cookie: acc.cookie });

test("invite, list, change role and remove, with role rules", async () => {
  const inv = await srv.api(path(), { ...as(owner), body: { email: admin.email, role: "ADMIN" } });
  expect(inv.status).toBe(201);
  expect(inv.body).toMatchObject({ userId: admin.userId, role: "ADMIN" });
  expect((await srv.api(path(), { ...as(owner), body: { email: admin.email } })).status).toBe(409);
  expect((await srv.api(path(), { ...as(owner), body: { email: "nobody@example.com" } })).status).toBe(404);

  // An admin invites a member but cannot create an owner.
  expect((await srv.api(path(), { ...as(admin), body: { email: member.email, role: "OWNER" } })).status).toBe(403);
  expect((await srv.api(path(), { ...as(admin), body: { email: member.email } })).status).toBe(201);

  // A member can read but not manage.
  const list = await srv.api(path(), as(member));
  expect(list.status).toBe(200);
  expect(list.body.map((m: any) => m.role).sort()).toEqual(["ADMIN", "MEMBER", "OWNER"]);
  expect((await srv.api(path(`/${admin.userId}`), { ...as(member), method: "PATCH", body: { role: "MEMBER" } })).status).toBe(403);
  expect((await srv.api(`/users/@me/projects/${owner.projectId}/regenerate-keys`, { ...as(member), method: "POST" })).status).toBe(403);
  expect((await srv.api(`/users/@me/projects/${owner.projectId}`, { ...as(admin), method: "DELETE" })).status).toBe(403);

  // Admin cannot demote or remove the owner; nobody can remove or demote the last owner.
  expect((await srv.api(path(`/${owner.userId}`), { ...as(admin), method: "DELETE" })).status).toBe(403);
  expect((await srv.api(path(`/${owner.userId}`), { ...as(owner), method: "PATCH", body: { role: "ADMIN" } })).status).toBe(409);
  expect((await srv.api(path(`/${owner.userId}`), { ...as(owner), method: "DELETE" })).status).toBe(409);

  // Promote the admin to owner; now the first owner may leave.
  const promote = await srv.api(path(`/${admin.userId}`), { ...as(owner), method: "PATCH", body: { role: "OWNER" } });
  expect(promote.status).toBe(200);
  expect(promote.body.role).toBe("OWNER");
  expect((await srv.api(path(`/${owner.userId}`), { ...as(owner), method: "DELETE" })).status).toBe(200);
  expect((await srv.api(path(), as(owner))).status).toBe(404);

  // A member may leave on their own.
  expect((await srv.api(path(`/${member.userId}`), { ...as(member), method: "DELETE" })).status).toBe(200);
  const after = await srv.api(path(), as(admin));
  expect(after.body.map((m: any) => m.email)).toEqual([admin.email]);

  // Bad role value is 422.
  expect((await srv.api(path(`/${admin.userId}`), { ...as(admin), method: "PATCH", body: { role: "KING" } })).status).toBe(422);
});

test("project settings: rename, tracking mode, delete", async () => {
  const acc = await createAccount(srv.api, "Settings");
  const r = await srv.api(`/users/@me/projects/${acc.projectId}`, { ...as(acc), method: "PATCH", body: { name: "Renamed", tracking: "MARKETING_ONLY" } });
  expect(r.status).toBe(200);
  expect(r.body).toMatchObject({ name: "Renamed", tracking: "MARKETING_ONLY", disabled: false, disabledReason: null });
  expect((await srv.api(`/users/@me/projects/${acc.projectId}`, { ...as(acc), method: "PATCH", body: { tracking: "SOMETIMES" } })).status).toBe(422);
  expect((await srv.api(`/users/@me/projects/${acc.projectId}`, { ...as(acc), method: "DELETE" })).status).toBe(200);
  expect((await srv.api(`/projects/${acc.projectId}/members`, { key: acc.secretKey })).status).toBe(401);
});

// POST /users/@me/projects/:id/reset (OWNER): nothing of the project's audience and mail is left,
// the project, keys, members, domains and billing stay; another project is untouched. Also the
// /security shape and setup-state.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { rawGet } from "../../src/db/raw";
import { projectTables } from "../../src/modules/projects/reset-store";
import { expectEnvelope } from "../blackbox/support";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import { createAccount, type Account } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { IMAGES } from "../uploads/support";

setDefaultTimeout(30_000);

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

const from = `hello@${SENDER}`;

async function populate(a: Account, tag: string) {
  const api = env.srv.api;
  expect((await api("/contacts", { key: a.secretKey, body: { email: `c1-${tag}@${RCPT}`, data: { plan: "pro" } } })).status).toBe(201);
  expect((await api("/v1/track", { key: a.publicKey, body: { email: `c2-${tag}@${RCPT}`, event: "signup", data: { plan: "free" } } })).status).toBe(200);
  expect((await api("/templates", { key: a.secretKey, body: { name: `T ${tag}`, subject: "S", body: "<p>B</p>", from } })).status).toBe(201);
  const sent = await api("/v1/send", { key: a.secretKey, body: { to: `c3-${tag}@${RCPT}`, from, subject: "Hi", body: "<p>x</p>" }, headers: { "idempotency-key": `idem-${tag}` } });
  expect(sent.status).toBe(200);
  await waitForView(env.srv, a.secretKey, sent.body.data.emails[0].email, "DELIVERED");
  const f = new FormData();
  f.append("file", new File([IMAGES.png.bytes], "a.png"));
  const up = await api("/uploads/image", { method: "POST", key: a.secretKey, raw: f });
  expect(up.status).toBe(201);
  return { uploadUrl: up.body.url as string };
}

async function rowsOf(projectId: string) {
  const { db, store } = env.srv.ctx;
  const out: Record<string, number> = {};
  for (const t of await projectTables(db, store.engine)) {
    const n = (await rawGet<{ n: number }>(db, store.engine, `SELECT count(*) AS n FROM "${t}" WHERE project_id = ?`, [projectId]))!.n;
    if (n) out[t] = n;
  }
  return out;
}

describe("project reset", () => {
  test("OWNER only; wipes contacts, events, emails, templates, uploads, jobs, idempotency keys in one go; keeps keys, members, domains, billing", async () => {
    const a = env.acct;
    const bystander = await createAccount(env.srv.api);
    const { addVerifiedDomain } = await import("../domains/support");
    await addVerifiedDomain(env.srv.api, env.dns, bystander, "bystander.sender.test");
    const { uploadUrl } = await populate(a, "a");
    await env.srv.api(`/users/@me/projects/${a.projectId}/billing-limits`, { method: "PUT", cookie: a.cookie, body: { transactional: 1000 } });
    const admin = await createAccount(env.srv.api);
    expect((await env.srv.api(`/projects/${a.projectId}/members`, { cookie: a.cookie, body: { email: admin.email, role: "ADMIN" } })).status).toBe(201);
    const theirs = await env.srv.api("/v1/send", { key: bystander.secretKey, body: { to: `b@${RCPT}`, from: "x@bystander.sender.test", subject: "s", body: "b" } });
    expect(theirs.status).toBe(200);
    await waitForView(env.srv, bystander.secretKey, theirs.body.data.emails[0].email, "DELIVERED");
    const bystanderBefore = await rowsOf(bystander.projectId);
    expect(Object.keys(await rowsOf(a.projectId))).toEqual(expect.arrayContaining(["contacts", "events", "emails", "email_contents", "templates", "uploads"]));

    expectEnvelope(await env.srv.api(`/users/@me/projects/${a.projectId}/reset`, { method: "POST", cookie: admin.cookie }), 403, "FORBIDDEN");
    expectEnvelope(await env.srv.api(`/users/@me/projects/${a.projectId}/reset`, { method: "POST", cookie: bystander.cookie }), 404, "NOT_FOUND");
    expect((await env.srv.api(`/users/@me/projects/${a.projectId}/reset`, { method: "POST", key: a.secretKey })).status).toBe(401);
    expect(Object.keys(await rowsOf(a.projectId)).length).toBeGreaterThan(0);

    const r = await env.srv.api(`/users/@me/projects/${a.projectId}/reset`, { method: "POST", cookie: a.cookie });
    expect(r.status).toBe(200);
    expect(await rowsOf(a.projectId)).toEqual({});
    expect(await rowsOf(bystander.projectId)).toEqual(bystanderBefore);

    const api = env.srv.api;
    expect((await api("/contacts", { key: a.secretKey })).body.total).toBe(0);
    expect((await api("/templates", { key: a.secretKey })).body.total).toBe(0);
    expect((await api("/emails", { key: a.secretKey })).body.data).toEqual([]);
    expect((await api("/uploads", { key: a.secretKey })).body.total).toBe(0);
    expect((await fetch(uploadUrl)).status).toBe(404);
    // Kept: the project and its keys, members, domains, billing limits and this month's consumption.
    const projects = (await api("/users/@me/projects", { cookie: a.cookie })).body;
    expect(projects.find((p: any) => p.id === a.projectId)).toMatchObject({ public: a.publicKey, secret: a.secretKey });
    expect((await api(`/projects/${a.projectId}/members`, { key: a.secretKey })).body.map((m: any) => m.email)).toContain(admin.email);
    const domains = (await api(`/domains/project/${a.projectId}`, { key: a.secretKey })).body;
    expect(domains.map((d: any) => d.domain)).toContain(SENDER);
    const c = (await api(`/users/@me/projects/${a.projectId}/billing-consumption`, { cookie: a.cookie })).body;
    expect(c.transactional).toMatchObject({ used: 1, limit: 1000 });
    // The keys keep working, the domain still sends, the idempotency key may be used again.
    const again = await api("/v1/send", { key: a.secretKey, body: { to: `c3-a@${RCPT}`, from, subject: "Again", body: "<p>y</p>" }, headers: { "idempotency-key": "idem-a" } });
    expect(again.status).toBe(200);
    await waitForView(env.srv, a.secretKey, again.body.data.emails[0].email, "DELIVERED");
    expect((await api("/v1/track", { key: a.publicKey, body: { email: `new@${RCPT}`, event: "signup" } })).status).toBe(200);
  });
});

describe("security and setup-state", () => {
  test("/security (both paths) has the decided shape with rates in percent", async () => {
    const a = env.acct;
    for (const res of [
      await env.srv.api(`/users/@me/projects/${a.projectId}/security`, { cookie: a.cookie }),
      await env.srv.api(`/projects/${a.projectId}/security`, { key: a.secretKey }),
    ]) {
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ windowDays: 30, disabled: false, disabledReason: null, suspensions: [] });
      for (const k of ["bounceRate", "complaintRate", "sends", "bounces", "complaints"]) expect(typeof res.body[k]).toBe("number");
      expect(res.body.bounceRate).toBeGreaterThanOrEqual(0);
      expect(res.body.bounceRate).toBeLessThanOrEqual(100);
    }
  });

  test("setup-state follows domains, first contact and first send", async () => {
    const fresh = await createAccount(env.srv.api);
    const state = async () => (await env.srv.api(`/projects/${fresh.projectId}/setup-state`, { key: fresh.secretKey })).body;
    expect(await state()).toMatchObject({ hasDomain: false, hasVerifiedDomain: false, hasContacts: false, hasSentEmail: false, completed: false });
    const { addVerifiedDomain } = await import("../domains/support");
    await addVerifiedDomain(env.srv.api, env.dns, fresh, "fresh.sender.test");
    expect(await state()).toMatchObject({ hasDomain: true, hasVerifiedDomain: true, hasContacts: false, hasSentEmail: false });
    await env.srv.api("/contacts", { key: fresh.secretKey, body: { email: `first@${RCPT}` } });
    expect(await state()).toMatchObject({ hasContacts: true, hasSentEmail: false });
    const sendFrom = env.srv.clock.now();
    await env.srv.api("/v1/send", { key: fresh.secretKey, body: { to: `first@${RCPT}`, from: "a@fresh.sender.test", subject: "s", body: "b" } });
    const s = await state();
    expect(s).toMatchObject({ hasSentEmail: true, completed: true });
    expectTimeBetween(s.firstSendAt, sendFrom, env.srv.clock.now());
  });
});

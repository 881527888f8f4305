// Monthly caps per category: /v1/send (20 parallel requests against a cap of 10), inbound mail, the
// consumeQuota contract other modules use, limits and consumption endpoints, roles.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";

setDefaultTimeout(30_000);
import { consumeQuota } from "../../src/modules/billing";
import { expectEnvelope } from "../blackbox/support";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import { plainMessage } from "../inbound/support";
import { sendSmtp } from "../support/smtp-client";
import { createAccount, freeTcpPort, type Account } from "../support/server";
import { waitFor } from "../support/wait";

let env: DeliveryEnv;
let inboundPort: number;
beforeAll(async () => {
  inboundPort = await freeTcpPort();
  env = await sendEnv({ config: { inboundSmtpPort: inboundPort } });
});
afterAll(() => env.close());

const limitsPath = (a: Account) => `/users/@me/projects/${a.projectId}/billing-limits`;
const consumptionPath = (a: Account) => `/users/@me/projects/${a.projectId}/billing-consumption`;
const from = `hello@${SENDER}`;

async function member(owner: Account, role: "ADMIN" | "MEMBER") {
  const m = await createAccount(env.srv.api);
  const r = await env.srv.api(`/projects/${owner.projectId}/members`, { cookie: owner.cookie, body: { email: m.email, role } });
  expect(r.status).toBe(201);
  return m;
}

describe("billing-limits and billing-consumption", () => {
  test("limits default to unlimited; PUT is partial and null removes a cap; consumption has the period and percentages", async () => {
    const a = env.acct;
    const get = await env.srv.api(limitsPath(a), { cookie: a.cookie });
    expect(get.status).toBe(200);
    expect(get.body).toEqual({ transactional: null, campaigns: null, workflows: null, inbound: null });

    const put = await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { campaigns: 500, workflows: 0 } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ transactional: null, campaigns: 500, workflows: 0, inbound: null });
    const put2 = await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { workflows: null, inbound: 3 } });
    expect(put2.body).toEqual({ transactional: null, campaigns: 500, workflows: null, inbound: 3 });
    expect((await env.srv.api(limitsPath(a), { cookie: a.cookie })).body).toEqual(put2.body);

    for (const bad of [{ campaigns: -1 }, { campaigns: 1.5 }, { campaigns: "ten" }]) {
      expectEnvelope(await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: bad }), 422, "VALIDATION_ERROR");
    }

    const c = await env.srv.api(consumptionPath(a), { cookie: a.cookie });
    expect(c.status).toBe(200);
    const now = new Date(env.srv.clock.now());
    expect(c.body.periodStart).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString());
    expect(c.body.periodEnd).toBe(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString());
    expect(c.body.campaigns).toEqual({ used: 0, limit: 500, percentage: 0 });
    expect(c.body.transactional).toEqual({ used: 0, limit: null, percentage: 0 });
    expect(c.body.inbound).toMatchObject({ used: 0, limit: 3, percentage: 0 });
    await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { campaigns: null, inbound: null } });
  });

  test("roles: OWNER and ADMIN may PUT; a MEMBER reads but gets 403; a stranger 404; keys are refused", async () => {
    const owner = await createAccount(env.srv.api);
    const admin = await member(owner, "ADMIN");
    const plain = await member(owner, "MEMBER");
    const stranger = await createAccount(env.srv.api);
    const path = limitsPath(owner);
    expect((await env.srv.api(path, { method: "PUT", cookie: admin.cookie, body: { transactional: 7 } })).body.transactional).toBe(7);
    expectEnvelope(await env.srv.api(path, { method: "PUT", cookie: plain.cookie, body: { transactional: 9 } }), 403, "FORBIDDEN");
    expect((await env.srv.api(path, { cookie: plain.cookie })).body.transactional).toBe(7);
    expect((await env.srv.api(consumptionPath(owner), { cookie: plain.cookie })).status).toBe(200);
    expectEnvelope(await env.srv.api(path, { cookie: stranger.cookie }), 404, "NOT_FOUND");
    expectEnvelope(await env.srv.api(path, { method: "PUT", cookie: stranger.cookie, body: { transactional: 1 } }), 404, "NOT_FOUND");
    expect((await env.srv.api(path, { key: owner.secretKey })).status).toBe(401);
  });
});

describe("transactional cap on /v1/send", () => {
  test("20 parallel sends against a cap of 10: exactly 10 accepted and delivered, 10 answered 402 with details", async () => {
    const a = await createAccount(env.srv.api);
    const { addVerifiedDomain } = await import("../domains/support");
    await addVerifiedDomain(env.srv.api, env.dns, a, "cap.sender.test");
    await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { transactional: 10 } });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        env.srv.api("/v1/send", { key: a.secretKey, body: { to: `cap${i}@${RCPT}`, from: "x@cap.sender.test", subject: "Cap", body: "<p>hi</p>" } }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(10);
    for (const r of refused) {
      const err = expectEnvelope(r, 402, "BILLING_LIMIT_EXCEEDED");
      expect(err.details).toMatchObject({ category: "transactional", used: 10, limit: 10 });
    }
    for (const r of ok) await waitForView(env.srv, a.secretKey, r.body.data.emails[0].email, "DELIVERED");
    const delivered = env.sink.messages.filter((m) => m.to.some((t: string) => /^cap\d+@/.test(t)));
    expect(delivered).toHaveLength(10);
    // Nothing of a refused request was written: 10 contacts, 10 emails.
    const emails = await env.srv.ctx.db.selectFrom("emails").select("id").where("project_id", "=", a.projectId).execute();
    expect(emails).toHaveLength(10);
    const contacts = await env.srv.api("/contacts", { key: a.secretKey });
    expect(contacts.body.total).toBe(10);
    const c = await env.srv.api(consumptionPath(a), { cookie: a.cookie });
    expect(c.body.transactional).toEqual({ used: 10, limit: 10, percentage: 100 });
  }, 30_000);

  test("a multi-recipient send that would pass the cap is refused whole; the next calendar month starts at zero", async () => {
    const a = await createAccount(env.srv.api);
    const { addVerifiedDomain } = await import("../domains/support");
    await addVerifiedDomain(env.srv.api, env.dns, a, "cap2.sender.test");
    await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { transactional: 3 } });
    const send = (to: string[]) => env.srv.api("/v1/send", { key: a.secretKey, body: { to, from: "x@cap2.sender.test", subject: "s", body: "b" } });
    expect((await send([`m1@${RCPT}`, `m2@${RCPT}`])).status).toBe(200);
    const err = expectEnvelope(await send([`m3@${RCPT}`, `m4@${RCPT}`]), 402, "BILLING_LIMIT_EXCEEDED");
    expect(err.details).toMatchObject({ category: "transactional", used: 2, limit: 3 });
    expect((await env.srv.api("/contacts", { key: a.secretKey })).body.total).toBe(2);
    expect((await send([`m3@${RCPT}`])).status).toBe(200);
    expect((await env.srv.api(consumptionPath(a), { cookie: a.cookie })).body.transactional).toEqual({ used: 3, limit: 3, percentage: 100 });

    const now = new Date(env.srv.clock.now());
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) + 1000;
    const clock = env.srv.clock;
    clock.advance(nextMonth - clock.now());
    try {
      const c = await env.srv.api(consumptionPath(a), { cookie: a.cookie });
      expect(c.body.periodStart).toBe(new Date(nextMonth - 1000).toISOString());
      expect(c.body.transactional.used).toBe(0);
      expect((await send([`m5@${RCPT}`])).status).toBe(200);
    } finally {
      clock.set(Date.now());
    }
  });
});

describe("consumeQuota (the function campaigns and workflows call in their own transaction)", () => {
  test("campaigns and workflows are charged per category; a refusal rolls back the caller's transaction", async () => {
    const a = await createAccount(env.srv.api);
    const ctx = env.srv.ctx;
    await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { campaigns: 100, workflows: 1 } });
    await ctx.db.transaction().execute((trx) => consumeQuota(trx, ctx, a.projectId, "campaigns", 60));
    let thrown: any;
    try {
      await ctx.db.transaction().execute(async (trx) => {
        await trx.insertInto("settings").values({ key: `probe-${a.projectId}`, value: "x" }).execute();
        await consumeQuota(trx, ctx, a.projectId, "campaigns", 41);
      });
    } catch (e) {
      thrown = e;
    }
    expect(thrown?.status).toBe(402);
    expect(thrown?.code).toBe("BILLING_LIMIT_EXCEEDED");
    expect(thrown?.extra?.details).toMatchObject({ category: "campaigns", used: 60, limit: 100 });
    expect(await ctx.db.selectFrom("settings").select("key").where("key", "=", `probe-${a.projectId}`).executeTakeFirst()).toBeUndefined();
    await consumeQuota(ctx.db, ctx, a.projectId, "workflows", 1);
    await expect(consumeQuota(ctx.db, ctx, a.projectId, "workflows", 1)).rejects.toMatchObject({ status: 402 });
    const c = (await env.srv.api(consumptionPath(a), { cookie: a.cookie })).body;
    expect(c.campaigns).toEqual({ used: 60, limit: 100, percentage: 60 });
    expect(c.workflows).toEqual({ used: 1, limit: 1, percentage: 100 });
    expect(c.transactional.used).toBe(0);
  });
});

describe("inbound cap", () => {
  test("inbound mail over the cap is dropped and counted", async () => {
    const a = env.acct;
    await env.srv.api(limitsPath(a), { method: "PUT", cookie: a.cookie, body: { inbound: 2 } });
    for (let i = 0; i < 3; i++) {
      const r = await sendSmtp(inboundPort, { from: `cust${i}@customer.example`, to: [`support@${SENDER}`], raw: plainMessage({ from: `cust${i}@customer.example`, to: `support@${SENDER}`, subject: `Q${i}` }) });
      expect(r.ok).toBe(true);
    }
    const consumption = async () => (await env.srv.api(consumptionPath(a), { cookie: a.cookie })).body;
    const c = await waitFor(consumption, { until: (c) => c.inbound.used + c.inbound.dropped >= 3, what: "3 inbound messages counted" });
    expect(c.inbound).toEqual({ used: 2, limit: 2, percentage: 100, dropped: 1 });
    const received = await env.srv.ctx.db.selectFrom("events").select("id").where("project_id", "=", a.projectId).where("name", "=", "email.received").execute();
    expect(received).toHaveLength(2);
    const contact = await env.srv.api(`/contacts?search=cust2`, { key: a.secretKey });
    expect(contact.body.total).toBe(0);
  });
});

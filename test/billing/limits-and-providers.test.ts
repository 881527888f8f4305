// Black-box: billing, off (no payment provider: limits, consumption, caps) and on (Stripe keys set: checkout,
// webhook, portal). Written from api-spec.md, decisions.md ("Billing, security, misc") and docs/api.md (the API
// guide); never from the code. Moved here from blackbox/analytics-billing.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { expectEnvelope, expectOk, expectValidation, newProject } from "../blackbox/support";
import { addVerifiedDomain } from "../domains/support";
import { addresses } from "../support/api";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import type { TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

const rcpt = addresses("billing-inbox.example");
let env: DeliveryEnv, srv: TestServer, dns: TestDns, acc: Account;
/** Another user with a project of their own. */
let stranger: Account;
beforeAll(async () => {
  env = await deliveryEnv({ name: "BB billing", mailDomain: "billing-inbox.example" });
  ({ srv, dns, acct: acc } = env);
  stranger = await createAccount(srv.api, "BB billing stranger");
});
afterAll(() => env?.close());

const sendOne = (a: Account, from: string, to: string | string[], body = "<p>Hi</p>") =>
  srv.api("/v1/send", { key: a.secretKey, body: { to, from, subject: "Hello", body } });

describe("billing (no payment provider configured)", () => {
  const BFROM = "bill@bill.bb.example";
  let b: Account;
  let member: Account;
  let admin: Account;
  const url = (a: Account, what: string) => `/users/@me/projects/${a.projectId}/${what}`;

  beforeAll(async () => {
    b = await newProject(srv.api, acc, "Billing");
    await addVerifiedDomain(srv.api, dns, b, "bill.bb.example");
    member = await createAccount(srv.api, "Billing member");
    admin = await createAccount(srv.api, "Billing admin");
    expectOk(await srv.api(`/projects/${b.projectId}/members`, { cookie: b.cookie, body: { email: member.email, role: "MEMBER" } }));
    expectOk(await srv.api(`/projects/${b.projectId}/members`, { cookie: b.cookie, body: { email: admin.email, role: "ADMIN" } }));
  });

  test("checkout and billing-portal answer 400 BILLING_DISABLED; invoices are []", async () => {
    expectEnvelope(await srv.api(url(b, "checkout"), { method: "POST", cookie: b.cookie }), 400, "BILLING_DISABLED");
    expectEnvelope(await srv.api(url(b, "billing-portal"), { method: "POST", cookie: b.cookie }), 400, "BILLING_DISABLED");
    expectEnvelope(await srv.api(url(b, "checkout"), { method: "POST", cookie: admin.cookie }), 400, "BILLING_DISABLED");
    const inv = await srv.api(url(b, "billing-invoices"), { cookie: b.cookie });
    expect(inv.status).toBe(200);
    expect(inv.body).toEqual([]);
    expect((await srv.api("/config")).body.features.billing).toBe(false);
  });

  test("billing-limits: { transactional, campaigns, workflows, inbound }, null = unlimited by default", async () => {
    const res = await srv.api(url(b, "billing-limits"), { cookie: b.cookie });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ transactional: null, campaigns: null, workflows: null, inbound: null });
  });

  test("PUT billing-limits is partial (OWNER, ADMIN); bad values are 422; a MEMBER reads but cannot write (403)", async () => {
    const put = await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: b.cookie, body: { transactional: 100 } });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ transactional: 100, campaigns: null, workflows: null, inbound: null });
    const byAdmin = await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: admin.cookie, body: { inbound: 0, campaigns: 10 } });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toEqual({ transactional: 100, campaigns: 10, workflows: null, inbound: 0 });
    const unset = await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: b.cookie, body: { campaigns: null, inbound: null } });
    expect(unset.body).toEqual({ transactional: 100, campaigns: null, workflows: null, inbound: null });
    expectValidation(await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: b.cookie, body: { transactional: -1 } }), "transactional");
    expectValidation(await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: b.cookie, body: { workflows: 1.5 } }), "workflows");
    expectValidation(await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: b.cookie, body: { campaigns: "lots" } }), "campaigns");
    expectEnvelope(await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: member.cookie, body: { transactional: 1 } }), 403);
    const read = await srv.api(url(b, "billing-limits"), { cookie: member.cookie });
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ transactional: 100, campaigns: null, workflows: null, inbound: null });
  });

  test("billing endpoints: another user's project is 404, an API key instead of the session 401", async () => {
    for (const what of ["billing-limits", "billing-consumption", "billing-invoices"]) {
      expectEnvelope(await srv.api(url(b, what), { cookie: stranger.cookie }), 404, "NOT_FOUND");
      expectEnvelope(await srv.api(url(b, what), { key: b.secretKey }), 401);
    }
    expectEnvelope(await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: stranger.cookie, body: { transactional: 1 } }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(url(b, "checkout"), { method: "POST", cookie: stranger.cookie }), 404, "NOT_FOUND");
  });

  test("billing-consumption: { periodStart, periodEnd, <category>: { used, limit, percentage } } for the calendar month (UTC)", async () => {
    const res = await srv.api(url(b, "billing-consumption"), { cookie: b.cookie });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["campaigns", "inbound", "periodEnd", "periodStart", "transactional", "workflows"]);
    const now = new Date(srv.clock.now());
    const monthStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    const nextMonth = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
    expect(Date.parse(res.body.periodStart)).toBe(monthStart);
    const end = Date.parse(res.body.periodEnd);
    expect(end).toBeGreaterThanOrEqual(nextMonth - 1000);
    expect(end).toBeLessThanOrEqual(nextMonth);
    expect(res.body.transactional).toEqual({ used: 0, limit: 100, percentage: 0 });
    expect(res.body.campaigns).toEqual({ used: 0, limit: null, percentage: 0 });
    expect(res.body.workflows).toEqual({ used: 0, limit: null, percentage: 0 });
    expect(res.body.inbound).toMatchObject({ used: 0, limit: null, percentage: 0 });
    expect(res.body.inbound.dropped).toBe(0);
  });

  test("a send that would pass the cap is 402 BILLING_LIMIT_EXCEEDED and sends nothing; consumption counts sends", async () => {
    expectOk(await sendOne(b, BFROM, rcpt("bill")));
    expect((await srv.api(url(b, "billing-limits"), { method: "PUT", cookie: b.cookie, body: { transactional: 2 } })).status).toBe(200);
    let c = (await srv.api(url(b, "billing-consumption"), { cookie: b.cookie })).body;
    expect(c.transactional).toEqual({ used: 1, limit: 2, percentage: 50 });
    const emailsBefore = (await srv.api("/emails", { key: b.secretKey })).body.total;
    const over = await sendOne(b, BFROM, [rcpt("bill"), rcpt("bill")]);
    const err = expectEnvelope(over, 402, "BILLING_LIMIT_EXCEEDED");
    expect(err.details).toEqual({ category: "transactional", used: 1, limit: 2, requested: 2 });
    expect((await srv.api("/emails", { key: b.secretKey })).body.total).toBe(emailsBefore);
    expectOk(await sendOne(b, BFROM, rcpt("bill")));
    c = (await srv.api(url(b, "billing-consumption"), { cookie: b.cookie })).body;
    expect(c.transactional).toEqual({ used: 2, limit: 2, percentage: 100 });
    expectEnvelope(await sendOne(b, BFROM, rcpt("bill")), 402, "BILLING_LIMIT_EXCEEDED");
  });
});

describe("billing with a payment provider (Stripe keys set)", () => {
  test("/config says billing: true; checkout answers { url }", async () => {
    const fake = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) => {
        const path = new URL(req.url).pathname;
        const obj = path.includes("customers")
          ? { id: "cus_test_1", object: "customer" }
          : { id: "cs_test_1", object: path.includes("portal") ? "billing_portal.session" : "checkout.session", url: "https://checkout.stripe.test/s/1" };
        return Response.json(obj);
      },
    });
    const on = await startServer({
      config: { stripeSecretKey: "sk_test_x", stripeWebhookSecret: "whsec_test", stripePriceId: "price_1", stripeApiBase: `http://127.0.0.1:${fake.port}` },
    });
    try {
      expect((await on.api("/config")).body.features.billing).toBe(true);
      const a = await createAccount(on.api, "Billing on");
      const res = await on.api(`/users/@me/projects/${a.projectId}/checkout`, { method: "POST", cookie: a.cookie });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ url: "https://checkout.stripe.test/s/1" });
      expect((await on.api(`/users/@me/projects/${a.projectId}/billing-invoices`, { cookie: a.cookie })).body).toEqual([]);
      // An unsigned or badly signed provider webhook is refused; a signed one is applied once.
      const payload = JSON.stringify({
        id: "evt_bb_1",
        object: "event",
        type: "checkout.session.completed",
        data: { object: { id: "cs_test_1", object: "checkout.session", client_reference_id: a.projectId, customer: "cus_test_1", subscription: "sub_test_1", metadata: { projectId: a.projectId } } },
      });
      const sign = (ts: number, secret = "whsec_test") => `t=${ts},v1=${createHmac("sha256", secret).update(`${ts}.${payload}`).digest("hex")}`;
      const post = (sig?: string) =>
        on.api("/webhooks/incoming/stripe", { method: "POST", raw: payload, headers: { "content-type": "application/json", ...(sig ? { "stripe-signature": sig } : {}) } });
      const now = Math.floor(on.clock.now() / 1000);
      expect((await post()).status).toBe(400);
      expect((await post(sign(now, "whsec_wrong"))).status).toBe(400);
      expect((await post(sign(now - 10 * 60))).status).toBe(400);
      const okRes = await post(sign(now));
      expect(okRes.status).toBe(200);
      expect(okRes.body.received).toBe(true);
      const again = await post(sign(now));
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ received: true, duplicate: true });
      // With a billing account, the portal answers { url } too; a MEMBER may not open either.
      const portal = await on.api(`/users/@me/projects/${a.projectId}/billing-portal`, { method: "POST", cookie: a.cookie });
      expect(portal.status).toBe(200);
      expect(portal.body).toEqual({ url: "https://checkout.stripe.test/s/1" });
      const m = await createAccount(on.api, "Billing on member");
      expectOk(await on.api(`/projects/${a.projectId}/members`, { cookie: a.cookie, body: { email: m.email, role: "MEMBER" } }));
      expectEnvelope(await on.api(`/users/@me/projects/${a.projectId}/checkout`, { method: "POST", cookie: m.cookie }), 403);
      expectEnvelope(await on.api(`/users/@me/projects/${a.projectId}/billing-portal`, { method: "POST", cookie: m.cookie }), 403);
    } finally {
      await on.close();
      fake.stop(true);
    }
  });
});

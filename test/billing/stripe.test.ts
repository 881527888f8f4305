// Stripe through the official SDK against a local fake of the Stripe API (a real HTTP server the
// test runs, reached through MAILSVC_STRIPE_API_BASE); webhooks signed with the SDK's test helper.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";

setDefaultTimeout(30_000);
import Stripe from "stripe";
import { expectEnvelope } from "../blackbox/support";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

const WEBHOOK_SECRET = "whsec_test_secret_for_mailsvc";

interface FakeStripe {
  url: string;
  requests: { method: string; path: string; form: URLSearchParams; auth: string | null }[];
  stop(): void;
}

/** The two Stripe API calls mailsvc makes, answered like Stripe does (form-encoded in, JSON out). */
function fakeStripe(): FakeStripe {
  const requests: FakeStripe["requests"] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const form = new URLSearchParams(await req.text());
      requests.push({ method: req.method, path, form, auth: req.headers.get("authorization") });
      if (req.method === "POST" && path === "/v1/checkout/sessions") {
        const id = `cs_test_${requests.length}`;
        return Response.json({ id, object: "checkout.session", mode: "subscription", url: `https://checkout.stripe.test/c/pay/${id}` });
      }
      if (req.method === "POST" && path === "/v1/billing_portal/sessions") {
        return Response.json({ id: "bps_test_1", object: "billing_portal.session", customer: form.get("customer"), url: "https://billing.stripe.test/p/session/bps_test_1" });
      }
      return Response.json({ error: { type: "invalid_request_error", message: `Unrecognized request URL (${req.method}: ${path})` } }, { status: 404 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, requests, stop: () => server.stop(true) };
}

let stripe: FakeStripe;
let srv: TestServer;
let acc: Account;
const signer = new Stripe("sk_test_unused");

beforeAll(async () => {
  stripe = fakeStripe();
  srv = await startServer({
    config: { stripeSecretKey: "sk_test_mailsvc", stripeWebhookSecret: WEBHOOK_SECRET, stripePriceId: "price_test_pro", stripeApiBase: stripe.url },
  });
  acc = await createAccount(srv.api);
});
afterAll(async () => {
  await srv.close();
  stripe.stop();
});

let eventSeq = 0;
function stripeEvent(type: string, object: Record<string, unknown>, id = `evt_test_${++eventSeq}`) {
  return JSON.stringify({ id, object: "event", type, api_version: "2025-01-01", created: Math.floor(srv.clock.now() / 1000), data: { object } });
}

function signed(payload: string, secret = WEBHOOK_SECRET, timestamp = Math.floor(srv.clock.now() / 1000)) {
  return signer.webhooks.generateTestHeaderStringAsync({ payload, secret, timestamp });
}

const webhook = (payload: string, signature: string | null) =>
  srv.api("/webhooks/incoming/stripe", { method: "POST", raw: payload, headers: { "content-type": "application/json", ...(signature ? { "stripe-signature": signature } : {}) } });

describe("Stripe billing", () => {
  test("/config reports billing on", async () => {
    expect((await srv.api("/config")).body.features.billing).toBe(true);
  });

  test("checkout creates a subscription session through the SDK and answers { url }", async () => {
    const r = await srv.api(`/users/@me/projects/${acc.projectId}/checkout`, { method: "POST", cookie: acc.cookie, body: {} });
    expect(r.status).toBe(200);
    expect(r.body.url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\/cs_test_/);
    const call = stripe.requests.find((q) => q.path === "/v1/checkout/sessions")!;
    expect(call.auth).toBe("Bearer sk_test_mailsvc");
    expect(call.form.get("mode")).toBe("subscription");
    expect(call.form.get("line_items[0][price]")).toBe("price_test_pro");
    expect(call.form.get("client_reference_id")).toBe(acc.projectId);
    expect(call.form.get("subscription_data[metadata][projectId]")).toBe(acc.projectId);
  });

  test("the portal needs a customer first (409), MEMBERs cannot open checkout (403)", async () => {
    expectEnvelope(await srv.api(`/users/@me/projects/${acc.projectId}/billing-portal`, { method: "POST", cookie: acc.cookie }), 409, "INVALID_STATE");
    const m = await createAccount(srv.api);
    await srv.api(`/projects/${acc.projectId}/members`, { cookie: acc.cookie, body: { email: m.email, role: "MEMBER" } });
    expectEnvelope(await srv.api(`/users/@me/projects/${acc.projectId}/checkout`, { method: "POST", cookie: m.cookie }), 403, "FORBIDDEN");
  });

  test("a signed webhook is applied once; a replay is ignored; a bad or stale signature is 400", async () => {
    const completed = stripeEvent("checkout.session.completed", {
      id: "cs_test_1",
      object: "checkout.session",
      mode: "subscription",
      status: "complete",
      client_reference_id: acc.projectId,
      customer: "cus_test_1",
      subscription: "sub_test_1",
    });
    const r1 = await webhook(completed, await signed(completed));
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual({ received: true });
    const row = await srv.ctx.db.selectFrom("billing_subscriptions").selectAll().where("project_id", "=", acc.projectId).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ customer_id: "cus_test_1", subscription_id: "sub_test_1", status: "active" });

    // A subscription update, then the first event replayed: the replay must not undo the update.
    const updated = stripeEvent("customer.subscription.updated", {
      id: "sub_test_1",
      object: "subscription",
      customer: "cus_test_1",
      status: "past_due",
      items: { data: [{ price: { id: "price_test_pro" }, current_period_end: 1_900_000_000 }] },
    });
    expect((await webhook(updated, await signed(updated))).status).toBe(200);
    const replay = await webhook(completed, await signed(completed));
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual({ received: true, duplicate: true });
    const after = await srv.ctx.db.selectFrom("billing_subscriptions").selectAll().where("project_id", "=", acc.projectId).executeTakeFirstOrThrow();
    expect(after).toMatchObject({ status: "past_due", price_id: "price_test_pro", current_period_end: 1_900_000_000_000 });
    const events = await srv.ctx.db.selectFrom("billing_events").select("id").execute();
    expect(events).toHaveLength(2);

    const other = stripeEvent("invoice.paid", { id: "in_forged", customer: "cus_test_1", amount_paid: 1 });
    expectEnvelope(await webhook(other, await signed(other, "whsec_wrong")), 400);
    expectEnvelope(await webhook(other, null), 400);
    expectEnvelope(await webhook(other, "t=1,v1=deadbeef"), 400);
    // Signed correctly but 10 minutes old: outside the SDK's tolerance.
    expectEnvelope(await webhook(other, await signed(other, WEBHOOK_SECRET, Math.floor(srv.clock.now() / 1000) - 600)), 400);
    // Body altered after signing.
    expectEnvelope(await webhook(other.replace('"amount_paid":1', '"amount_paid":2'), await signed(other)), 400);
    expect(await srv.ctx.db.selectFrom("billing_invoices").select("id").where("id", "=", "in_forged").executeTakeFirst()).toBeUndefined();
  });

  test("invoices arrive by webhook and are listed; the portal opens for the customer", async () => {
    const inv = stripeEvent("invoice.paid", {
      id: "in_test_1",
      object: "invoice",
      customer: "cus_test_1",
      number: "MAIL-0001",
      status: "paid",
      currency: "usd",
      amount_due: 2900,
      amount_paid: 2900,
      hosted_invoice_url: "https://invoice.stripe.test/i/in_test_1",
      invoice_pdf: "https://invoice.stripe.test/i/in_test_1/pdf",
      period_start: 1_700_000_000,
      period_end: 1_702_592_000,
      created: 1_700_000_100,
    });
    expect((await webhook(inv, await signed(inv))).status).toBe(200);
    const list = await srv.api(`/users/@me/projects/${acc.projectId}/billing-invoices`, { cookie: acc.cookie });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      {
        id: "in_test_1",
        number: "MAIL-0001",
        status: "paid",
        currency: "usd",
        amountDue: 2900,
        amountPaid: 2900,
        hostedInvoiceUrl: "https://invoice.stripe.test/i/in_test_1",
        invoicePdf: "https://invoice.stripe.test/i/in_test_1/pdf",
        periodStart: new Date(1_700_000_000_000).toISOString(),
        periodEnd: new Date(1_702_592_000_000).toISOString(),
        createdAt: new Date(1_700_000_100_000).toISOString(),
      },
    ]);
    // Another project sees none of it.
    const other = await createAccount(srv.api);
    expect((await srv.api(`/users/@me/projects/${other.projectId}/billing-invoices`, { cookie: other.cookie })).body).toEqual([]);

    const portal = await srv.api(`/users/@me/projects/${acc.projectId}/billing-portal`, { method: "POST", cookie: acc.cookie });
    expect(portal.status).toBe(200);
    expect(portal.body.url).toBe("https://billing.stripe.test/p/session/bps_test_1");
    expect(stripe.requests.find((q) => q.path === "/v1/billing_portal/sessions")!.form.get("customer")).toBe("cus_test_1");
  });
});

describe("billing off (no Stripe keys)", () => {
  test("checkout and portal answer 400 BILLING_DISABLED, invoices an empty list, /config billing false, webhook 400", async () => {
    const off = await startServer();
    try {
      const a = await createAccount(off.api);
      expect((await off.api("/config")).body.features.billing).toBe(false);
      expectEnvelope(await off.api(`/users/@me/projects/${a.projectId}/checkout`, { method: "POST", cookie: a.cookie }), 400, "BILLING_DISABLED");
      expectEnvelope(await off.api(`/users/@me/projects/${a.projectId}/billing-portal`, { method: "POST", cookie: a.cookie }), 400, "BILLING_DISABLED");
      const inv = await off.api(`/users/@me/projects/${a.projectId}/billing-invoices`, { cookie: a.cookie });
      expect(inv.status).toBe(200);
      expect(inv.body).toEqual([]);
      expectEnvelope(await off.api("/webhooks/incoming/stripe", { method: "POST", body: { id: "evt_x" } }), 400, "BILLING_DISABLED");
      // Limits and consumption always work.
      expect((await off.api(`/users/@me/projects/${a.projectId}/billing-consumption`, { cookie: a.cookie })).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});

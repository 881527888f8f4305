// Billing rules: caps and consumption per calendar month (UTC), and the optional Stripe subscription
// (checkout, portal, signed webhook applied once per event id, invoices).
import type Stripe from "stripe";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import type { BillingCategory } from "../../db/tables/billing";
import { AppError, badRequest, invalidState } from "../../http/errors";
import * as q from "./queries";
import { CATEGORIES, periodOf } from "./quota";
import { billingEnabled, stripeClient, verifyWebhook } from "./stripe";

export type Limits = q.Limits;

export const billingDisabled = () =>
  new AppError(400, "BILLING_DISABLED", "Billing is not enabled on this server", {
    suggestion: "Set MAILSVC_STRIPE_SECRET_KEY, MAILSVC_STRIPE_WEBHOOK_SECRET and MAILSVC_STRIPE_PRICE_ID to enable it.",
  });

export function getLimits(ctx: AppContext, projectId: string): Promise<Limits> {
  return q.readLimits(ctx.db, projectId);
}

/** Applies a partial update (a key set to null removes that cap) and answers the full set. */
export async function updateLimits(ctx: AppContext, projectId: string, patch: Partial<Limits>): Promise<Limits> {
  return ctx.db.transaction().execute(async (trx) => {
    const next = { ...(await q.readLimits(trx, projectId)) };
    for (const c of CATEGORIES) if (patch[c] !== undefined) next[c] = patch[c]!;
    await q.writeLimits(trx, projectId, next, ctx.clock.now());
    return next;
  });
}

const pct = (used: number, limit: number | null) => (limit === null ? 0 : limit === 0 ? (used > 0 ? 100 : 0) : Math.round((used / limit) * 10_000) / 100);

export async function consumption(ctx: AppContext, projectId: string) {
  const period = periodOf(ctx.clock.now());
  const [limits, usage] = await Promise.all([q.readLimits(ctx.db, projectId), q.readUsage(ctx.db, projectId, period.start)]);
  const out: Record<string, unknown> = { periodStart: iso(period.start), periodEnd: iso(period.end) };
  for (const c of CATEGORIES) {
    const u = usage.find((r) => r.category === c);
    const used = u?.used ?? 0;
    out[c] = { used, limit: limits[c], percentage: pct(used, limits[c]), ...(c === "inbound" ? { dropped: u?.dropped ?? 0 } : {}) };
  }
  return out as { periodStart: string; periodEnd: string } & Record<BillingCategory, { used: number; limit: number | null; percentage: number }>;
}

// ---- Stripe ------------------------------------------------------------------------------------

function requireBilling(ctx: AppContext) {
  if (!billingEnabled(ctx)) throw billingDisabled();
}

function providerError(ctx: AppContext, err: unknown): AppError {
  ctx.log.warn("stripe request failed", { error: String((err as Error)?.message ?? err) });
  return new AppError(502, "PAYMENT_PROVIDER_ERROR", "The payment provider did not accept the request; try again later");
}

export async function checkout(ctx: AppContext, projectId: string, input: { successUrl?: string; cancelUrl?: string }): Promise<{ url: string }> {
  requireBilling(ctx);
  const sub = await q.subscriptionOf(ctx.db, projectId);
  const base = ctx.config.publicUrl;
  let session: Stripe.Checkout.Session;
  try {
    session = await stripeClient(ctx).checkout.sessions.create({
      mode: "subscription",
      line_items: [{ price: ctx.config.stripePriceId!, quantity: 1 }],
      success_url: input.successUrl ?? `${base}/?billing=success`,
      cancel_url: input.cancelUrl ?? `${base}/?billing=cancelled`,
      client_reference_id: projectId,
      metadata: { projectId },
      subscription_data: { metadata: { projectId } },
      ...(sub?.customer_id ? { customer: sub.customer_id } : {}),
    });
  } catch (err) {
    throw providerError(ctx, err);
  }
  if (!session.url) throw providerError(ctx, new Error("checkout session without url"));
  return { url: session.url };
}

export async function billingPortal(ctx: AppContext, projectId: string, input: { returnUrl?: string }): Promise<{ url: string }> {
  requireBilling(ctx);
  const sub = await q.subscriptionOf(ctx.db, projectId);
  if (!sub?.customer_id) throw invalidState("This project has no billing account yet; start a subscription with checkout first");
  try {
    const s = await stripeClient(ctx).billingPortal.sessions.create({ customer: sub.customer_id, return_url: input.returnUrl ?? `${ctx.config.publicUrl}/` });
    return { url: s.url };
  } catch (err) {
    throw providerError(ctx, err);
  }
}

export async function invoices(ctx: AppContext, projectId: string) {
  if (!billingEnabled(ctx)) return [];
  const rows = await q.listInvoices(ctx.db, projectId);
  return rows.map((r) => ({
    id: r.id,
    number: r.number,
    status: r.status,
    currency: r.currency,
    amountDue: r.amount_due,
    amountPaid: r.amount_paid,
    hostedInvoiceUrl: r.hosted_invoice_url,
    invoicePdf: r.invoice_pdf,
    periodStart: iso(r.period_start),
    periodEnd: iso(r.period_end),
    createdAt: iso(r.created_at),
  }));
}

export async function subscription(ctx: AppContext, projectId: string) {
  const s = await q.subscriptionOf(ctx.db, projectId);
  return { enabled: billingEnabled(ctx), status: s?.status ?? null, currentPeriodEnd: iso(s?.current_period_end) };
}

const idOf = (v: unknown): string | null => (typeof v === "string" ? v : v && typeof v === "object" && typeof (v as { id?: unknown }).id === "string" ? (v as { id: string }).id : null);
const secs = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v * 1000 : null);

/**
 * POST /webhooks/incoming/stripe: the signature is verified by the SDK (400 when it fails or is
 * older than the tolerance); each event id is applied once, in one transaction with its effect.
 */
export async function handleStripeWebhook(ctx: AppContext, raw: string, signature: string | null): Promise<{ received: true; duplicate?: true }> {
  requireBilling(ctx);
  if (!signature) throw badRequest("Missing Stripe-Signature header");
  let event: Stripe.Event;
  try {
    event = await verifyWebhook(ctx, raw, signature);
  } catch (err) {
    throw badRequest(`Webhook signature verification failed: ${String((err as Error)?.message ?? err).slice(0, 200)}`);
  }
  const now = ctx.clock.now();
  const applied = await ctx.db.transaction().execute(async (trx) => {
    if (!(await q.claimEvent(trx, event.id, event.type, now))) return false;
    await applyEvent(trx, event, now);
    return true;
  });
  if (!applied) return { received: true, duplicate: true };
  ctx.log.info("stripe webhook applied", { id: event.id, type: event.type });
  return { received: true };
}

async function projectFor(db: Parameters<typeof q.projectOfCustomer>[0], metaProject: unknown, customer: string | null): Promise<string | null> {
  if (typeof metaProject === "string" && (await q.projectExists(db, metaProject))) return metaProject;
  return customer ? q.projectOfCustomer(db, customer) : null;
}

async function applyEvent(db: Parameters<typeof q.projectOfCustomer>[0], event: Stripe.Event, now: number) {
  const obj = event.data.object as unknown as Record<string, any>;
  if (event.type === "checkout.session.completed") {
    const projectId = await projectFor(db, obj.client_reference_id ?? obj.metadata?.projectId, idOf(obj.customer));
    if (!projectId) return;
    await q.saveSubscription(db, projectId, {
      customer_id: idOf(obj.customer) ?? undefined,
      subscription_id: idOf(obj.subscription) ?? undefined,
      ...(obj.status === "complete" && obj.mode === "subscription" ? { status: "active" } : {}),
    }, now);
    return;
  }
  if (event.type.startsWith("customer.subscription.")) {
    const customer = idOf(obj.customer);
    const projectId = await projectFor(db, obj.metadata?.projectId, customer);
    if (!projectId) return;
    const item = obj.items?.data?.[0];
    await q.saveSubscription(db, projectId, {
      customer_id: customer ?? undefined,
      subscription_id: idOf(obj.id) ?? undefined,
      status: event.type === "customer.subscription.deleted" ? "canceled" : typeof obj.status === "string" ? obj.status : undefined,
      price_id: idOf(item?.price) ?? undefined,
      current_period_end: secs(item?.current_period_end ?? obj.current_period_end) ?? undefined,
    }, now);
    return;
  }
  if (event.type.startsWith("invoice.")) {
    const customer = idOf(obj.customer);
    const projectId = await projectFor(db, obj.metadata?.projectId ?? obj.subscription_details?.metadata?.projectId ?? obj.parent?.subscription_details?.metadata?.projectId, customer);
    if (!projectId || typeof obj.id !== "string") return;
    await q.saveInvoice(db, {
      id: obj.id,
      project_id: projectId,
      number: obj.number ?? null,
      status: obj.status ?? null,
      currency: obj.currency ?? null,
      amount_due: Number(obj.amount_due ?? 0) || 0,
      amount_paid: Number(obj.amount_paid ?? 0) || 0,
      hosted_invoice_url: obj.hosted_invoice_url ?? null,
      invoice_pdf: obj.invoice_pdf ?? null,
      period_start: secs(obj.period_start),
      period_end: secs(obj.period_end),
      created_at: secs(obj.created) ?? now,
      updated_at: now,
    });
  }
}

// The payment provider: Stripe through its official SDK. Billing is on only when the secret key, the
// webhook secret and the price are all configured; MAILSVC_STRIPE_API_BASE points the SDK elsewhere
// (tests run a local fake of the Stripe API).
import type Stripe from "stripe";
import type { AppContext } from "../../context";

export function billingEnabled(ctx: AppContext): boolean {
  const c = ctx.config;
  return !!(c.stripeSecretKey && c.stripeWebhookSecret && c.stripePriceId);
}

declare module "../../context" {
  interface Services {
    /** The Stripe SDK client, made on first use (billing is off on most installs). */
    stripe: { client: Stripe | null };
  }
}

export function stripeClient(ctx: AppContext): Stripe {
  let s = ctx.services.stripe.client;
  if (s) return s;
  const base = new URL(ctx.config.stripeApiBase || "https://api.stripe.com");
  const protocol = base.protocol === "http:" ? "http" : "https";
  // Loaded on first use: the SDK costs ~50 ms of start-up, and billing is off on most installs.
  const StripeSdk = require("stripe") as typeof Stripe;
  s = new StripeSdk(ctx.config.stripeSecretKey!, {
    host: base.hostname,
    port: base.port || (protocol === "http" ? 80 : 443),
    protocol,
    httpClient: StripeSdk.createFetchHttpClient(),
    maxNetworkRetries: 1,
    timeout: 20_000,
    telemetry: false,
  });
  ctx.services.stripe.client = s;
  return s;
}

/** Seconds a signed webhook stays valid (the SDK's default tolerance); older deliveries are refused. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

/** Verifies `Stripe-Signature` over the raw body with the SDK; throws when it does not match. */
export async function verifyWebhook(ctx: AppContext, raw: string, signature: string): Promise<Stripe.Event> {
  return stripeClient(ctx).webhooks.constructEventAsync(
    raw,
    signature,
    ctx.config.stripeWebhookSecret!,
    WEBHOOK_TOLERANCE_SECONDS,
    undefined,
    ctx.clock.now(), // milliseconds (the SDK divides by 1000)
  );
}

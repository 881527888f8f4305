import type { ModuleDef } from "../../http/module";
import { consumeQuota } from "./quota";
import { billingRoutes } from "./routes";

export { consumeQuota, consumeQuotaRaw, admitInbound, billingLimitExceeded, periodOf, type BillingCategory } from "./quota";
export { billingEnabled } from "./stripe";

/** Billing: monthly caps per category (consumeQuota), consumption, optional Stripe subscription. */
export const billingModule: ModuleDef = {
  name: "billing",
  routes: billingRoutes,
  install(ctx) {
    // The workflow engine's SEND_EMAIL step (src/automation, below the modules) charges through this hook;
    // modules (send, campaigns, double opt-in) import consumeQuota.
    ctx.hooks.consumeQuota = consumeQuota;
  },
};

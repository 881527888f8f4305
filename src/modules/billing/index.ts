import type { ModuleDef } from "../../http/module";
import { billingRoutes } from "./routes";

export { consumeQuota, consumeQuotaRaw, admitInbound, billingLimitExceeded, periodOf, type BillingCategory } from "./quota";
export { billingEnabled } from "./stripe";

/** Billing: monthly caps per category (consumeQuota), consumption, optional Stripe subscription. */
export const billingModule: ModuleDef = {
  name: "billing",
  routes: billingRoutes,
};

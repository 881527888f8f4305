import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { rawBodies } from "../../http/body";
import { asMember, projectForMember, requireRole } from "../projects/service";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with session auth (a new object each time: Elysia keeps and changes the options it is given). */
const sessionById = () => ({ auth: "session" as const, params: IdParams });
const Cap = t.Union([t.Integer({ minimum: 0, maximum: 1_000_000_000_000 }), t.Null()]);
const LimitsBody = t.Object(
  { transactional: t.Optional(Cap), campaigns: t.Optional(Cap), workflows: t.Optional(Cap), inbound: t.Optional(Cap) },
  { additionalProperties: false },
);
const Url = t.String({ minLength: 1, maxLength: 2000, pattern: "^https?://" });

/** Billing endpoints of the dashboard (session) and the payment provider's webhook. */
export function billingRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .get("/users/@me/projects/:id/billing-limits", ({ auth, params }) => asMember(ctx, auth.userId!, params.id, null, () => svc.getLimits(ctx, params.id)), sessionById())
    .put(
      "/users/@me/projects/:id/billing-limits",
      ({ auth, params, body }) => asMember(ctx, auth.userId!, params.id, { roles: ["OWNER", "ADMIN"], action: "change billing limits" }, () => svc.updateLimits(ctx, params.id, body)),
      { ...sessionById(), body: LimitsBody },
    )
    .get("/users/@me/projects/:id/billing-consumption", ({ auth, params }) => asMember(ctx, auth.userId!, params.id, null, () => svc.consumption(ctx, params.id)), sessionById())
    .get("/users/@me/projects/:id/billing-invoices", ({ auth, params }) => asMember(ctx, auth.userId!, params.id, null, () => svc.invoices(ctx, params.id)), sessionById())
    .post(
      "/users/@me/projects/:id/checkout",
      ({ auth, params, body }) => asMember(ctx, auth.userId!, params.id, { roles: ["OWNER", "ADMIN"], action: "manage billing" }, () => svc.checkout(ctx, params.id, body ?? {})),
      { ...sessionById(), body: t.Optional(t.Object({ successUrl: t.Optional(Url), cancelUrl: t.Optional(Url) })) },
    )
    .post(
      "/users/@me/projects/:id/billing-portal",
      ({ auth, params, body }) => asMember(ctx, auth.userId!, params.id, { roles: ["OWNER", "ADMIN"], action: "manage billing" }, () => svc.billingPortal(ctx, params.id, body ?? {})),
      { ...sessionById(), body: t.Optional(t.Object({ returnUrl: t.Optional(Url) })) },
    )
    .post("/webhooks/incoming/stripe", ({ request }) =>
      svc.handleStripeWebhook(ctx, rawBodies.get(request) ?? "", request.headers.get("stripe-signature")),
    );
}

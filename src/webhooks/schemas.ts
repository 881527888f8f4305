import { optionalStrings } from "../http/replies";
import { t } from "elysia";

const Url = t.String({ minLength: 1, maxLength: 2048, description: "http(s) URL the events are POSTed to" });
const Events = t.Array(t.String({ minLength: 1, maxLength: 200 }), {
  minItems: 1,
  maxItems: 100,
  description: "Event names: email.* lifecycle names, contact.subscribed|unsubscribed, segment.<slug>.entry|exit, or the wildcards *, email.*, contact.*, segment.*",
});
const Description = t.Nullable(t.String({ maxLength: 500 }));

export const CreateEndpoint = t.Object({
  url: Url,
  events: Events,
  description: t.Optional(Description),
  enabled: t.Optional(t.Boolean()),
});

export const UpdateEndpoint = t.Object({
  url: t.Optional(Url),
  events: t.Optional(Events),
  description: t.Optional(Description),
  enabled: t.Optional(t.Boolean()),
});

export const Endpoint = t.Object({
  id: t.String(),
  url: t.String(),
  events: t.Array(t.String()),
  description: t.Union([t.String(), t.Null()]),
  secret: t.String({ description: "whsec_… signing secret (Standard Webhooks)" }),
  enabled: t.Boolean(),
  createdAt: t.String({ format: "date-time" }),
  updatedAt: t.String({ format: "date-time" }),
});

export const DeliveryStatus = t.Union([t.Literal("PENDING"), t.Literal("DELIVERED"), t.Literal("FAILED")]);

export const Delivery = t.Object({
  id: t.String({ description: "also the webhook-id header, the same on every attempt" }),
  event: t.String(),
  status: DeliveryStatus,
  attempts: t.Integer(),
  responseStatus: t.Union([t.Integer(), t.Null()]),
  createdAt: t.String({ format: "date-time" }),
  deliveredAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  nextAttemptAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  error: t.Union([t.String(), t.Null()]),
  responseBody: t.Union([t.String(), t.Null()]),
});

export const ListQuery = t.Object({ limit: t.Optional(t.String()), cursor: t.Optional(t.String()) });
export const DeliveriesQuery = optionalStrings("limit", "cursor", "status");

export const TestResult = t.Object({
  success: t.Boolean(),
  delivery: Delivery,
});

export type CreateEndpointInput = typeof CreateEndpoint.static;
export type UpdateEndpointInput = typeof UpdateEndpoint.static;

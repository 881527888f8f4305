import { iso } from "../clock";
import type { AppContext } from "../context";
import type { WebhookDeliveryStatus } from "../db/tables/webhooks";
import { badRequest, invalidField, notFound, validationError, type FieldError } from "../http/errors";
import { cursorPage, type CursorParams } from "../http/pagination";
import { isLoopbackName, refusedHost } from "../net/address-policy";
import { isSubscribableName } from "./events";
import { newWebhookSecret } from "./sign";
import { failPendingOf, recordAttempt } from "./store";
import * as q from "./queries";
import type { CreateEndpointInput, UpdateEndpointInput } from "./schemas";

export const DELIVERY_STATUSES: WebhookDeliveryStatus[] = ["PENDING", "DELIVERED", "FAILED"];

export function viewEndpoint(r: q.EndpointRow) {
  return {
    id: r.id,
    url: r.url,
    events: JSON.parse(r.events) as string[],
    description: r.description,
    secret: r.secret,
    enabled: !!r.enabled,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

export function viewDelivery(r: q.DeliveryRow) {
  return {
    id: r.id,
    event: r.event,
    status: r.status,
    attempts: r.attempts,
    responseStatus: r.response_status,
    createdAt: iso(r.created_at)!,
    deliveredAt: iso(r.delivered_at),
    nextAttemptAt: r.status === "PENDING" ? iso(r.next_attempt_at) : null,
    error: r.error,
    responseBody: r.response_body,
  };
}

/** A URL an endpoint may have: http(s), no credentials, not a refused address literal or localhost. */
function checkUrl(ctx: AppContext, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw invalidField("url", "Invalid URL", "invalid_string", raw);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw invalidField("url", "The URL must use http or https", "invalid_string", raw);
  if (u.username || u.password) throw invalidField("url", "Credentials in the URL are not allowed; put a token in the path or query", "invalid_string", raw);
  if (!ctx.config.allowPrivateWebhooks) {
    // "localhost." is localhost too (a fully qualified name): compare without the root's trailing dots.
    const host = u.hostname.toLowerCase().replace(/\.+$/, "");
    const why = refusedHost(host);
    if (why) {
      throw invalidField("url", `Webhooks may not reach ${host}${isLoopbackName(host) ? "" : ` (${why})`}: loopback, private and link-local addresses are refused (MAILSVC_ALLOW_PRIVATE_WEBHOOKS allows them)`, "refused", raw);
    }
  }
  return u.toString();
}

function checkEvents(events: string[]): string[] {
  const errors: FieldError[] = [];
  events.forEach((name, i) => {
    if (!isSubscribableName(name)) {
      errors.push({
        field: `events[${i}]`,
        message: "Unknown event: use an email.* lifecycle name, contact.subscribed, contact.unsubscribed, segment.<slug>.entry|exit, or *, email.*, contact.*, segment.*",
        code: "invalid_enum_value",
        received: name,
      });
    }
  });
  if (errors.length) throw validationError(errors);
  return [...new Set(events)];
}

export async function getEndpointOr404(ctx: AppContext, projectId: string, id: string) {
  const row = await q.getEndpoint(ctx.db, projectId, id);
  if (!row) throw notFound("Webhook endpoint");
  return row;
}

export async function createEndpoint(ctx: AppContext, projectId: string, input: CreateEndpointInput) {
  const url = checkUrl(ctx, input.url);
  const events = checkEvents(input.events);
  const now = ctx.clock.now();
  const row: q.EndpointRow = {
    id: Bun.randomUUIDv7(),
    project_id: projectId,
    url,
    description: input.description ?? null,
    secret: newWebhookSecret(),
    events: JSON.stringify(events),
    enabled: input.enabled === false ? 0 : 1,
    created_at: now,
    updated_at: now,
  };
  await q.insertEndpoint(ctx.db, row);
  return viewEndpoint(row);
}

export async function listEndpoints(ctx: AppContext, projectId: string, p: CursorParams) {
  const rows = await q.listEndpoints(ctx.db, projectId, p.after?.id ?? null, p.limit);
  const total = p.isFirstPage ? await q.countEndpoints(ctx.db, projectId) : 0;
  return cursorPage(rows, p, { total: () => total, sortValue: (r) => r.id, id: (r) => r.id, map: viewEndpoint });
}

export async function updateEndpoint(ctx: AppContext, projectId: string, id: string, input: UpdateEndpointInput) {
  const set: Partial<q.EndpointRow> = {};
  if (input.url !== undefined) set.url = checkUrl(ctx, input.url);
  if (input.events !== undefined) set.events = JSON.stringify(checkEvents(input.events));
  if (input.description !== undefined) set.description = input.description;
  if (input.enabled !== undefined) set.enabled = input.enabled ? 1 : 0;
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const row = await q.getEndpoint(trx, projectId, id);
    if (!row) throw notFound("Webhook endpoint");
    await q.updateEndpoint(trx, projectId, id, { ...set, updated_at: now });
    // Disabled: what was waiting is not sent later (re-enabling starts from new events).
    if (input.enabled === false && row.enabled) await failPendingOf(trx, id, "endpoint disabled", now);
  });
  ctx.services.webhookDispatcher.forget(id);
  return viewEndpoint(await getEndpointOr404(ctx, projectId, id));
}

export async function deleteEndpoint(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const deleted = await ctx.db.transaction().execute((trx) => q.deleteEndpoint(trx, projectId, id));
  ctx.services.webhookDispatcher.forget(id);
  if (!deleted) throw notFound("Webhook endpoint");
}

export async function listDeliveries(ctx: AppContext, projectId: string, endpointId: string, status: string | undefined, p: CursorParams) {
  if (status !== undefined && status !== "" && !DELIVERY_STATUSES.includes(status as WebhookDeliveryStatus)) {
    throw badRequest(`status must be one of ${DELIVERY_STATUSES.join(", ")}`, { details: { status } });
  }
  const st = (status || undefined) as WebhookDeliveryStatus | undefined;
  await getEndpointOr404(ctx, projectId, endpointId);
  const rows = await q.listDeliveries(ctx.db, projectId, endpointId, st, p.after?.id ?? null, p.limit);
  const total = p.isFirstPage ? await q.countDeliveries(ctx.db, projectId, endpointId, st) : 0;
  return cursorPage(rows, p, { total: () => total, sortValue: (r) => r.id, id: (r) => r.id, map: viewDelivery });
}

/** Sends a `webhook.test` event to the endpoint now (one attempt, no retry) and logs it as a delivery. */
export async function testEndpoint(ctx: AppContext, projectId: string, id: string) {
  const ep = await getEndpointOr404(ctx, projectId, id);
  const now = ctx.clock.now();
  const deliveryId = Bun.randomUUIDv7();
  const payload = JSON.stringify({ type: "webhook.test", timestamp: iso(now), data: { endpointId: ep.id, message: "This is a test event from mailsvc" } });
  await ctx.db
    .insertInto("webhook_deliveries")
    .values({
      id: deliveryId,
      project_id: projectId,
      endpoint_id: ep.id,
      event_id: null,
      event: "webhook.test",
      payload,
      status: "PENDING",
      attempts: 0,
      next_attempt_at: null, // never picked up by the dispatcher: this one attempt is all
      response_status: null,
      response_body: null,
      error: null,
      created_at: now,
      updated_at: now,
      delivered_at: null,
    })
    .execute();
  const d = ctx.services.webhookDispatcher;
  const outcome = await d.send(ep, deliveryId, payload);
  const rec = d.decide(outcome, 1);
  await recordAttempt(ctx.db, deliveryId, rec.status === "PENDING" ? { ...rec, status: "FAILED", nextAttemptAt: null } : rec);
  const row = await q.getDelivery(ctx.db, deliveryId);
  return { success: outcome.ok, delivery: viewDelivery(row!) };
}

export async function deleteProjectDeliveries(ctx: AppContext, projectId: string): Promise<void> {
  await q.deleteProjectDeliveries(ctx.db, projectId);
  for (const id of await q.endpointIdsOf(ctx.db, projectId)) ctx.services.webhookDispatcher.forget(id);
}

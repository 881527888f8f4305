import { qOf } from "../db/raw";
import type { Transaction } from "kysely";
import { iso } from "../clock";
import type { AppContext } from "../context";
import type { DB } from "../db";
import { isDeliverable, subscribed } from "./events";
import { contactEmails, enabledEndpointsOf, insertDeliveriesRaw, pendingDelivery, type DeliveryInsert } from "./store";

/** The part of an event-feed event the webhooks read. */
export interface WebhookSourceEvent {
  id: string;
  projectId: string;
  contactId: string | null;
  name: string;
  data: Record<string, unknown> | null;
  emailId: string | null;
  createdAt: number;
}

/** The body POSTed for one event: `{ type, timestamp, data }`. */
export function webhookPayload(ev: WebhookSourceEvent, contactEmail: string | null): string {
  return JSON.stringify({
    type: ev.name,
    timestamp: iso(ev.createdAt),
    data: {
      ...(ev.data ?? {}),
      eventId: ev.id,
      contactId: ev.contactId,
      contactEmail,
      ...(ev.emailId ? { emailId: ev.emailId } : {}),
    },
  });
}

/**
 * The event-feed handler: inside the feed's transaction (which also moves the cursor), one PENDING
 * delivery row per (event, enabled endpoint subscribed to it). DB writes only; the dispatcher sends.
 * Returns how many deliveries were written.
 */
export async function recordDeliveries(ctx: AppContext, trx: Transaction<DB>, events: WebhookSourceEvent[]): Promise<number> {
  const evs = events.filter((e) => isDeliverable(e.name));
  if (!evs.length) return 0;
  const projectIds = [...new Set(evs.map((e) => e.projectId))];
  const endpoints = await enabledEndpointsOf(trx, projectIds);
  if (!endpoints.length) return 0;
  const byProject = new Map<string, { id: string; events: string[] }[]>();
  for (const ep of endpoints) {
    const list = byProject.get(ep.project_id) ?? [];
    list.push({ id: ep.id, events: JSON.parse(ep.events) as string[] });
    byProject.set(ep.project_id, list);
  }
  const targets = evs.map((ev) => ({ ev, eps: (byProject.get(ev.projectId) ?? []).filter((ep) => subscribed(ep.events, ev.name)) })).filter((x) => x.eps.length);
  if (!targets.length) return 0;
  // An event of a sent email names its recipient (data.to, the contact's address); others are looked up
  // (email.received has no emailId: its data.to is our own address, its contact is the sender).
  const emails = new Map<string, string>();
  for (const { ev } of targets) if (ev.contactId && ev.emailId && ev.name.startsWith("email.") && typeof ev.data?.to === "string") emails.set(ev.contactId, ev.data.to);
  const contactIds = [...new Set(targets.map((x) => x.ev.contactId).filter((x): x is string => !!x && !emails.has(x)))];
  for (let i = 0; i < contactIds.length; i += 500) {
    for (const c of await contactEmails(trx, contactIds.slice(i, i + 500))) emails.set(c.id, c.email);
  }
  const now = ctx.clock.now();
  const rows: DeliveryInsert[] = [];
  for (const { ev, eps } of targets) {
    const payload = webhookPayload(ev, ev.contactId ? (emails.get(ev.contactId) ?? null) : null);
    for (const ep of eps) {
      rows.push(pendingDelivery({ projectId: ev.projectId, endpointId: ep.id, eventId: ev.id, event: ev.name, payload, now }));
    }
  }
  // Raw statements on the feed's transaction.
  await insertDeliveriesRaw(qOf(trx, ctx.store.engine), rows);
  return rows.length;
}

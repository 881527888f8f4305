/**
 * Which events outbound webhooks carry, and how an endpoint's subscription list matches them.
 * Delivered: every email lifecycle event (email.*), contact.subscribed / contact.unsubscribed /
 * contact.confirmed (double opt-in), segment entry/exit, and suppression.created / suppression.deleted
 * (queued by mail/suppressions.ts, not through the event feed). Client events from /v1/track are not delivered.
 */
export const EMAIL_EVENTS = [
  "email.sent",
  "email.delivery",
  "email.deferred",
  "email.failed",
  "email.bounce",
  "email.complaint",
  "email.suppressed",
  "email.open",
  "email.click",
  "email.received",
] as const;
export const CONTACT_EVENTS = ["contact.subscribed", "contact.unsubscribed", "contact.confirmed"] as const;
/** Written by the suppression list itself (no events row: the address need not be a contact). */
export const SUPPRESSION_EVENTS = ["suppression.created", "suppression.deleted"] as const;
/** Wildcards an endpoint may subscribe to. */
export const EVENT_WILDCARDS = ["*", "email.*", "contact.*", "segment.*", "suppression.*"] as const;

/** A segment slug is the lower-case, hyphenated name (with -2, -3 … on collision). */
const SEGMENT_SUBSCRIPTION = /^segment\.[\p{Ll}\p{Lo}\p{N}_-]+\.(entry|exit)$/u;
const SEGMENT_EVENT = /^segment\..+\.(entry|exit)$/;
const KNOWN = new Set<string>([...EMAIL_EVENTS, ...CONTACT_EVENTS, ...SUPPRESSION_EVENTS, ...EVENT_WILDCARDS]);

/** A name an endpoint may subscribe to: a known event, a segment entry/exit, or a wildcard. */
export const isSubscribableName = (name: string): boolean => KNOWN.has(name) || SEGMENT_SUBSCRIPTION.test(name);

/** An event the webhooks deliver at all. */
export const isDeliverable = (name: string): boolean =>
  name.startsWith("email.") || (CONTACT_EVENTS as readonly string[]).includes(name) || SEGMENT_EVENT.test(name);

/** Whether a subscription list (names and wildcards) covers an event name. */
export function subscribed(patterns: readonly string[], name: string): boolean {
  for (const p of patterns) {
    if (p === name || p === "*") return true;
    if (p.endsWith(".*") && name.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

// Hard bounces, however they arrive: a 5xx during delivery (the outbox) or a permanent failure
// reported later by a DSN or an SES notification (the feedback loop). Each caller moves the email
// to BOUNCED under its own condition (the outbox only from SENDING; a report from anything but
// BOUNCED or COMPLAINED); what a bounce does to the audience is here, once, in the caller's
// transaction: the address is suppressed in the project, `email.bounce` is recorded on the
// contact, and the contact is unsubscribed. After the commit, afterHardBounces announces the events
// and re-checks the projects' sending reputation.
import type { Kysely, Transaction } from "kysely";
import type { AppContext } from "../../context";
import type { DB } from "../../db";
import { setSubscribed } from "../../audience/contacts";
import { notifyEvents, recordEvent, type RecordedEvent } from "../../audience/events";
import type { EventRow } from "./next-state";
import { recheckReputation } from "../deliverability/reputation";
import { suppress } from "./suppressions";

export interface HardBounce {
  emailId: string;
  projectId: string;
  contactId: string | null;
  email: string;
  /** The remote reply or the report's diagnostic (kept on the suppression). */
  detail: string | null;
  now: number;
}

/** The audience side of a hard bounce; `events` (email.bounce and whatever the caller records with it) are recorded too. */
export async function applyHardBounce(trx: Kysely<DB> | Transaction<DB>, ctx: AppContext, b: HardBounce, events: EventRow[]): Promise<RecordedEvent[]> {
  await suppress(trx, { projectId: b.projectId, email: b.email, reason: "HARD_BOUNCE", source: "EMAIL", detail: b.detail, emailId: b.emailId, now: b.now });
  const recorded: RecordedEvent[] = [];
  for (const ev of events) {
    const eventId = await recordEvent(trx, ctx, { projectId: ev.projectId, contactId: ev.contactId, name: ev.name, data: ev.data, emailId: ev.emailId });
    recorded.push({ projectId: ev.projectId, contactId: ev.contactId, eventId, name: ev.name, data: ev.data });
  }
  if (b.contactId) {
    const r = await setSubscribed(trx, ctx, { projectId: b.projectId, contactId: b.contactId, subscribed: false, source: "bounce", emailId: b.emailId });
    if (r) recorded.push(...r.events);
  }
  return recorded;
}

/** After the bounces' transaction committed: their events reach the feed, their projects' reputation is checked. */
export async function afterHardBounces(ctx: AppContext, recorded: RecordedEvent[], projectIds: Iterable<string>): Promise<void> {
  await notifyEvents(ctx, recorded);
  for (const projectId of new Set(projectIds)) await recheckReputation(ctx, projectId);
}

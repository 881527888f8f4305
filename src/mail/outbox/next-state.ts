// What happens to an email after an attempt, decided in one place. Pure: no clock, no database, no
// configuration read here; the outbox passes the time and the retry schedule in and writes what
// comes out (the row's next status and the contact events recorded with it).
import type { DeliveryResult } from "../smtp/smtp-result";

/** The columns of an email the decision looks at. */
export interface AttemptRow {
  id: string;
  project_id: string | null;
  contact_id: string | null;
  to_email: string;
  source_type: string;
  campaign_id: string | null;
  template_id: string | null;
  /** Attempts made before this one. */
  attempts: number;
}

/**
 * The result of one pass through the pipeline: an SMTP attempt (a local error before the wire, such
 * as a failed build, is a `deferred` with stage "local"), or a guard that stopped the email before
 * any attempt.
 */
export type AttemptResult =
  | (DeliveryResult & { host?: string | null })
  | { kind: "suppressed"; reply: string }
  | { kind: "unsendable"; reply: string }
  /** Claimed, not yet offered to a server, and its campaign was cancelled meanwhile: never sent. */
  | { kind: "cancelled"; reply: string };

export interface RetrySchedule {
  now: number;
  /** Waits after the 1st, 2nd, ... deferral (MAILSVC_RETRY_SCHEDULE); past its end an email FAILS. */
  delaysMs: readonly number[];
  /** Delivery goes through a smarthost: its 250 means SENT (accepted for relaying), not DELIVERED. */
  relay: boolean;
}

/** A contact event recorded with the outcome (email.sent, email.delivery, email.bounce, ...). */
export interface EventRow {
  projectId: string;
  contactId: string;
  name: string;
  data: Record<string, unknown>;
  emailId: string;
}

export type OutcomeStatus = "DELIVERED" | "SENT" | "DEFERRED" | "FAILED" | "BOUNCED" | "SUPPRESSED" | "CANCELLED";

export interface NextState {
  id: string;
  status: OutcomeStatus;
  /** Stored as the email's last_reply (at most 1,000 characters). */
  reply: string;
  host: string | null;
  /** When the next attempt is due (DEFERRED only). */
  nextAttemptAt?: number;
  /** Whether this pass was an attempt (counted in attempts, metrics and the delivery log). */
  attempted: boolean;
  /** A hard bounce: the address is suppressed and the contact unsubscribed with the outcome. */
  bounce: boolean;
  events: EventRow[];
}

const MAX_REPLY = 1000;

/** The row's next state after `result`, with the contact events that record it. */
export function nextState(row: AttemptRow, result: AttemptResult, schedule: RetrySchedule): NextState {
  const events: EventRow[] = [];
  const event = (name: string, data: Record<string, unknown>) => {
    if (row.project_id && row.contact_id) events.push({ projectId: row.project_id, contactId: row.contact_id, name, data, emailId: row.id });
  };
  const reply = result.reply.slice(0, MAX_REPLY);
  // Every event of a campaign email names its campaign (the analytics rollups count from it).
  const about = { emailId: row.id, to: row.to_email, ...(row.campaign_id ? { campaignId: row.campaign_id } : {}) };
  const base = { id: row.id, reply, bounce: false, events };

  if (result.kind === "suppressed") {
    event("email.suppressed", { ...about, reply });
    return { ...base, status: "SUPPRESSED", host: null, attempted: false };
  }
  if (result.kind === "cancelled") {
    // As the campaign's queued emails the cancel turned CANCELLED: no attempt, no event.
    return { ...base, status: "CANCELLED", host: null, attempted: false };
  }
  if (result.kind === "unsendable") {
    event("email.failed", { ...about, reply, attempt: row.attempts + 1 });
    return { ...base, status: "FAILED", host: null, attempted: false };
  }

  const host = result.host ?? null;
  if (row.attempts === 0) {
    event("email.sent", { ...about, sourceType: row.source_type, ...(row.template_id ? { templateId: row.template_id } : {}) });
  }
  const attempted = { ...base, host, attempted: true };
  switch (result.kind) {
    case "delivered":
      if (schedule.relay) return { ...attempted, status: "SENT" };
      event("email.delivery", { ...about, mxHost: host, reply });
      return { ...attempted, status: "DELIVERED" };
    case "bounced":
      event("email.bounce", { ...about, code: result.code, reply, type: "hard" });
      return { ...attempted, status: "BOUNCED", bounce: true };
    case "deferred": {
      // Every retry and the final failure are on the contact's trail too, with the remote reply.
      const wait = schedule.delaysMs[row.attempts];
      const attempt = { ...about, code: result.code, reply, attempt: row.attempts + 1, ...(host ? { mxHost: host } : {}) };
      if (wait === undefined) {
        event("email.failed", attempt);
        return { ...attempted, status: "FAILED" };
      }
      const nextAttemptAt = schedule.now + wait;
      event("email.deferred", { ...attempt, nextAttemptAt: new Date(nextAttemptAt).toISOString() });
      return { ...attempted, status: "DEFERRED", nextAttemptAt };
    }
  }
}

/** The metrics label of an attempt ("sent" is a relay's 250). */
export function attemptLabel(s: NextState): string {
  return s.status === "SENT" ? "sent" : s.status === "DELIVERED" ? "delivered" : s.status === "BOUNCED" ? "bounced" : "deferred";
}

// ---- after delivery: feedback that moves an email ------------------------------------------------

/** What can happen to an email after its attempts: tracking, reports that arrive later, a cancelled campaign. */
export type FeedbackKind = "open" | "click" | "bounce" | "complaint" | "delivered-report" | "cancel";

/**
 * Mail that reached someone: an open or click on anything else is not believable. SENDING counts: a
 * link scanner may fetch within milliseconds of the remote 250, before the outcome is committed; the
 * row keeps SENDING (the outcome write then lands on OPENED/CLICKED), only the times are set.
 */
export const REACHED: ReadonlySet<string> = new Set(["SENDING", "SENT", "DELIVERED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED"]);

/**
 * The status an email moves to on `kind`, or null when it stays (the one table of these moves; the
 * outbox's own moves are nextState above). Status only moves forward, SENT < DELIVERED < OPENED < CLICKED;
 * BOUNCED and COMPLAINED win; only mail still waiting in the queue can be cancelled.
 */
export function afterFeedback(status: string, kind: FeedbackKind): string | null {
  switch (kind) {
    case "open":
      return status === "SENT" || status === "DELIVERED" ? "OPENED" : null;
    case "click":
      return status === "SENT" || status === "DELIVERED" || status === "OPENED" ? "CLICKED" : null;
    case "bounce":
      return status === "BOUNCED" || status === "COMPLAINED" ? null : "BOUNCED";
    case "complaint":
      return status === "COMPLAINED" ? null : "COMPLAINED";
    case "delivered-report":
      return status === "SENT" ? "DELIVERED" : null;
    case "cancel":
      return status === "PENDING" || status === "DEFERRED" ? "CANCELLED" : null;
  }
}

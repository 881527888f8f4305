import { markReported, noteReply } from "../../mail/outbox/store";
// What comes back by mail, applied to the outbox rows and the audience: asynchronous bounces (DSN),
// complaints (ARF), unsubscribes by mail and ordinary inbound mail. Each applies in one transaction
// and announces its events after the commit.
import type { AppContext } from "../../context";
import type { NotNull, Transaction } from "kysely";
import type { DB } from "../../db";
import { normalizeEmail } from "../../net/email-address";
import { afterHardBounces, applyHardBounce } from "../../mail/outbox/bounces";
import { recheckReputation } from "../../mail/deliverability/reputation";
import { suppress } from "../../mail/outbox/suppressions";
import { ensureContact, notifyEvents, recordEvent, setSubscribed, type PendingEvent } from "./audience-adapter";
import { admitInbound } from "../billing/quota";

interface EmailRef {
  id: string;
  project_id: string;
  contact_id: string | null;
  campaign_id: string | null;
  to_email: string;
  status: string;
}

async function loadEmail(trx: Transaction<DB>, emailId: string, projectIds?: string[]): Promise<EmailRef | undefined> {
  // Mail without a project (account emails) has no audience to act on: out of the feedback loop.
  let q = trx
    .selectFrom("emails")
    .select(["id", "project_id", "contact_id", "campaign_id", "to_email", "status"])
    .where("id", "=", emailId)
    .where("project_id", "is not", null)
    .$narrowType<{ project_id: NotNull }>();
  if (projectIds) q = q.where("project_id", "in", projectIds.length ? projectIds : [""]);
  return q.executeTakeFirst();
}

// Sending reputation (docs/api.md "Billing, uploads, project reset", **Security**): complaints only ever arrive here, async bounces
// too; both re-check the project through the engine's throttled check (recheckReputation).

export interface BounceReport {
  emailId: string;
  /** Restrict to these projects (mail that named the email only by Message-ID). */
  projectIds?: string[];
  permanent: boolean;
  /** Enhanced status code, e.g. 5.1.1. */
  status: string | null;
  /** Remote diagnostic (e.g. "smtp; 550 5.1.1 user unknown"). */
  diagnostic: string | null;
  recipient: string | null;
  remoteMta: string | null;
  /** Where the report came from (event data): "dsn" (default) or "ses". */
  source?: string;
}

export type FeedbackOutcome = "applied" | "noted" | "ignored" | "unknown-email";

/**
 * A permanent failure marks the email BOUNCED (unless it already bounced or drew a complaint),
 * suppresses the address, unsubscribes the contact and records `email.bounce`. A transient one only
 * notes the reply on the email (the remote MTA keeps retrying on its own).
 */
export async function applyBounce(ctx: AppContext, r: BounceReport): Promise<FeedbackOutcome> {
  const now = ctx.clock.now();
  const reply = [r.status, r.diagnostic].filter(Boolean).join(" ").slice(0, 1000) || null;
  const pending: PendingEvent[] = [];
  let projectId: string | null = null;
  const outcome = await ctx.db.transaction().execute(async (trx): Promise<FeedbackOutcome> => {
    const e = await loadEmail(trx, r.emailId, r.projectIds);
    if (!e) return "unknown-email";
    if (!r.permanent) {
      if (reply) await noteReply(trx, e.id, `async DSN (transient): ${reply}`, now);
      return "noted";
    }
    if (!(await markReported(trx, e, "bounce", now, reply ?? undefined))) return "ignored";
    projectId = e.project_id;
    const event = {
      emailId: e.id,
      ...(e.campaign_id ? { campaignId: e.campaign_id } : {}),
      to: e.to_email,
      type: "hard",
      source: r.source ?? "dsn",
      reply,
      status: r.status,
      diagnostic: r.diagnostic,
      ...(r.remoteMta ? { remoteMta: r.remoteMta } : {}),
    };
    const events = e.contact_id ? [{ projectId: e.project_id, contactId: e.contact_id, name: "email.bounce", emailId: e.id, data: event }] : [];
    pending.push(...(await applyHardBounce(trx, ctx, { emailId: e.id, projectId: e.project_id, contactId: e.contact_id, email: e.to_email, detail: reply, now }, events)));
    return "applied";
  });
  await afterHardBounces(ctx, pending, projectId ? [projectId] : []);
  return outcome;
}

/** A success DSN (NOTIFY=SUCCESS through a relay): SENT becomes DELIVERED. */
export async function applyDeliveredReport(ctx: AppContext, emailId: string, projectIds?: string[]): Promise<FeedbackOutcome> {
  const now = ctx.clock.now();
  return ctx.db.transaction().execute(async (trx) => {
    const e = await loadEmail(trx, emailId, projectIds);
    if (!e) return "unknown-email";
    return (await markReported(trx, e, "delivered-report", now)) ? "applied" : "ignored";
  });
}

export interface ComplaintReport {
  emailId: string;
  projectIds?: string[];
  feedbackType: string;
  userAgent: string | null;
  sourceIp: string | null;
}

/** An ARF complaint: COMPLAINED, unsubscribed, suppressed (reason complaint), `email.complaint`. */
export async function applyComplaint(ctx: AppContext, r: ComplaintReport): Promise<FeedbackOutcome> {
  const now = ctx.clock.now();
  const pending: PendingEvent[] = [];
  let projectId: string | null = null;
  const outcome = await ctx.db.transaction().execute(async (trx): Promise<FeedbackOutcome> => {
    const e = await loadEmail(trx, r.emailId, r.projectIds);
    if (!e) return "unknown-email";
    if (!(await markReported(trx, e, "complaint", now))) return "ignored";
    projectId = e.project_id;
    await suppress(trx, { projectId: e.project_id, email: e.to_email, reason: "COMPLAINT", source: "EMAIL", detail: [r.feedbackType, r.userAgent].filter(Boolean).join(" from ") || null, emailId: e.id, now });
    if (e.contact_id) {
      pending.push(
        await recordEvent(trx, ctx, {
          projectId: e.project_id,
          contactId: e.contact_id,
          name: "email.complaint",
          emailId: e.id,
          data: {
            emailId: e.id,
            ...(e.campaign_id ? { campaignId: e.campaign_id } : {}),
            feedbackType: r.feedbackType,
            ...(r.userAgent ? { userAgent: r.userAgent } : {}),
          },
        }),
      );
      pending.push(...(await setSubscribed(trx, ctx, { projectId: e.project_id, contactId: e.contact_id, subscribed: false, source: "complaint", emailId: e.id })));
    }
    return "applied";
  });
  await notifyEvents(ctx, pending);
  if (projectId) await recheckReputation(ctx, projectId);
  return outcome;
}

/** Mail to the List-Unsubscribe mailto address: unsubscribes the email's contact. */
export async function unsubscribeByMail(ctx: AppContext, emailId: string): Promise<FeedbackOutcome> {
  const pending: PendingEvent[] = [];
  const outcome = await ctx.db.transaction().execute(async (trx): Promise<FeedbackOutcome> => {
    const e = await loadEmail(trx, emailId);
    if (!e) return "unknown-email";
    if (!e.contact_id) return "ignored";
    pending.push(...(await setSubscribed(trx, ctx, { projectId: e.project_id, contactId: e.contact_id, subscribed: false, source: "mailto", emailId: e.id })));
    return pending.length ? "applied" : "ignored";
  });
  await notifyEvents(ctx, pending);
  return outcome;
}

export interface ReceivedMail {
  projectId: string;
  from: string;
  fromName: string | null;
  to: string[];
  subject: string;
  messageId: string | null;
  size: number;
  attachments: number;
  inReplyTo: string | null;
}

/**
 * Ordinary mail to a verified domain: `email.received` on the sender's contact, which is created
 * (unsubscribed) when unknown. Only metadata is kept, never the body.
 */
/** Records one inbound message; false when the project's monthly inbound cap dropped it (counted, nothing stored). */
export async function recordReceived(ctx: AppContext, m: ReceivedMail): Promise<boolean> {
  const pending: PendingEvent[] = [];
  const admitted = await ctx.db.transaction().execute(async (trx) => {
    if (!(await admitInbound(trx, ctx, m.projectId))) return false;
    const { contact, events } = await ensureContact(trx, ctx, m.projectId, normalizeEmail(m.from));
    pending.push(...events);
    pending.push(
      await recordEvent(trx, ctx, {
        projectId: m.projectId,
        contactId: contact.id,
        name: "email.received",
        data: {
          from: m.from,
          ...(m.fromName ? { fromName: m.fromName } : {}),
          to: m.to,
          subject: m.subject,
          messageId: m.messageId,
          ...(m.inReplyTo ? { inReplyTo: m.inReplyTo } : {}),
          size: m.size,
          attachments: m.attachments,
        },
      }),
    );
    return true;
  });
  await notifyEvents(ctx, pending);
  return admitted;
}

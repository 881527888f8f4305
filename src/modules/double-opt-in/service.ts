/**
 * Double opt-in (docs/api.md "Double opt-in"): with the project setting on, a subscribe through the public key
 * (/v1/track) does not subscribe the contact. It stays `subscribed: false` with
 * `pendingConfirmation: true` and gets a confirmation email (the chosen template with `{{confirmUrl}}`,
 * or a plain default), at most one per 10 minutes. The link (signed, single use, 7 days) subscribes
 * the contact, records `contact.subscribed` (source `confirmation`) and `contact.confirmed`, which the
 * event feed hands to workflows and outbound webhooks like any other event.
 */
import { CONTACT_CONFIRMED, notifyEvents, recordEvent, type RecordedEvent } from "../../audience/events";
import { setSubscribed } from "../../audience/contacts";
import { parseData } from "../../audience/data-rules";
import { contactsChanged } from "../../audience/changes";
import type { AppContext } from "../../context";
import type { TopicClear } from "../../jobs/peers";
import { consumeQuota } from "../billing/quota";
import { validationError } from "../../http/errors";
import { insertContent, insertEmails } from "../../mail/outbox/enqueue";
import { wakeOutbox } from "../../mail/outbox/outbox";
import { isSandbox } from "../../mail/outbox/sandbox";
import { suppressedAmong } from "../../mail/outbox/suppressions";
import { confirmationToken, readConfirmationToken } from "../../mail/tracking/tokens";

export const CONFIRM_PATH = "/confirm/";
/** A second subscribe within this window sends no second email. */
export const RESEND_AFTER_MS = 10 * 60_000;
export const LINK_LIFETIME_MS = 7 * 24 * 3_600_000;

export interface DoubleOptIn {
  enabled: boolean;
  templateId: string | null;
  redirectUrl: string | null;
}

export function viewDoubleOptIn(p: { double_opt_in?: number; double_opt_in_template_id?: string | null; double_opt_in_redirect_url?: string | null }): DoubleOptIn {
  return { enabled: p.double_opt_in === 1, templateId: p.double_opt_in_template_id ?? null, redirectUrl: p.double_opt_in_redirect_url ?? null };
}

// The setting is read on every public-key track: cached a few seconds per project, dropped on PATCH.
const CACHE_MS = 5_000;
declare module "../../context" {
  interface Caches {
    /** projectId -> its double opt-in setting and when it was read (forgetDoubleOptIn drops one). */
    doubleOptIn: Map<string, { at: number; value: DoubleOptIn }>;
  }
}
const cacheOf = (ctx: AppContext) => ctx.services.caches.doubleOptIn;

export async function doubleOptInOf(ctx: AppContext, projectId: string): Promise<DoubleOptIn> {
  const cache = cacheOf(ctx);
  const hit = cache.get(projectId);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.value;
  const row = await ctx.db
    .selectFrom("projects")
    .select(["double_opt_in", "double_opt_in_template_id", "double_opt_in_redirect_url"])
    .where("id", "=", projectId)
    .executeTakeFirst();
  const value = viewDoubleOptIn(row ?? {});
  cache.set(projectId, { at: Date.now(), value });
  return value;
}

/** Checks a PATCH of the setting against the project; returns the column values to write. */
export async function doubleOptInPatch(ctx: AppContext, projectId: string, patch: Partial<DoubleOptIn>) {
  const out: { double_opt_in?: number; double_opt_in_template_id?: string | null; double_opt_in_redirect_url?: string | null } = {};
  if (patch.enabled !== undefined) out.double_opt_in = patch.enabled ? 1 : 0;
  if (patch.templateId !== undefined) {
    if (patch.templateId !== null) {
      const tpl = await ctx.db.selectFrom("templates").select("id").where("project_id", "=", projectId).where("id", "=", patch.templateId).executeTakeFirst();
      if (!tpl) throw validationError([{ field: "doubleOptIn.templateId", message: "No template with this id in the project", code: "not_found", received: patch.templateId }]);
    }
    out.double_opt_in_template_id = patch.templateId;
  }
  if (patch.redirectUrl !== undefined) {
    const url = patch.redirectUrl?.trim() || null;
    if (url !== null) {
      let ok = false;
      try {
        ok = /^https?:$/.test(new URL(url).protocol);
      } catch {}
      if (!ok) throw validationError([{ field: "doubleOptIn.redirectUrl", message: "Must be an absolute http(s) URL", code: "invalid_string", received: url.slice(0, 200) }]);
    }
    out.double_opt_in_redirect_url = url;
  }
  return out;
}

export const forgetDoubleOptIn = (ctx: AppContext, projectId: string) => cacheOf(ctx).delete(projectId);

/** The "doubleOptIn" cache topic (src/jobs/peers.ts; PATCH calls `invalidate(ctx, "doubleOptIn", projectId)`). */
export const doubleOptInTopic: TopicClear = { one: (ctx, id) => void forgetDoubleOptIn(ctx, id), all: (ctx) => cacheOf(ctx).clear() };

/**
 * Whether a public-key track would subscribe the contact (and so must be held): an explicit
 * `subscribed: true` for a contact not subscribed yet, or a new contact (who defaults to subscribed).
 */
export async function wouldSubscribe(ctx: AppContext, projectId: string, email: string, subscribed: boolean | undefined): Promise<boolean> {
  if (subscribed === false) return false;
  const row = await ctx.db.selectFrom("contacts").select("subscribed").where("project_id", "=", projectId).where("email", "=", email.trim().toLowerCase()).executeTakeFirst();
  if (!row) return true;
  return subscribed === true && row.subscribed !== 1;
}

const DEFAULT_SUBJECT = "Please confirm your subscription to {{projectName}}";
const DEFAULT_BODY =
  `<p>Hello,</p><p>Someone (hopefully you) asked to receive email from {{projectName}} at {{email}}.</p>` +
  `<p><a href="{{confirmUrl}}">Confirm my subscription</a></p>` +
  `<p>The link works once and for 7 days. If you did not ask for this, ignore this email: you will not be subscribed.</p>`;

/**
 * After a held subscribe committed: marks the contact pending and, unless a confirmation email went
 * out in the last 10 minutes, queues one (one transaction: the email, the link's row, the send time).
 * Returns the email id, or null when none was sent (already subscribed, too soon, no sender).
 */
export async function requestConfirmation(ctx: AppContext, projectId: string, contactId: string): Promise<string | null> {
  const now = ctx.clock.now();
  const emailId = await ctx.db.transaction().execute(async (trx) => {
    const contact = await trx.selectFrom("contacts").selectAll().where("id", "=", contactId).where("project_id", "=", projectId).executeTakeFirst();
    if (!contact || contact.subscribed === 1) return null;
    if (contact.pending_confirmation !== 1) await trx.updateTable("contacts").set({ pending_confirmation: 1 }).where("id", "=", contactId).execute();
    // Claim the send slot (at most one confirmation email per 10 minutes, also under concurrent tracks).
    const claimed = await trx
      .updateTable("contacts")
      .set({ confirmation_sent_at: now })
      .where("id", "=", contactId)
      .where((eb) => eb.or([eb("confirmation_sent_at", "is", null), eb("confirmation_sent_at", "<=", now - RESEND_AFTER_MS)]))
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) === 0) return null;
    const project = await trx.selectFrom("projects").select(["name", "double_opt_in_template_id"]).where("id", "=", projectId).executeTakeFirstOrThrow();
    const tpl = project.double_opt_in_template_id
      ? await trx.selectFrom("templates").selectAll().where("project_id", "=", projectId).where("id", "=", project.double_opt_in_template_id).executeTakeFirst()
      : undefined;
    let from: { email: string; name: string | null; replyTo: string | null };
    if (tpl) from = { email: tpl.from_email, name: tpl.from_name, replyTo: tpl.reply_to };
    else {
      // The plain default comes from the project's first verified sender domain (a sandbox: its first domain, verified or not).
      const domains = trx.selectFrom("domains").select("domain").where("project_id", "=", projectId).orderBy("created_at");
      const domain =
        (await domains.where("status", "=", "VERIFIED").executeTakeFirst()) ?? ((await isSandbox(ctx, projectId, trx as never)) ? await domains.executeTakeFirst() : undefined);
      if (!domain) {
        ctx.log.warn("double opt-in: no confirmation email (no template and no verified sender domain)", { projectId, contactId });
        return null;
      }
      from = { email: `no-reply@${domain.domain}`, name: project.name, replyTo: null };
    }
    const suppressed = (await suppressedAmong(trx, projectId, [contact.email])).size > 0;
    if (!suppressed) {
      // Counted as transactional mail: over the monthly cap, no email (the contact stays pending).
      try {
        await consumeQuota(trx as never, ctx, projectId, "transactional", 1);
      } catch (e) {
        if ((e as { status?: number })?.status !== 402) throw e;
        ctx.log.warn("double opt-in: no confirmation email (the monthly transactional cap is reached)", { projectId, contactId });
        return null;
      }
    }
    const confirmationId = Bun.randomUUIDv7(undefined, now);
    const confirmUrl = ctx.config.publicUrl + CONFIRM_PATH + confirmationToken(ctx, projectId, confirmationId);
    // TRANSACTIONAL whatever the template's type: the recipient is not subscribed (yet), and this
    // message is the one they asked for; no unsubscribe footer.
    const contentId = await insertContent(trx, now, {
      projectId,
      subject: tpl?.subject ?? DEFAULT_SUBJECT,
      html: tpl?.body ?? DEFAULT_BODY,
      fromEmail: from.email,
      fromName: from.name,
      replyTo: from.replyTo,
      type: "TRANSACTIONAL",
      noTracking: true,
    });
    const vars = { ...parseData(contact.data), email: contact.email, id: contact.id, confirmUrl, projectName: project.name };
    const [id] = await insertEmails(trx, now, ctx.config.hostname, [
      { projectId, contentId, contactId, toEmail: contact.email, vars, sourceType: "TRANSACTIONAL", templateId: tpl?.id ?? null, status: suppressed ? "SUPPRESSED" : "PENDING" },
    ]);
    await trx
      .insertInto("contact_confirmations")
      .values({ id: confirmationId, project_id: projectId, contact_id: contactId, email_id: id!, created_at: now, expires_at: now + LINK_LIFETIME_MS, confirmed_at: null })
      .execute();
    return id!;
  });
  if (emailId) wakeOutbox(ctx);
  return emailId;
}

export type ConfirmOutcome =
  | { kind: "confirmed"; projectName: string; redirectUrl: string | null }
  | { kind: "invalid" }
  | { kind: "used" }
  | { kind: "expired" };

/** Opens a confirmation link: subscribes the contact once; a bad signature, a used or expired link changes nothing. */
export async function confirm(ctx: AppContext, token: string): Promise<ConfirmOutcome> {
  const tok = readConfirmationToken(ctx, token);
  if (!tok) return { kind: "invalid" };
  const now = ctx.clock.now();
  const events: RecordedEvent[] = [];
  const out = await ctx.db.transaction().execute(async (trx): Promise<ConfirmOutcome & { contactId?: string }> => {
    const row = await trx.selectFrom("contact_confirmations").selectAll().where("id", "=", tok.confirmationId).where("project_id", "=", tok.projectId).executeTakeFirst();
    if (!row) return { kind: "invalid" };
    if (row.confirmed_at !== null) return { kind: "used" };
    if (now > row.expires_at) return { kind: "expired" };
    const used = await trx.updateTable("contact_confirmations").set({ confirmed_at: now }).where("id", "=", row.id).where("confirmed_at", "is", null).executeTakeFirst();
    if (Number(used.numUpdatedRows) === 0) return { kind: "used" };
    const r = await setSubscribed(trx, ctx, { projectId: row.project_id, contactId: row.contact_id, subscribed: true, source: "confirmation" });
    if (!r) return { kind: "invalid" };
    events.push(...r.events);
    await trx.updateTable("contacts").set({ pending_confirmation: 0 }).where("id", "=", row.contact_id).execute();
    const data = { confirmationId: row.id, ...(row.email_id ? { emailId: row.email_id } : {}) };
    const eventId = await recordEvent(trx, ctx, { projectId: row.project_id, contactId: row.contact_id, name: CONTACT_CONFIRMED, data });
    events.push({ projectId: row.project_id, contactId: row.contact_id, eventId, name: CONTACT_CONFIRMED, data });
    const p = await trx.selectFrom("projects").select(["name", "double_opt_in_redirect_url"]).where("id", "=", row.project_id).executeTakeFirstOrThrow();
    return { kind: "confirmed", projectName: p.name, redirectUrl: p.double_opt_in_redirect_url ?? null, contactId: row.contact_id };
  });
  if (out.kind === "confirmed") {
    await notifyEvents(ctx, events);
    await contactsChanged(ctx, tok.projectId, [out.contactId!]);
    return { kind: "confirmed", projectName: out.projectName, redirectUrl: out.redirectUrl };
  }
  return out;
}

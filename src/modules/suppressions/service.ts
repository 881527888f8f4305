import { countRows } from "../../db/count";
/**
 * The suppression list as users manage it (docs/api.md "Suppressions"): list and filter, add a
 * MANUAL entry, lift one, import a CSV of addresses. Bounces and complaints add theirs through
 * mail/suppressions.ts; every addition and lift is announced to outbound webhooks
 * (`suppression.created` / `suppression.deleted`) in the transaction that makes it.
 */
import type { AppContext } from "../../context";
import { dialect } from "../../db/dialect";
import type { SuppressionReason } from "../../db/tables/delivery";
import { badRequest, conflict, notFound, validationError } from "../../http/errors";
import { cursorPage, type CursorParams } from "../../http/pagination";
import { isValidEmail, normalizeEmail } from "../../net/email-address";
import { queueSuppressionWebhooks, suppress, viewSuppression, type SuppressionRow } from "../../mail/outbox/suppressions";

export const SUPPRESSION_REASONS: SuppressionReason[] = ["HARD_BOUNCE", "COMPLAINT", "MANUAL", "UNSUBSCRIBE"];
export const MAX_DETAIL = 1000;

export interface SuppressionFilters {
  reason?: string;
  email?: string;
}

function checkReason(reason: string | undefined): SuppressionReason | undefined {
  if (reason === undefined || reason === "") return undefined;
  const r = reason.toUpperCase() as SuppressionReason;
  if (!SUPPRESSION_REASONS.includes(r)) throw badRequest(`reason must be one of ${SUPPRESSION_REASONS.join(", ")}`, { details: { reason } });
  return r;
}

function filtered(ctx: AppContext, projectId: string, reason: SuppressionReason | undefined, email: string | undefined) {
  let q = ctx.db.selectFrom("suppressions").where("project_id", "=", projectId);
  if (reason) q = q.where("reason", "=", reason);
  // Addresses are stored lower-case: a plain substring test of the lowered term.
  if (email) q = q.where(dialect().contains("email", email));
  return q;
}

/** Newest first (created_at, then id); `total` on the first page is the filtered count. */
export async function list(ctx: AppContext, projectId: string, f: SuppressionFilters, page: CursorParams) {
  const reason = checkReason(f.reason);
  const email = f.email?.trim().toLowerCase() || undefined;
  if (email && email.length > 320) throw badRequest("email must be at most 320 characters");
  let q = filtered(ctx, projectId, reason, email).selectAll();
  if (page.after) {
    const at = Number(page.after.v);
    if (!Number.isFinite(at)) throw badRequest("cursor is invalid");
    const id = page.after.id;
    q = q.where((eb) => eb.or([eb("created_at", "<", at), eb.and([eb("created_at", "=", at), eb("id", "<", id)])]));
  }
  const rows = await q.orderBy("created_at", "desc").orderBy("id", "desc").limit(page.limit + 1).execute();
  let total = 0;
  if (page.isFirstPage) {
    total = await countRows(filtered(ctx, projectId, reason, email));
  }
  return cursorPage(rows, page, { total: () => total, sortValue: (r) => r.created_at, id: (r) => r.id, map: viewSuppression });
}

export async function get(ctx: AppContext, projectId: string, id: string) {
  const row = await ctx.db.selectFrom("suppressions").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
  if (!row) throw notFound("Suppression");
  return viewSuppression(row);
}

/** POST /suppressions: a MANUAL entry; 409 CONFLICT when the address is already on the list. */
export async function create(ctx: AppContext, projectId: string, body: { email: string; reason?: string; detail?: string | null }) {
  const email = body.email.trim();
  if (!isValidEmail(email)) throw validationError([{ field: "email", message: "Invalid email", code: "invalid_string", received: body.email.slice(0, 254) }]);
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute((trx) =>
    suppress(trx, { projectId, email, reason: "MANUAL", detail: body.detail?.trim() || null, source: "API", now }),
  );
  if (!row) {
    const existing = await ctx.db.selectFrom("suppressions").select(["id", "reason"]).where("project_id", "=", projectId).where("email", "=", normalizeEmail(email)).executeTakeFirst();
    throw conflict(`${normalizeEmail(email)} is already suppressed`, existing ? { id: existing.id, reason: existing.reason } : undefined);
  }
  return viewSuppression(row);
}

/**
 * Lifts a suppression: the address is attempted again by later sends. The contact's subscription is
 * not touched (a hard bounce or complaint unsubscribed it; resubscribing is a separate decision).
 */
export async function lift(ctx: AppContext, projectId: string, id: string) {
  const now = ctx.clock.now();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const r = await trx.selectFrom("suppressions").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
    if (!r) return null;
    const del = await trx.deleteFrom("suppressions").where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
    if (Number(del.numDeletedRows) === 0) return null;
    await queueSuppressionWebhooks(trx, "suppression.deleted", [r as SuppressionRow], now);
    return r;
  });
  if (!row) throw notFound("Suppression");
  return viewSuppression(row);
}

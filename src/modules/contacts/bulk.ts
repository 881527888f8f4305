/**
 * Bulk subscribe / unsubscribe / delete of up to 1,000 contact ids: a durable job that applies
 * all of them in one transaction (so a restart re-runs it whole, never half) and reports ids that
 * are not contacts of the project as row errors. Subscription flips record their events
 * (source "bulk"); a delete removes the contacts' events too.
 */
import type { AppContext } from "../../context";
import { setSubscribed } from "../../audience/contacts";
import { notifyEvents, type RecordedEvent } from "../../audience/events";
import { contactsChanged } from "../../audience/changes";
import type { JobRunContext } from "../../jobs/queue";
import { emptyResult, JOB_TYPES, MAX_REPORTED_ERRORS, type JobResult } from "./jobs";

export type BulkAction = "bulk-subscribe" | "bulk-unsubscribe" | "bulk-delete";
export const MAX_BULK_IDS = 1000;

export interface BulkPayload {
  contactIds: string[];
}

export async function startBulk(ctx: AppContext, projectId: string, action: BulkAction, contactIds: string[]): Promise<string> {
  return ctx.jobs.enqueue(JOB_TYPES[action], { contactIds } satisfies BulkPayload, { projectId, maxAttempts: 3 });
}

export function bulkPending(payload: string): JobResult {
  try {
    return emptyResult((JSON.parse(payload) as BulkPayload).contactIds.length);
  } catch {
    return emptyResult();
  }
}

export function bulkHandler(ctx: AppContext, action: BulkAction) {
  return async (job: JobRunContext<BulkPayload>): Promise<JobResult> => {
    const projectId = job.projectId!;
    const ids = job.payload.contactIds;
    const result = emptyResult(ids.length);
    const events: RecordedEvent[] = [];
    const fail = (i: number, id: string) => {
      result.failed++;
      if (result.errors.length < MAX_REPORTED_ERRORS) result.errors.push({ row: i + 1, email: null, contactId: id, error: "Contact not found" });
    };
    await ctx.db.transaction().execute(async (trx) => {
      if (action === "bulk-delete") {
        const existing = new Set(
          (await trx.selectFrom("contacts").select("id").where("project_id", "=", projectId).where("id", "in", ids).execute()).map((r) => r.id),
        );
        ids.forEach((id, i) => (existing.has(id) ? result.succeeded++ : fail(i, id)));
        if (existing.size) await trx.deleteFrom("contacts").where("project_id", "=", projectId).where("id", "in", [...existing]).execute();
        return;
      }
      const subscribed = action === "bulk-subscribe";
      for (let i = 0; i < ids.length; i++) {
        const r = await setSubscribed(trx, ctx, { projectId, contactId: ids[i]!, subscribed, source: "bulk" });
        if (!r) {
          fail(i, ids[i]!);
          continue;
        }
        result.succeeded++;
        if (r.changed) result.updated++;
        events.push(...r.events);
      }
    });
    await notifyEvents(ctx, events);
    if (action !== "bulk-delete") await contactsChanged(ctx, projectId, ids);
    return result;
  };
}

/**
 * The workflows' event feed consumer. In the feed's transaction (so exactly once per event, and
 * nothing lost across kill -9) it resumes WAIT_FOR_EVENT executions of the event's contact that
 * wait for that name since before the event, and starts every enabled workflow whose trigger is
 * the event's name (re-entry rules apply). It only writes rows and jobs (one job for all of a round's
 * starts); the executor does the work.
 */
import { qOf } from "../../../db/raw";
import type { Transaction } from "kysely";
import type { AppContext } from "../../../context";
import type { DB } from "../../../db";
import type { FeedEvent } from "../../../jobs/event-feed";
import { insertExecutionsInFeed, STARTS_JOB, STEP_JOB, type StartInput, type StepJobPayload } from "./executor";
import { claimTurn, dropJob, enteredAmongRaw, updateExecution } from "./store";

export const FEED_CONSUMER = "workflows";

export async function onFeedEvents(ctx: AppContext, trx: Transaction<DB>, events: FeedEvent[]): Promise<void> {
  const names = [...new Set(events.map((e) => e.name))];
  const projects = [...new Set(events.map((e) => e.projectId))];
  const contacts = [...new Set(events.map((e) => e.contactId))];
  // Most batches resume nothing: one small look-up (few projects and names, a stable statement)
  // before the one that lists the batch's contacts.
  const anyWaiting = await trx
    .selectFrom("workflow_executions")
    .select("id")
    .where("project_id", "in", projects)
    .where("wait_event", "in", names)
    .where("status", "=", "WAITING")
    .limit(1)
    .executeTakeFirst();
  const [workflows, waiting] = await Promise.all([
    trx
      .selectFrom("workflows")
      .select(["id", "project_id", "trigger_event", "entry_step_id", "allow_reentry"])
      .where("enabled", "=", 1)
      .where("trigger_type", "=", "EVENT")
      .where("project_id", "in", projects)
      .where("trigger_event", "in", names)
      .orderBy("created_at")
      .execute(),
    anyWaiting
      ? trx
          .selectFrom("workflow_executions")
          .select(["id", "project_id", "contact_id", "wait_event", "wait_seq", "step_seq", "job_id"])
          .where("status", "=", "WAITING")
          .where("contact_id", "in", contacts)
          .where("wait_event", "in", names)
          .execute()
      : [],
  ]);
  if (!workflows.length && !waiting.length) return;
  const now = ctx.clock.now();
  let wrote = false;
  for (const ev of events) {
    for (const w of waiting) {
      if (w.wait_event !== ev.name || w.contact_id !== ev.contactId || w.project_id !== ev.projectId) continue;
      if (w.wait_seq !== null && ev.seq <= w.wait_seq) continue;
      if (!(await claimTurn(trx, w.id, w.step_seq, now))) continue;
      const payload: StepJobPayload = { executionId: w.id, seq: w.step_seq + 1, resume: "event", event: { id: ev.id, name: ev.name, data: ev.data ?? {} } };
      const jobId = await ctx.jobs.enqueue(STEP_JOB, payload, { trx, runAt: now, maxAttempts: 5 });
      await dropJob(trx, w.job_id, now);
      await updateExecution(trx, w.id, { status: "RUNNING", wait_event: null, wait_seq: null, resume_at: null, job_id: jobId }, now);
      w.wait_event = null; // resumed once
      wrote = true;
    }
  }
  // Starts: every (enabled workflow, event) pair, minus contacts that may not enter (one look-up per
  // workflow for the batch's contacts; entries made by this batch count too).
  const pairs = events.flatMap((ev) => workflows.filter((wf) => wf.trigger_event === ev.name && wf.project_id === ev.projectId).map((wf) => ({ wf, ev })));
  if (pairs.length) {
    // Raw look-ups and inserts on the feed transaction's own connection (it holds the database until it
    // commits): every triggered start passes here (scripts/bench/workflows.ts).
    const q = qOf(trx, ctx.store.engine);
    const contactsOf = new Map<(typeof workflows)[number], Set<string>>();
    for (const { wf, ev } of pairs) {
      const set = contactsOf.get(wf);
      if (set) set.add(ev.contactId);
      else contactsOf.set(wf, new Set([ev.contactId]));
    }
    const before = new Map<string, Set<string>>();
    for (const [wf, ids] of contactsOf) before.set(wf.id, await enteredAmongRaw(q, wf.id, [...ids], wf.allow_reentry !== 1));
    const entered = new Set<string>();
    const starts: StartInput[] = [];
    for (const { wf, ev } of pairs) {
      const key = `${wf.id}:${ev.contactId}`;
      if (entered.has(key)) continue;
      entered.add(key);
      if (before.get(wf.id)!.has(ev.contactId)) continue;
      starts.push({ projectId: ev.projectId, workflowId: wf.id, entryStepId: wf.entry_step_id, contactId: ev.contactId, event: { id: ev.id, name: ev.name, data: ev.data ?? {} } });
    }
    await insertExecutionsInFeed(ctx, trx, starts, now);
    if (starts.length) {
      // One job walks them all (none is added while one is waiting: it will see these rows too).
      await ctx.jobs.enqueue(STARTS_JOB, {}, { trx, runAt: now, dedupeKey: STARTS_JOB });
      wrote = true;
    }
  }
  // The claim of the job loop waits for this transaction's commit (one connection), so waking now is safe.
  if (wrote) ctx.jobs.wake();
}

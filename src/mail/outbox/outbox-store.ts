// The outbox's store: every read and write of the delivery loop, behind one narrow interface
// (OutboxStore). The hot statements (claim, outcomes) run as raw prepared statements inside
// ctx.store.exclusive: thousands of rows a second through Kysely would cost a large share of the
// main thread (scripts/bench/send.ts). Everything is scoped by email id; ids come from rows this
// process claimed.
import type { Selectable } from "kysely";
import type { AppContext } from "../../context";
import type { Store } from "../../db";
import { atomic, qOf, type Q } from "../../db/raw";
import type { EmailContentsTable, EmailsTable } from "../../db/tables/delivery";
import type { RecordedEvent } from "../../audience/events";
import { insertEventRaw, insertEventsRaw } from "../../audience/raw";
import { applyHardBounce } from "./bounces";
import type { AttemptRow, EventRow, NextState } from "./next-state";
import { suppressedAmongRaw } from "./suppressions";
import { storeLinks, type FreshLinks } from "../tracking/tracked-links";
import type { KeptRaw } from "./sandbox";

/** The columns of an email the outbox claims (CLAIMED_COLUMNS). */
export type ClaimedEmail = Pick<
  Selectable<EmailsTable>,
  "id" | "project_id" | "content_id" | "contact_id" | "to_email" | "to_name" | "vars" | "source_type" | "campaign_id" | "template_id" | "message_id" | "attempts" | "sent_at" | "sandbox"
>;

export type ContentRow = Omit<Selectable<EmailContentsTable>, "created_at" | "no_tracking" | "track_opens"> & { no_tracking?: number; track_opens?: number | null };

export type { EventRow };

/** What the outbox reads and writes, and nothing else. */
export interface OutboxStore {
  /**
   * Claims due emails: candidates in due order (transactional before campaign mail), `choose` picks
   * among them (per-project fairness and rates), the chosen move to SENDING with a lease, in one transaction.
   */
  claim(now: number, leaseUntil: number, candidates: number, choose: (rows: Candidate[]) => string[]): Promise<ClaimedEmail[]>;
  /**
   * PostgreSQL, several instances: takes up to `want` of the `budget` messages a project may send in
   * the second starting at `windowStart` (send_rate_windows); answers how many it got (shared-rate.ts).
   */
  takeSendBudget(project: string, windowStart: number, want: number, budget: number): Promise<number>;
  /** Forgets the shared send-rate windows older than a minute. */
  pruneRateWindows(now: number): Promise<void>;
  /**
   * Puts SENDING rows back in the queue. Returns how many moved. `ids`: this instance's own claims
   * (shutdown); "expired": those ids only while their lease is still over (the lease sweep; a
   * conditional UPDATE, so a row is requeued once whoever sweeps); "start-up": what a dead run left
   * (on SQLite every SENDING row, one instance per file; on PostgreSQL only rows whose lease ended or
   * that this instance id holds, never a live peer's).
   */
  requeue(now: number, ids: string[] | "all-sending", mode?: "expired" | "start-up"): Promise<number>;
  /** Extends the lease of this instance's SENDING rows among `ids` (long work keeps its claim). Returns how many. */
  renew(now: number, leaseUntil: number, ids: string[]): Promise<number>;
  /** SENDING rows whose lease ran out. */
  expiredLeases(now: number): Promise<string[]>;
  loadContents(ids: string[]): Promise<ContentRow[]>;
  /** The addresses among `emails` suppressed in the project. */
  suppressedAmong(projectId: string, emails: string[]): Promise<Set<string>>;
  /** The contacts among `contactIds` that are unsubscribed now (MARKETING/HEADLESS mail never reaches them). */
  unsubscribedAmong(contactIds: string[]): Promise<Set<string>>;
  /** The tracking mode of each project (once per claimed batch, instead of a query per message). */
  trackingModes(projectIds: string[]): Promise<Map<string, string>>;
  /** The postal address of each project that has one (the MARKETING footer). */
  postalAddresses(projectIds: string[]): Promise<Map<string, string>>;
  /** Which of these campaigns are CANCELLED (a claimed email of one is never sent, even after a restart). */
  cancelledAmong(campaignIds: string[]): Promise<string[]>;
  /** The project whose VERIFIED domain `domain` signs the server's own account emails, if any. */
  systemSigningProject(domain: string): Promise<string | null>;
  /** Stores click-tracked links a builder reported (before a message carrying them may leave). */
  storeLinks(projectId: string, links: FreshLinks): Promise<void>;
  /**
   * Records a batch of outcomes with their contact events in one transaction; a hard bounce also
   * suppresses the address and unsubscribes the contact (bounces.ts). Only rows still SENDING change
   * (a row cancelled or handled elsewhere meanwhile is left alone). Returns the recorded events.
   */
  recordOutcomes(now: number, outcomes: Settled[]): Promise<RecordedEvent[]>;
}

export interface Candidate {
  id: string;
  project_id: string | null;
}

export function outboxStore(ctx: AppContext): OutboxStore {
  const engine = ctx.store.engine;
  const q = qOf(ctx.db, engine);
  const tx = <T>(fn: (q: Q) => Promise<T>) => atomic(ctx.db, engine, fn);
  return {
    claim: (now, leaseUntil, candidates, choose) => tx((q) => claimDue(q, now, leaseUntil, candidates, choose, ctx.config.instanceId)),
    takeSendBudget: (project, windowStart, want, budget) => tx((q) => takeSendBudget(q, project, windowStart, want, budget)),
    pruneRateWindows: async (now) => {
      if (engine === "postgres") await q.run("DELETE FROM send_rate_windows WHERE window_start < ?", [now - 60_000]);
    },
    requeue: (now, ids, mode) => requeue(q, now, ids, ctx.config.instanceId, mode),
    expiredLeases: (now) => expiredLeases(q, now),
    renew: (now, leaseUntil, ids) =>
      ids.length
        ? q.run("UPDATE emails SET lease_until = ? WHERE status = 'SENDING' AND locked_by = ? AND lease_until >= ? AND id IN (SELECT value FROM json_each(?))", [
            leaseUntil,
            ctx.config.instanceId,
            now,
            JSON.stringify(ids),
          ])
        : Promise.resolve(0),
    loadContents: (ids) => loadContents(q, ids),
    suppressedAmong: (projectId, emails) => suppressedAmongRaw(q, projectId, emails),
    unsubscribedAmong: (contactIds) => unsubscribedAmong(q, contactIds),
    trackingModes: (projectIds) => trackingModes(q, projectIds),
    postalAddresses: (projectIds) => postalAddresses(q, projectIds),
    cancelledAmong: (campaignIds) => cancelledAmong(q, campaignIds),
    systemSigningProject: (domain) => systemSigningProject(q, domain),
    storeLinks: (projectId, links) => storeLinks(ctx, projectId, links),
    async recordOutcomes(now, outcomes) {
      // One transaction per batch: the outcomes, their events and, for a hard bounce, its audience
      // side (suppressions, contacts; bounces.ts).
      return ctx.db.transaction().execute(async (trx) => {
        const { recorded, bounced } = await writeOutcomes(qOf(trx, engine), now, outcomes);
        for (const { row, state } of bounced) {
          if (!row.project_id) continue; // an account email: no project, no audience
          const b = { emailId: row.id, projectId: row.project_id, contactId: row.contact_id, email: row.to_email, detail: state.reply, now };
          recorded.push(...(await applyHardBounce(trx, ctx, b, state.events)));
        }
        return recorded;
      });
    },
  };
}

/** An outcome to record: the claimed row and its next state (next-state.ts). */
export interface Settled {
  row: AttemptRow;
  state: NextState;
  /** The message to keep for GET /emails/:id/raw (the sandbox's capture, or MAILSVC_KEEP_RAW); stored before the outcome. */
  kept?: KeptRaw;
}

const CLAIMED_COLUMNS =
  "id, project_id, content_id, contact_id, to_email, to_name, vars, source_type, campaign_id, template_id, message_id, attempts, sent_at, sandbox";

// Priority 0 (transactional, workflow, system) before 1 (campaigns): a password reset never waits
// behind a newsletter. Each is a range seek on emails_due_priority. On PostgreSQL the candidates are
// locked with SKIP LOCKED: another instance claiming at the same moment takes other rows.
const DUE = "SELECT id, project_id FROM emails WHERE status IN ('PENDING', 'DEFERRED') AND priority = ? AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?";
const DUE_PG = `${DUE} FOR UPDATE SKIP LOCKED`;

async function claimDue(
  q: Q,
  now: number,
  leaseUntil: number,
  candidates: number,
  choose: (rows: Candidate[]) => string[],
  instance: string,
): Promise<ClaimedEmail[]> {
  const due = q.engine === "postgres" ? DUE_PG : DUE;
  const rows = await q.all<Candidate>(due, [0, now, candidates]);
  if (rows.length < candidates) rows.push(...(await q.all<Candidate>(due, [1, now, candidates - rows.length])));
  if (!rows.length) return [];
  let ids = choose(rows);
  if (!ids.length) return [];
  return q.all<ClaimedEmail>(
    `UPDATE emails SET status = 'SENDING', lease_until = ?, locked_by = ?, updated_at = ?
     WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('PENDING', 'DEFERRED')
     RETURNING ${CLAIMED_COLUMNS}`,
    [leaseUntil, instance, now, JSON.stringify(ids)],
  );
}

/**
 * PostgreSQL, several instances: up to `want` of a project's one-second budget. One row per project and
 * second; the conditional UPDATE takes min(want, left) under the row's lock (SET sees the row as it is
 * when locked), so instances taking at once never pass `budget` together.
 */
async function takeSendBudget(q: Q, project: string, window: number, want: number, budget: number): Promise<number> {
  await q.run("INSERT OR IGNORE INTO send_rate_windows (project_id, window_start) VALUES (?, ?)", [project, window]);
  const row = await q.get<{ granted: number | string }>(
    `UPDATE send_rate_windows SET granted = LEAST(?, ? - sent), sent = sent + LEAST(?, ? - sent)
     WHERE project_id = ? AND window_start = ? AND sent < ? RETURNING granted`,
    [want, budget, want, budget, project, window, budget],
  );
  return row ? Number(row.granted) : 0;
}

async function requeue(q: Q, now: number, ids: string[] | "all-sending", instance: string, mode?: "expired" | "start-up"): Promise<number> {
  const set = `status = CASE WHEN attempts > 0 THEN 'DEFERRED' ELSE 'PENDING' END, lease_until = NULL, locked_by = NULL,
               next_attempt_at = COALESCE(next_attempt_at, ?), updated_at = ?`;
  if (ids === "all-sending") {
    // One instance per SQLite file: whatever is SENDING at start-up was left by a dead run.
    if (mode !== "start-up" || q.engine === "sqlite") return q.run(`UPDATE emails SET ${set} WHERE status = 'SENDING'`, [now, now]);
    return q.run(`UPDATE emails SET ${set} WHERE status = 'SENDING' AND (lease_until IS NULL OR lease_until < ? OR locked_by = ?)`, [now, now, now, instance]);
  }
  if (!ids.length) return 0;
  if (mode === "expired") {
    return q.run(`UPDATE emails SET ${set} WHERE status = 'SENDING' AND lease_until < ? AND id IN (SELECT value FROM json_each(?))`, [now, now, now, JSON.stringify(ids)]);
  }
  return q.run(`UPDATE emails SET ${set} WHERE status = 'SENDING' AND locked_by = ? AND id IN (SELECT value FROM json_each(?))`, [now, now, instance, JSON.stringify(ids)]);
}

async function expiredLeases(q: Q, now: number): Promise<string[]> {
  return (await q.all<{ id: string }>("SELECT id FROM emails WHERE status = 'SENDING' AND lease_until < ? LIMIT 1000", [now])).map((r) => r.id);
}

function loadContents(q: Q, ids: string[]): Promise<ContentRow[]> {
  return q.all<ContentRow>(
    `SELECT id, project_id, subject, html, text, from_email, from_name, reply_to, type, headers, attachments, no_tracking, track_opens
     FROM email_contents WHERE id IN (SELECT value FROM json_each(?))`,
    [JSON.stringify(ids)],
  );
}

async function trackingModes(q: Q, projectIds: string[]): Promise<Map<string, string>> {
  if (!projectIds.length) return new Map();
  const rows = await q.all<{ id: string; tracking: string }>("SELECT id, tracking FROM projects WHERE id IN (SELECT value FROM json_each(?))", [JSON.stringify(projectIds)]);
  return new Map(rows.map((r) => [r.id, r.tracking]));
}

async function postalAddresses(q: Q, projectIds: string[]): Promise<Map<string, string>> {
  if (!projectIds.length) return new Map();
  const rows = await q.all<{ id: string; postal_address: string }>(
    "SELECT id, postal_address FROM projects WHERE postal_address IS NOT NULL AND id IN (SELECT value FROM json_each(?))",
    [JSON.stringify(projectIds)],
  );
  return new Map(rows.map((r) => [r.id, r.postal_address]));
}

async function unsubscribedAmong(q: Q, contactIds: string[]): Promise<Set<string>> {
  if (!contactIds.length) return new Set();
  const rows = await q.all<{ id: string }>("SELECT id FROM contacts WHERE subscribed = 0 AND id IN (SELECT value FROM json_each(?))", [JSON.stringify(contactIds)]);
  return new Set(rows.map((r) => r.id));
}

async function cancelledAmong(q: Q, campaignIds: string[]): Promise<string[]> {
  if (!campaignIds.length) return [];
  const rows = await q.all<{ id: string }>("SELECT id FROM campaigns WHERE status = 'CANCELLED' AND id IN (SELECT value FROM json_each(?))", [JSON.stringify(campaignIds)]);
  return rows.map((r) => r.id);
}

async function systemSigningProject(q: Q, domain: string): Promise<string | null> {
  const row = await q.get<{ project_id: string }>("SELECT project_id FROM domains WHERE domain = ? AND status = 'VERIFIED' ORDER BY created_at LIMIT 1", [domain]);
  return row?.project_id ?? null;
}

// ---- outcomes ---------------------------------------------------------------------------------

/**
 * Writes a batch of outcomes in one (raw) transaction; inside a caller's transaction it becomes a
 * savepoint. Contact events of every outcome but a bounce are inserted here; the bounces that moved
 * (their row was still SENDING) are returned for their audience side (bounces.ts).
 */
async function writeOutcomes(q: Q, now: number, outcomes: Settled[]): Promise<{ recorded: RecordedEvent[]; bounced: Settled[] }> {
  if (q.engine === "postgres") return writeOutcomesSetBased(q, now, outcomes);
  const delivered =
    // An open or click recorded while the row was SENDING (a scanner faster than our commit) keeps its status.
    `UPDATE emails SET status = CASE WHEN clicked_at IS NOT NULL THEN 'CLICKED' WHEN opened_at IS NOT NULL THEN 'OPENED' ELSE ? END,
       attempts = attempts + 1, sent_at = COALESCE(sent_at, ?),
       delivered_at = CASE WHEN ? = 'DELIVERED' THEN ? ELSE delivered_at END,
       last_reply = ?, mx_host = ?, lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`;
  const deferredQ =
    `UPDATE emails SET status = 'DEFERRED', attempts = attempts + 1, sent_at = COALESCE(sent_at, ?),
       last_reply = ?, mx_host = COALESCE(?, mx_host), lease_until = NULL, locked_by = NULL, next_attempt_at = ?, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`;
  const failedQ =
    `UPDATE emails SET status = 'FAILED', attempts = attempts + 1, sent_at = COALESCE(sent_at, ?), failed_at = ?,
       last_reply = ?, mx_host = COALESCE(?, mx_host), lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`;
  const bouncedQ =
    `UPDATE emails SET status = 'BOUNCED', attempts = attempts + 1, sent_at = COALESCE(sent_at, ?), bounced_at = ?,
       last_reply = ?, mx_host = COALESCE(?, mx_host), lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`;
  const suppressedQ =
    `UPDATE emails SET status = 'SUPPRESSED', last_reply = ?, lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`;
  const cancelledQ =
    `UPDATE emails SET status = 'CANCELLED', last_reply = ?, lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`;
  const recorded: RecordedEvent[] = [];
  const bounced: Settled[] = [];
    for (const o of outcomes) {
      const s = o.state;
      switch (s.status) {
        case "DELIVERED":
        case "SENT":
          await q.run(delivered, [s.status, now, s.status, now, s.reply, s.host, now, s.id]);
          break;
        case "DEFERRED":
          await q.run(deferredQ, [now, s.reply, s.host, s.nextAttemptAt ?? now, now, s.id]);
          break;
        case "FAILED":
          await q.run(failedQ, [now, now, s.reply, s.host, now, s.id]);
          break;
        case "BOUNCED":
          if (await q.run(bouncedQ, [now, now, s.reply, s.host, now, s.id])) bounced.push(o);
          continue; // its events are recorded with its audience side
        case "SUPPRESSED":
          await q.run(suppressedQ, [s.reply, now, s.id]);
          break;
        case "CANCELLED":
          await q.run(cancelledQ, [s.reply, now, s.id]);
          break;
      }
      for (const e of s.events) {
        const eventId = await insertEventRaw(q, now, e);
        recorded.push({ projectId: e.projectId, contactId: e.contactId, eventId, name: e.name, data: e.data });
      }
    }
  return { recorded, bounced };
}

// PostgreSQL: a round trip per row is the cost there (issue 31), so a batch of outcomes is one
// UPDATE ... FROM unnest(...) per status present and one multi-row insert of their events. The same
// writes as the per-row statements above (SQLite keeps those: prepared statements in-process are cheaper).
const SET_BASED: Record<NextState["status"], string> = {
  DELIVERED: `status = CASE WHEN e.clicked_at IS NOT NULL THEN 'CLICKED' WHEN e.opened_at IS NOT NULL THEN 'OPENED' ELSE u.st END,
       attempts = e.attempts + 1, sent_at = COALESCE(e.sent_at, ?1),
       delivered_at = CASE WHEN u.st = 'DELIVERED' THEN ?1 ELSE e.delivered_at END,
       last_reply = u.reply, mx_host = u.host, lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?1`,
  SENT: "", // with DELIVERED
  DEFERRED: `status = 'DEFERRED', attempts = e.attempts + 1, sent_at = COALESCE(e.sent_at, ?1),
       last_reply = u.reply, mx_host = COALESCE(u.host, e.mx_host), lease_until = NULL, locked_by = NULL, next_attempt_at = COALESCE(u.next_at, ?1), updated_at = ?1`,
  FAILED: `status = 'FAILED', attempts = e.attempts + 1, sent_at = COALESCE(e.sent_at, ?1), failed_at = ?1,
       last_reply = u.reply, mx_host = COALESCE(u.host, e.mx_host), lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?1`,
  BOUNCED: `status = 'BOUNCED', attempts = e.attempts + 1, sent_at = COALESCE(e.sent_at, ?1), bounced_at = ?1,
       last_reply = u.reply, mx_host = COALESCE(u.host, e.mx_host), lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?1`,
  SUPPRESSED: "status = 'SUPPRESSED', last_reply = u.reply, lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?1",
  CANCELLED: "status = 'CANCELLED', last_reply = u.reply, lease_until = NULL, locked_by = NULL, next_attempt_at = NULL, updated_at = ?1",
};

async function writeOutcomesSetBased(q: Q, now: number, outcomes: Settled[]): Promise<{ recorded: RecordedEvent[]; bounced: Settled[] }> {
  const groups = new Map<string, Settled[]>();
  for (const o of outcomes) {
    const key = o.state.status === "SENT" ? "DELIVERED" : o.state.status;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(o);
  }
  let bouncedIds = new Set<string>();
  for (const [status, g] of groups) {
    const moved = await q.all<{ id: string }>(
      `UPDATE emails AS e SET ${SET_BASED[status as NextState["status"]]}
       FROM unnest(?2::text[], ?3::text[], ?4::text[], ?5::text[], ?6::bigint[]) AS u(id, st, reply, host, next_at)
       WHERE e.id = u.id AND e.status = 'SENDING' RETURNING e.id`,
      [now, g.map((o) => o.state.id), g.map((o) => o.state.status), g.map((o) => o.state.reply), g.map((o) => o.state.host ?? null), g.map((o) => o.state.nextAttemptAt ?? null)],
    );
    if (status === "BOUNCED") bouncedIds = new Set(moved.map((r) => r.id));
  }
  // A bounce's events are recorded with its audience side; every other outcome's here, in the outcomes' order.
  const events = outcomes.flatMap((o) => (o.state.status === "BOUNCED" ? [] : o.state.events));
  const ids = events.length ? await insertEventsRaw(q, now, events) : [];
  const recorded = events.map((e, i) => ({ projectId: e.projectId, contactId: e.contactId, eventId: ids[i]!, name: e.name, data: e.data }));
  return { recorded, bounced: outcomes.filter((o) => o.state.status === "BOUNCED" && bouncedIds.has(o.state.id)) };
}

/** Emails per status, for the /metrics gauges (read while the scrape is answered). */
export async function emailStatusCounts(store: Store): Promise<Record<string, number>> {
  if (store.engine === "sqlite") {
    const rows = store.sqlite.query<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM emails GROUP BY status").all();
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }
  const rows = await store.db.selectFrom("emails").select((eb) => ["status", eb.fn.countAll<number>().as("n")]).groupBy("status").execute();
  return Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));
}

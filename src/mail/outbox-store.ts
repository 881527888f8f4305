// The outbox's store: every read and write of the delivery loop, behind one narrow interface
// (OutboxStore). The hot statements (claim, outcomes) run as raw prepared statements inside
// ctx.store.exclusive: thousands of rows a second through Kysely would cost a large share of the
// main thread (scripts/bench/send.ts). Everything is scoped by email id; ids come from rows this
// process claimed.
import type { Database } from "bun:sqlite";
import type { Selectable } from "kysely";
import type { AppContext } from "../context";
import type { EmailContentsTable, EmailsTable } from "../db/tables/delivery";
import type { RecordedEvent } from "../audience/events";
import { insertEventRaw } from "../audience/raw";
import { applyHardBounce } from "./bounces";
import type { AttemptRow, EventRow, NextState } from "./next-state";
import { suppressedAmongRaw } from "./suppressions";
import { storeLinks, type FreshLinks } from "./tracked-links";

/** The columns of an email the outbox claims (CLAIMED_COLUMNS). */
export type ClaimedEmail = Pick<
  Selectable<EmailsTable>,
  "id" | "project_id" | "content_id" | "contact_id" | "to_email" | "to_name" | "vars" | "source_type" | "campaign_id" | "template_id" | "message_id" | "attempts" | "sent_at"
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
  /** Puts SENDING rows back in the queue (restart, shutdown, lost leases). Returns how many moved. */
  requeue(now: number, ids: string[] | "all-sending"): Promise<number>;
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
  const exclusive = <T>(fn: (sqlite: Database) => T) => ctx.store.exclusive(fn);
  return {
    claim: (now, leaseUntil, candidates, choose) => exclusive((sqlite) => claimDue(sqlite, now, leaseUntil, candidates, choose)),
    requeue: (now, ids) => exclusive((sqlite) => requeue(sqlite, now, ids)),
    expiredLeases: (now) => exclusive((sqlite) => expiredLeases(sqlite, now)),
    loadContents: (ids) => exclusive((sqlite) => loadContents(sqlite, ids)),
    suppressedAmong: (projectId, emails) => exclusive((sqlite) => suppressedAmongRaw(sqlite, projectId, emails)),
    unsubscribedAmong: (contactIds) => exclusive((sqlite) => unsubscribedAmong(sqlite, contactIds)),
    trackingModes: (projectIds) => exclusive((sqlite) => trackingModes(sqlite, projectIds)),
    postalAddresses: (projectIds) => exclusive((sqlite) => postalAddresses(sqlite, projectIds)),
    cancelledAmong: (campaignIds) => exclusive((sqlite) => cancelledAmong(sqlite, campaignIds)),
    systemSigningProject: (domain) => exclusive((sqlite) => systemSigningProject(sqlite, domain)),
    storeLinks: (projectId, links) => storeLinks(ctx, projectId, links),
    async recordOutcomes(now, outcomes) {
      if (!outcomes.some((o) => o.state.bounce)) return exclusive((sqlite) => writeOutcomes(sqlite, now, outcomes).recorded);
      // A bounce's audience side is Kysely (suppressions, contacts): the whole batch commits in one
      // Kysely transaction, the raw outcome statements running on its connection.
      return ctx.db.transaction().execute(async (trx) => {
        const { recorded, bounced } = writeOutcomes(ctx.store.sqlite, now, outcomes);
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
}

const CLAIMED_COLUMNS =
  "id, project_id, content_id, contact_id, to_email, to_name, vars, source_type, campaign_id, template_id, message_id, attempts, sent_at";

function claimDue(sqlite: Database, now: number, leaseUntil: number, candidates: number, choose: (rows: Candidate[]) => string[]): ClaimedEmail[] {
  return sqlite.transaction(() => {
    // Priority 0 (transactional, workflow, system) before 1 (campaigns): a password reset never
    // waits behind a newsletter. Each is a range seek on emails_due_priority.
    const due = sqlite.query<Candidate, [number, number, number]>(
      "SELECT id, project_id FROM emails WHERE status IN ('PENDING', 'DEFERRED') AND priority = ? AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?",
    );
    const rows = due.all(0, now, candidates);
    if (rows.length < candidates) rows.push(...due.all(1, now, candidates - rows.length));
    if (!rows.length) return [];
    const ids = choose(rows);
    if (!ids.length) return [];
    return sqlite
      .query<ClaimedEmail, [number, number, string]>(
        `UPDATE emails SET status = 'SENDING', lease_until = ?, updated_at = ?
         WHERE id IN (SELECT value FROM json_each(?)) AND status IN ('PENDING', 'DEFERRED')
         RETURNING ${CLAIMED_COLUMNS}`,
      )
      .all(leaseUntil, now, JSON.stringify(ids));
  })();
}

function requeue(sqlite: Database, now: number, ids: string[] | "all-sending"): number {
  const set = `status = CASE WHEN attempts > 0 THEN 'DEFERRED' ELSE 'PENDING' END, lease_until = NULL,
               next_attempt_at = COALESCE(next_attempt_at, ?), updated_at = ?`;
  if (ids === "all-sending") return sqlite.query(`UPDATE emails SET ${set} WHERE status = 'SENDING'`).run(now, now).changes;
  if (!ids.length) return 0;
  return sqlite
    .query(`UPDATE emails SET ${set} WHERE status = 'SENDING' AND id IN (SELECT value FROM json_each(?))`)
    .run(now, now, JSON.stringify(ids)).changes;
}

function expiredLeases(sqlite: Database, now: number): string[] {
  return sqlite
    .query<{ id: string }, [number]>("SELECT id FROM emails WHERE status = 'SENDING' AND lease_until < ? LIMIT 1000")
    .all(now)
    .map((r) => r.id);
}

function loadContents(sqlite: Database, ids: string[]): ContentRow[] {
  return sqlite
    .query<ContentRow, [string]>(
      `SELECT id, project_id, subject, html, text, from_email, from_name, reply_to, type, headers, attachments, no_tracking, track_opens
       FROM email_contents WHERE id IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(ids));
}

function trackingModes(sqlite: Database, projectIds: string[]): Map<string, string> {
  if (!projectIds.length) return new Map();
  const rows = sqlite
    .query<{ id: string; tracking: string }, [string]>("SELECT id, tracking FROM projects WHERE id IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(projectIds));
  return new Map(rows.map((r) => [r.id, r.tracking]));
}

function postalAddresses(sqlite: Database, projectIds: string[]): Map<string, string> {
  if (!projectIds.length) return new Map();
  const rows = sqlite
    .query<{ id: string; postal_address: string }, [string]>("SELECT id, postal_address FROM projects WHERE postal_address IS NOT NULL AND id IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(projectIds));
  return new Map(rows.map((r) => [r.id, r.postal_address]));
}

function unsubscribedAmong(sqlite: Database, contactIds: string[]): Set<string> {
  if (!contactIds.length) return new Set();
  const rows = sqlite
    .query<{ id: string }, [string]>("SELECT id FROM contacts WHERE subscribed = 0 AND id IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(contactIds));
  return new Set(rows.map((r) => r.id));
}

function cancelledAmong(sqlite: Database, campaignIds: string[]): string[] {
  if (!campaignIds.length) return [];
  return sqlite
    .query<{ id: string }, [string]>("SELECT id FROM campaigns WHERE status = 'CANCELLED' AND id IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(campaignIds))
    .map((r) => r.id);
}

function systemSigningProject(sqlite: Database, domain: string): string | null {
  const row = sqlite
    .query<{ project_id: string }, [string]>("SELECT project_id FROM domains WHERE domain = ? AND status = 'VERIFIED' ORDER BY created_at LIMIT 1")
    .get(domain);
  return row?.project_id ?? null;
}

// ---- outcomes ---------------------------------------------------------------------------------

/**
 * Writes a batch of outcomes in one (raw) transaction; inside a caller's transaction it becomes a
 * savepoint. Contact events of every outcome but a bounce are inserted here; the bounces that moved
 * (their row was still SENDING) are returned for their audience side (bounces.ts).
 */
function writeOutcomes(sqlite: Database, now: number, outcomes: Settled[]): { recorded: RecordedEvent[]; bounced: Settled[] } {
  const delivered = sqlite.query(
    // An open or click recorded while the row was SENDING (a scanner faster than our commit) keeps its status.
    `UPDATE emails SET status = CASE WHEN clicked_at IS NOT NULL THEN 'CLICKED' WHEN opened_at IS NOT NULL THEN 'OPENED' ELSE ? END,
       attempts = attempts + 1, sent_at = COALESCE(sent_at, ?),
       delivered_at = CASE WHEN ? = 'DELIVERED' THEN ? ELSE delivered_at END,
       last_reply = ?, mx_host = ?, lease_until = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const deferredQ = sqlite.query(
    `UPDATE emails SET status = 'DEFERRED', attempts = attempts + 1, sent_at = COALESCE(sent_at, ?),
       last_reply = ?, mx_host = COALESCE(?, mx_host), lease_until = NULL, next_attempt_at = ?, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const failedQ = sqlite.query(
    `UPDATE emails SET status = 'FAILED', attempts = attempts + 1, sent_at = COALESCE(sent_at, ?), failed_at = ?,
       last_reply = ?, mx_host = COALESCE(?, mx_host), lease_until = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const bouncedQ = sqlite.query(
    `UPDATE emails SET status = 'BOUNCED', attempts = attempts + 1, sent_at = COALESCE(sent_at, ?), bounced_at = ?,
       last_reply = ?, mx_host = COALESCE(?, mx_host), lease_until = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const suppressedQ = sqlite.query(
    `UPDATE emails SET status = 'SUPPRESSED', last_reply = ?, lease_until = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const cancelledQ = sqlite.query(
    `UPDATE emails SET status = 'CANCELLED', last_reply = ?, lease_until = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const recorded: RecordedEvent[] = [];
  const bounced: Settled[] = [];
  sqlite.transaction(() => {
    for (const o of outcomes) {
      const s = o.state;
      switch (s.status) {
        case "DELIVERED":
        case "SENT":
          delivered.run(s.status, now, s.status, now, s.reply, s.host, now, s.id);
          break;
        case "DEFERRED":
          deferredQ.run(now, s.reply, s.host, s.nextAttemptAt ?? now, now, s.id);
          break;
        case "FAILED":
          failedQ.run(now, now, s.reply, s.host, now, s.id);
          break;
        case "BOUNCED":
          if (bouncedQ.run(now, now, s.reply, s.host, now, s.id).changes) bounced.push(o);
          continue; // its events are recorded with its audience side
        case "SUPPRESSED":
          suppressedQ.run(s.reply, now, s.id);
          break;
        case "CANCELLED":
          cancelledQ.run(s.reply, now, s.id);
          break;
      }
      for (const e of s.events) {
        const eventId = insertEventRaw(sqlite, now, e);
        recorded.push({ projectId: e.projectId, contactId: e.contactId, eventId, name: e.name, data: e.data });
      }
    }
  })();
  return { recorded, bounced };
}

/** Emails per status, for the /metrics gauges (synchronous: read while the scrape is answered). */
export function emailStatusCounts(sqlite: Database): Record<string, number> {
  const rows = sqlite.query<{ status: string; n: number }, []>("SELECT status, count(*) AS n FROM emails GROUP BY status").all();
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

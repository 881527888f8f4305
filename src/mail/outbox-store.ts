// SQL of the outbox. The hot path (claim, outcomes) runs as raw prepared statements inside
// ctx.store.exclusive: thousands of rows a second through Kysely would cost a large share of the
// main thread. Everything is scoped by email id; ids come from rows this process claimed.
import type { Database } from "bun:sqlite";
import type { Selectable } from "kysely";
import type { EmailContentsTable, EmailsTable } from "../db/tables/delivery";
import { insertEventRaw, type RecordedEvent } from "./deps";

/** The columns of an email the outbox claims (CLAIMED_COLUMNS). */
export type ClaimedEmail = Pick<
  Selectable<EmailsTable>,
  "id" | "project_id" | "content_id" | "contact_id" | "to_email" | "to_name" | "vars" | "source_type" | "campaign_id" | "template_id" | "message_id" | "attempts" | "sent_at"
>;

export type ContentRow = Omit<Selectable<EmailContentsTable>, "created_at" | "no_tracking"> & { no_tracking?: number };

const CLAIMED_COLUMNS =
  "id, project_id, content_id, contact_id, to_email, to_name, vars, source_type, campaign_id, template_id, message_id, attempts, sent_at";

/**
 * Claims due emails: picks candidates in due order, lets `choose` apply per-project fairness and
 * rates, and moves the chosen ones to SENDING with a lease, in one transaction.
 */
export function claimDue(
  sqlite: Database,
  now: number,
  leaseUntil: number,
  candidates: number,
  choose: (rows: { id: string; project_id: string | null }[]) => string[],
): ClaimedEmail[] {
  return sqlite.transaction(() => {
    // Priority 0 (transactional, workflow, system) before 1 (campaigns): a password reset never
    // waits behind a newsletter. Each is a range seek on emails_due_priority.
    const due = sqlite.query<{ id: string; project_id: string | null }, [number, number, number]>(
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

/** Puts rows back in the queue (restart, shutdown, lost leases). Returns how many moved. */
export function requeue(sqlite: Database, now: number, ids: string[] | "all-sending"): number {
  const set = `status = CASE WHEN attempts > 0 THEN 'DEFERRED' ELSE 'PENDING' END, lease_until = NULL,
               next_attempt_at = COALESCE(next_attempt_at, ?), updated_at = ?`;
  if (ids === "all-sending") return sqlite.query(`UPDATE emails SET ${set} WHERE status = 'SENDING'`).run(now, now).changes;
  if (!ids.length) return 0;
  return sqlite
    .query(`UPDATE emails SET ${set} WHERE status = 'SENDING' AND id IN (SELECT value FROM json_each(?))`)
    .run(now, now, JSON.stringify(ids)).changes;
}

/** SENDING rows whose lease ran out. */
export function expiredLeases(sqlite: Database, now: number): string[] {
  return sqlite
    .query<{ id: string }, [number]>("SELECT id FROM emails WHERE status = 'SENDING' AND lease_until < ? LIMIT 1000")
    .all(now)
    .map((r) => r.id);
}

export function loadContents(sqlite: Database, ids: string[]): ContentRow[] {
  return sqlite
    .query<ContentRow, [string]>(
      `SELECT id, project_id, subject, html, text, from_email, from_name, reply_to, type, headers, attachments, no_tracking
       FROM email_contents WHERE id IN (SELECT value FROM json_each(?))`,
    )
    .all(JSON.stringify(ids));
}

/** The addresses among `emails` that are suppressed in the project. */
export function suppressedAmong(sqlite: Database, projectId: string, emails: string[]): Set<string> {
  const rows = sqlite
    .query<{ email: string }, [string, string]>(
      "SELECT email FROM suppressions WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))",
    )
    .all(projectId, JSON.stringify(emails));
  return new Set(rows.map((r) => r.email));
}

/** The tracking mode of each project (once per claimed batch, instead of a query per message). */
export function trackingModes(sqlite: Database, projectIds: string[]): Map<string, string> {
  const rows = sqlite
    .query<{ id: string; tracking: string }, [string]>("SELECT id, tracking FROM projects WHERE id IN (SELECT value FROM json_each(?))")
    .all(JSON.stringify(projectIds));
  return new Map(rows.map((r) => [r.id, r.tracking]));
}

/** The project whose VERIFIED domain `domain` signs the server's own account emails (SYSTEM source), if any. */
export function systemSigningProject(sqlite: Database, domain: string): string | null {
  try {
    const row = sqlite
      .query<{ project_id: string }, [string]>("SELECT project_id FROM domains WHERE domain = ? AND status = 'VERIFIED' ORDER BY created_at LIMIT 1")
      .get(domain);
    return row?.project_id ?? null;
  } catch {
    return null; // no domains table (yet)
  }
}

// ---- outcomes ---------------------------------------------------------------------------------

/** A contact event of an outcome (email.sent, email.delivery, email.bounce). */
export interface EventRow {
  projectId: string;
  contactId: string;
  name: string;
  data: Record<string, unknown>;
  emailId: string;
}

export type OutcomeWrite =
  | { kind: "DELIVERED" | "SENT"; id: string; reply: string; host: string | null }
  | { kind: "DEFERRED"; id: string; reply: string; host: string | null; nextAttemptAt: number }
  | { kind: "FAILED"; id: string; reply: string; host: string | null }
  | { kind: "SUPPRESSED"; id: string; reply: string };

/**
 * Writes a batch of non-bounce outcomes and their contact events in one transaction.
 * Only rows still SENDING change (a row cancelled or handled elsewhere meanwhile is left alone).
 */
export function writeOutcomes(sqlite: Database, now: number, outcomes: OutcomeWrite[], events: EventRow[]): RecordedEvent[] {
  const delivered = sqlite.query(
    `UPDATE emails SET status = ?, attempts = attempts + 1, sent_at = COALESCE(sent_at, ?),
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
  const suppressedQ = sqlite.query(
    `UPDATE emails SET status = 'SUPPRESSED', last_reply = ?, lease_until = NULL, next_attempt_at = NULL, updated_at = ?
     WHERE id = ? AND status = 'SENDING'`,
  );
  const recorded: RecordedEvent[] = [];
  sqlite.transaction(() => {
    for (const o of outcomes) {
      switch (o.kind) {
        case "DELIVERED":
        case "SENT":
          delivered.run(o.kind, now, o.kind, now, o.reply, o.host, now, o.id);
          break;
        case "DEFERRED":
          deferredQ.run(now, o.reply, o.host, o.nextAttemptAt, now, o.id);
          break;
        case "FAILED":
          failedQ.run(now, now, o.reply, o.host, now, o.id);
          break;
        case "SUPPRESSED":
          suppressedQ.run(o.reply, now, o.id);
          break;
      }
    }
    for (const e of events) {
      const eventId = insertEventRaw(sqlite, now, e);
      recorded.push({ projectId: e.projectId, contactId: e.contactId, eventId, name: e.name, data: e.data });
    }
  })();
  return recorded;
}

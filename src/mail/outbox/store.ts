// The delivery engine's queries that are not on the outbox's hot path (those are outbox-store.ts):
// sending reputation and tracking settings. Kysely, written so a Postgres dialect could run them.
import { sql, type Kysely } from "kysely";
import type { DB } from "../../db";
import type { EmailStatus } from "../../db/tables/delivery";
import { afterFeedback } from "./next-state";

export interface ReputationCounts {
  sent: number;
  bounced: number;
  complained: number;
  disabled: boolean;
  disabledReason: string | null;
  updatedAt: number | null;
}

/**
 * Sends, bounces and complaints of the project since `since` (emails are scanned from the id of a day
 * earlier: ids are time-ordered UUIDv7), with the project's suspension state.
 */
export async function reputationCounts(db: Kysely<DB>, projectId: string, since: number, fromId: string): Promise<ReputationCounts> {
  const count = (col: "sent_at" | "bounced_at" | "complained_at") => sql<number | null>`SUM(CASE WHEN ${sql.ref(col)} >= ${since} THEN 1 ELSE 0 END)`;
  const [row, project] = await Promise.all([
    db
      .selectFrom("emails")
      .select([count("sent_at").as("sent"), count("bounced_at").as("bounced"), count("complained_at").as("complained")])
      .where("project_id", "=", projectId)
      .where("id", ">=", fromId)
      .where("sandbox", "=", 0) // captured by the sandbox: never sent, not the project's reputation
      .executeTakeFirst(),
    db.selectFrom("projects").select(["disabled", "disabled_reason", "updated_at"]).where("id", "=", projectId).executeTakeFirst(),
  ]);
  return {
    sent: Number(row?.sent ?? 0),
    bounced: Number(row?.bounced ?? 0),
    complained: Number(row?.complained ?? 0),
    disabled: !!project?.disabled,
    disabledReason: project?.disabled_reason ?? null,
    updatedAt: project?.updated_at ?? null,
  };
}

/** Disables an enabled project with `reason`. True when it changed. */
export async function disableProject(db: Kysely<DB>, projectId: string, reason: string, now: number): Promise<boolean> {
  const r = await db
    .updateTable("projects")
    .set({ disabled: 1, disabled_reason: reason, updated_at: now })
    .where("id", "=", projectId)
    .where("disabled", "=", 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** The project's tracking mode and the email's sender address (null when the email is not the project's). */
export async function trackingSettings(db: Kysely<DB>, projectId: string, emailId: string): Promise<{ mode: string; fromEmail: string | null; postalAddress: string | null } | null> {
  const row = await db
    .selectFrom("projects as p")
    .leftJoin("emails as e", (j) => j.on("e.id", "=", emailId).onRef("e.project_id", "=", "p.id"))
    .leftJoin("email_contents as c", "c.id", "e.content_id")
    .select(["p.tracking as tracking", "c.from_email as from_email", "p.postal_address as postal_address"])
    .where("p.id", "=", projectId)
    .executeTakeFirst();
  return row ? { mode: row.tracking, fromEmail: row.from_email, postalAddress: row.postal_address ?? null } : null;
}

// ---- the email row after its attempts: every status change here goes through afterFeedback ----------

type Db = Kysely<DB>;

/** First open or click of an email in `status`: its times, and its status when afterFeedback moves it. */
export async function markEngaged(
  db: Db,
  e: { id: string; status: string; opened_at: number | null; clicked_at?: number | null },
  kind: "open" | "click",
  now: number,
): Promise<void> {
  const next = afterFeedback(e.status, kind);
  const times =
    kind === "open" ? { opened_at: e.opened_at ?? now } : { opened_at: e.opened_at ?? now, clicked_at: e.clicked_at ?? now };
  await db
    .updateTable("emails")
    .set({ ...times, updated_at: now, ...(next ? { status: next as EmailStatus } : {}) })
    .where("id", "=", e.id)
    .execute();
}

/** A report that arrived after the attempt: bounce (permanent), complaint or delivery (a relay's success DSN). False when the status does not move. */
export async function markReported(
  db: Db,
  e: { id: string; status: string },
  kind: "bounce" | "complaint" | "delivered-report",
  now: number,
  reply?: string,
): Promise<boolean> {
  const next = afterFeedback(e.status, kind);
  if (!next) return false;
  const at = kind === "bounce" ? { bounced_at: now, last_reply: reply ?? "async DSN: permanent failure" } : kind === "complaint" ? { complained_at: now } : { delivered_at: now };
  await db.updateTable("emails").set({ status: next as EmailStatus, ...at, updated_at: now }).where("id", "=", e.id).execute();
  return true;
}

/** A transient report after the attempt: only the last reply changes. */
export async function noteReply(db: Db, id: string, reply: string, now: number): Promise<void> {
  await db.updateTable("emails").set({ last_reply: reply, updated_at: now }).where("id", "=", id).execute();
}

/** A cancelled campaign's emails still waiting in the queue (afterFeedback "cancel": PENDING, DEFERRED). */
export async function cancelQueuedOfCampaign(db: Db, campaignId: string, now: number): Promise<number> {
  const r = await db
    .updateTable("emails")
    .set({ status: "CANCELLED", next_attempt_at: null, updated_at: now })
    .where("campaign_id", "=", campaignId)
    .where("status", "in", ["PENDING", "DEFERRED"].filter((s) => afterFeedback(s, "cancel")) as EmailStatus[])
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

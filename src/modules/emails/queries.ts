import { countRows } from "../../db/count";
import type { Kysely } from "kysely";
import type { DB } from "../../db";
import type { EmailStatus } from "../../db/tables/delivery";

export interface EmailFilters {
  contactId?: string;
  campaignId?: string;
  status?: EmailStatus;
  to?: string;
}

const COLUMNS = [
  "e.id",
  "e.to_email",
  "e.to_name",
  "e.vars",
  "e.status",
  "e.source_type",
  "e.contact_id",
  "e.campaign_id",
  "e.template_id",
  "e.attempts",
  "e.last_reply",
  "e.mx_host",
  "e.message_id",
  "e.created_at",
  "e.updated_at",
  "e.sent_at",
  "e.delivered_at",
  "e.opened_at",
  "e.clicked_at",
  "e.bounced_at",
  "e.complained_at",
  "e.failed_at",
  "e.next_attempt_at",
  "e.sandbox",
  "c.subject",
  "c.from_email",
  "c.from_name",
  "c.type",
] as const;

function filtered(db: Kysely<DB>, projectId: string, f: EmailFilters) {
  let q = db.selectFrom("emails as e").where("e.project_id", "=", projectId);
  if (f.contactId) q = q.where("e.contact_id", "=", f.contactId);
  if (f.campaignId) q = q.where("e.campaign_id", "=", f.campaignId);
  if (f.status) q = q.where("e.status", "=", f.status);
  if (f.to) q = q.where("e.to_email", "=", f.to.trim().toLowerCase());
  return q;
}

/** Newest first by id (UUIDv7 is time-ordered): the cursor is the last id seen. */
export function listEmails(db: Kysely<DB>, projectId: string, f: EmailFilters, afterId: string | null, limit: number) {
  let q = filtered(db, projectId, f).innerJoin("email_contents as c", "c.id", "e.content_id").select(COLUMNS);
  if (afterId) q = q.where("e.id", "<", afterId);
  return q.orderBy("e.id", "desc").limit(limit + 1).execute();
}

export async function countEmails(db: Kysely<DB>, projectId: string, f: EmailFilters): Promise<number> {
  return countRows(filtered(db, projectId, f));
}

export function getEmail(db: Kysely<DB>, projectId: string, id: string) {
  return db
    .selectFrom("emails as e")
    .innerJoin("email_contents as c", "c.id", "e.content_id")
    .select(COLUMNS)
    .where("e.project_id", "=", projectId)
    .where("e.id", "=", id)
    .executeTakeFirst();
}

export type EmailLogRow = NonNullable<Awaited<ReturnType<typeof getEmail>>>;

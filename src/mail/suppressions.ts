// The suppression list's data: who must never be mailed again in a project (hard bounces,
// complaints) and how an address gets there. One lookup, in two flavours: Kysely (inside a
// caller's transaction) and its raw sibling for the hot paths (/v1/send, the outbox claim;
// benchmarked by scripts/bench/send.ts), which must run inside ctx.store.exclusive.
import type { Q } from "../db/raw";
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../db";
import { normalizeEmail } from "./address";

type Db = Kysely<DB> | Transaction<DB>;

/** The reply stored on an email that was never attempted because its address is suppressed. */
export const SUPPRESSED_REPLY = "address is suppressed (earlier hard bounce or complaint)";

/** The addresses among `emails` (lower-case) that are suppressed in the project. */
export async function suppressedAmong(db: Db, projectId: string, emails: string[]): Promise<Set<string>> {
  if (!emails.length) return new Set();
  const rows = await db.selectFrom("suppressions").select("email").where("project_id", "=", projectId).where("email", "in", emails).execute();
  return new Set(rows.map((r) => r.email));
}

/** suppressedAmong as one raw statement (hot path). */
export async function suppressedAmongRaw(q: Q, projectId: string, emails: string[]): Promise<Set<string>> {
  if (!emails.length) return new Set();
  const rows =
    emails.length === 1
      ? await q.all<{ email: string }>("SELECT email FROM suppressions WHERE project_id = ? AND email = ?", [projectId, emails[0]!])
      : await q.all<{ email: string }>("SELECT email FROM suppressions WHERE project_id = ? AND email IN (SELECT value FROM json_each(?))", [projectId, JSON.stringify(emails)]);
  return new Set(rows.map((r) => r.email));
}

export interface Suppression {
  projectId: string;
  email: string;
  reason: "bounce" | "complaint";
  detail: string | null;
  emailId: string;
  now: number;
}

/** Adds an address to the project's suppression list (the first reason stays). */
export async function suppress(db: Db, s: Suppression): Promise<void> {
  await db
    .insertInto("suppressions")
    .values({ project_id: s.projectId, email: normalizeEmail(s.email), reason: s.reason, detail: s.detail, email_id: s.emailId, created_at: s.now })
    .onConflict((oc) => oc.columns(["project_id", "email"]).doNothing())
    .execute();
}

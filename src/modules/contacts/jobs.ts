/** Job status of imports and bulk operations: `{ id, type, state, progress, result }` (docs/api.md "Contacts and events", Job status). */
import type { Selectable } from "kysely";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import type { JobsTable } from "../../db/tables/foundation";
import { notFound } from "../../http/errors";

export interface RowError {
  row: number;
  email: string | null;
  error: string;
  contactId?: string;
}

export interface JobResult {
  total: number;
  succeeded: number;
  created: number;
  updated: number;
  failed: number;
  errors: RowError[];
}

/** At most this many row errors are kept per job (`failed` still counts all of them). */
export const MAX_REPORTED_ERRORS = 1000;

export const emptyResult = (total = 0): JobResult => ({ total, succeeded: 0, created: 0, updated: 0, failed: 0, errors: [] });

export const JOB_TYPES = {
  import: "contacts.import",
  "bulk-subscribe": "contacts.bulk-subscribe",
  "bulk-unsubscribe": "contacts.bulk-unsubscribe",
  "bulk-delete": "contacts.bulk-delete",
} as const;
export type PublicJobType = keyof typeof JOB_TYPES;

const PUBLIC_TYPE = Object.fromEntries(Object.entries(JOB_TYPES).map(([k, v]) => [v, k])) as Record<string, PublicJobType>;

/**
 * A job of this project whose type is one of `types`; anything else (other project, other kind,
 * unknown id) is 404. `partial` turns a running job's checkpoint into its result so far.
 */
export async function jobStatus(
  ctx: AppContext,
  projectId: string,
  jobId: string,
  types: readonly string[],
  partial: (row: Selectable<JobsTable>) => JobResult,
) {
  const row = await ctx.db
    .selectFrom("jobs")
    .selectAll()
    .where("id", "=", jobId)
    .where("project_id", "=", projectId)
    .where("type", "in", types)
    .executeTakeFirst();
  if (!row) throw notFound("Job");
  const result: JobResult = row.state === "completed" && row.result ? JSON.parse(row.result) : partial(row);
  return {
    id: row.id,
    type: PUBLIC_TYPE[row.type] ?? row.type,
    state: row.state as "waiting" | "active" | "completed" | "failed",
    progress: row.state === "completed" ? 100 : row.progress,
    result,
    ...(row.state === "failed" ? { error: row.error } : {}),
    createdAt: iso(row.created_at),
    finishedAt: iso(row.finished_at),
  };
}

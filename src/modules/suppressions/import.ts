/**
 * POST /suppressions/import: a CSV with an `email` column; every valid address becomes a MANUAL
 * suppression (source IMPORT with the job id). The contact import's machinery: the upload checks,
 * the stored file (contact_imports, keyed by job id), the durable job and its status shape. The job
 * commits 500 rows per transaction with its checkpoint (rows done and counts), so a restart resumes
 * after the last committed chunk; a replayed row finds its address present (no second row, no second webhook).
 */
import { queueCsvJob } from "../contacts/import";
import { parse } from "csv-parse/sync";
import type { AppContext } from "../../context";
import { validationError } from "../../http/errors";
import type { JobRunContext } from "../../jobs/queue";
import { isValidEmail, normalizeEmail } from "../../net/email-address";
import { suppress, suppressionEndpoints } from "../../mail/outbox/suppressions";
import { emptyResult, MAX_REPORTED_ERRORS, type JobResult } from "../contacts/jobs";

export const SUPPRESSION_IMPORT_JOB = "suppressions.import";
const CHUNK = 500;

interface Checkpoint {
  rows: number;
  total: number;
  /** Newly suppressed. */
  created: number;
  /** Already on the list (left as it was). */
  updated: number;
  failed: number;
  errors: JobResult["errors"];
}

export const importResult = (cp: Checkpoint | null): JobResult =>
  cp ? { total: cp.total, succeeded: cp.created + cp.updated, created: cp.created, updated: cp.updated, failed: cp.failed, errors: cp.errors } : emptyResult();

function records(content: string): string[][] {
  return parse(content, { bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true }) as string[][];
}

/** 422 for an empty file, unreadable CSV or no `email` column. */
function emailColumn(content: string): number {
  if (!content.trim()) throw validationError([{ field: "file", message: "The file is empty", code: "too_small" }]);
  let header: string[] | undefined;
  try {
    header = (parse(content.slice(0, 65536), { bom: true, to_line: 1, relax_column_count: true, relax_quotes: true }) as string[][])[0];
  } catch (e) {
    throw validationError([{ field: "file", message: `The header row is not valid CSV: ${(e as Error).message}`, code: "invalid_csv" }]);
  }
  const i = (header ?? []).map((h) => String(h ?? "").trim().toLowerCase()).indexOf("email");
  if (i < 0) throw validationError([{ field: "file", message: "The header row must have an `email` column", code: "missing_email_column" }]);
  return i;
}

export async function startSuppressionImport(ctx: AppContext, projectId: string, file: { name: string | null; content: string; size: number }) {
  emailColumn(file.content);
  try {
    records(file.content);
  } catch (e) {
    throw validationError([{ field: "file", message: `The file is not valid CSV: ${(e as Error).message}`, code: "invalid_csv" }]);
  }
  return queueCsvJob(ctx, projectId, SUPPRESSION_IMPORT_JOB, file);
}

export async function runSuppressionImport(ctx: AppContext, job: JobRunContext<{ filename?: string }, Checkpoint>): Promise<JobResult> {
  const projectId = job.projectId!;
  const file = await ctx.db.selectFrom("contact_imports").select(["content"]).where("job_id", "=", job.id).executeTakeFirst();
  if (!file) {
    if (job.checkpoint) return importResult(job.checkpoint);
    throw new Error("The uploaded file of this import is gone");
  }
  const col = emailColumn(file.content);
  const rows = records(file.content).slice(1);
  const cp: Checkpoint = job.checkpoint ?? { rows: 0, total: rows.length, created: 0, updated: 0, failed: 0, errors: [] };
  const fail = (row: number, email: string | null, error: string) => {
    cp.failed++;
    if (cp.errors.length < MAX_REPORTED_ERRORS) cp.errors.push({ row, email, error });
  };
  while (cp.rows < rows.length) {
    const start = cp.rows;
    const chunk = rows.slice(start, start + CHUNK);
    const now = ctx.clock.now();
    await ctx.db.transaction().execute(async (trx) => {
      const endpoints = await suppressionEndpoints(trx, projectId);
      for (let i = 0; i < chunk.length; i++) {
        const row = start + i + 2; // the header is row 1
        const raw = (chunk[i]![col] ?? "").trim();
        if (!raw) fail(row, null, "Missing email");
        else if (!isValidEmail(raw)) fail(row, raw, "Invalid email");
        else if (await suppress(trx, { projectId, email: normalizeEmail(raw), reason: "MANUAL", detail: null, source: "IMPORT", jobId: job.id, now }, endpoints)) cp.created++;
        else cp.updated++;
      }
      cp.rows = start + chunk.length;
      if (cp.rows >= rows.length) await trx.deleteFrom("contact_imports").where("job_id", "=", job.id).execute();
    });
    await job.save(cp.rows >= rows.length ? 100 : Math.min(99, Math.floor((cp.rows / Math.max(1, rows.length)) * 100)), cp);
  }
  if (!rows.length) await ctx.db.deleteFrom("contact_imports").where("job_id", "=", job.id).execute();
  return importResult(cp);
}

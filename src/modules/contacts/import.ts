import { deleteImportFile } from "./queries";
/**
 * CSV import: the upload is checked (size, header with an `email` column, usable column names) and
 * stored with its job in one transaction; the durable job streams the file through csv-parse and
 * commits 1,000 rows per transaction together with its checkpoint (rows done, counts, errors), so
 * a restart, a crash or a shutdown resumes exactly after the last committed chunk: every row is
 * applied once. Columns: `email` (required), `subscribed` (true/1/yes/y or false/0/no/n; empty
 * keeps an existing contact's state, new contacts are subscribed), every other column a string in
 * `data` (the data rules apply: an empty cell does not overwrite).
 */
import { atomic, type Q } from "../../db/raw";
import { parse, type Options } from "csv-parse";
import { parse as parseSync } from "csv-parse/sync";
import { Readable } from "node:stream";
import type { AppContext } from "../../context";
import { isValidDataKey, RESERVED_DATA_KEYS, type Data } from "../../audience/data-rules";
import { notifyEvents, type RecordedEvent } from "../../audience/events";
import { contactsChanged } from "../../audience/changes";
import { upsertContactRaw } from "../../audience/raw";
import { validationError, type FieldError } from "../../http/errors";
import type { JobRunContext } from "../../jobs/queue";
import { isValidEmail } from "../../net/email-address";
import { emptyResult, JOB_TYPES, MAX_REPORTED_ERRORS, type JobResult } from "./jobs";

export const MAX_IMPORT_BYTES = 5 * 1024 * 1024;
export const IMPORT_CHUNK_ROWS = 1000;

interface Columns {
  email: number;
  subscribed: number;
  /** [cell index, data key] */
  data: Array<[number, string]>;
}

function columnsOf(header: unknown[]): { columns: Columns | null; errors: FieldError[] } {
  const names = header.map((h) => String(h ?? "").trim());
  const lower = names.map((n) => n.toLowerCase());
  const email = lower.indexOf("email");
  const errors: FieldError[] = [];
  if (email < 0) {
    errors.push({ field: "file", message: "The header row must have an `email` column", code: "missing_email_column", received: names.slice(0, 50).join(",") });
  }
  const subscribed = lower.indexOf("subscribed");
  const data: Array<[number, string]> = [];
  names.forEach((n, i) => {
    if (i === email || i === subscribed || n === "" || RESERVED_DATA_KEYS.has(n)) return;
    if (!isValidDataKey(n)) {
      errors.push({ field: "file", message: `Column name "${n.slice(0, 100)}" cannot be a field name`, code: "invalid_column", received: n.slice(0, 200) });
      return;
    }
    data.push([i, n]);
  });
  return { columns: errors.length ? null : { email, subscribed, data }, errors };
}

/** Checks an upload before it is stored: 422 for an empty file, an unreadable header or no `email` column. */
export function checkUpload(content: string): void {
  if (!content.trim()) throw validationError([{ field: "file", message: "The file is empty", code: "too_small" }]);
  let header: unknown[] | undefined;
  try {
    const first = parseSync(content.slice(0, 65536), { bom: true, to_line: 1, relax_column_count: true, relax_quotes: true }) as unknown[][];
    header = first[0];
  } catch (e) {
    throw validationError([{ field: "file", message: `The header row is not valid CSV: ${(e as Error).message}`, code: "invalid_csv" }]);
  }
  const { errors } = columnsOf(header ?? []);
  if (errors.length) throw validationError(errors);
}

/** Stores the file and queues its job in one transaction. Returns the job id. */
export async function startImport(ctx: AppContext, projectId: string, file: UploadedCsv) {
  checkUpload(file.content);
  return queueCsvJob(ctx, projectId, JOB_TYPES.import, file);
}

export type UploadedCsv = { name: string | null; content: string; size: number };

/** Stores an uploaded CSV (contact_imports) and queues the job of `jobType` that reads it, in one transaction. */
export async function queueCsvJob(ctx: AppContext, projectId: string, jobType: string, file: UploadedCsv): Promise<string> {
  const jobId = await ctx.db.transaction().execute(async (trx) => {
    const id = await ctx.jobs.enqueue(jobType, { filename: file.name }, { projectId, trx, maxAttempts: 10 });
    await trx
      .insertInto("contact_imports")
      .values({ job_id: id, project_id: projectId, filename: file.name, size: file.size, content: file.content, created_at: ctx.clock.now() })
      .execute();
    return id;
  });
  ctx.jobs.wake();
  return jobId;
}

// ---- the job ---------------------------------------------------------------------------------------

export interface ImportCheckpoint {
  /** Readable data records already committed (they are skipped on resume). */
  rows: number;
  /** Unreadable rows already reported (they are not reported again on resume). */
  skipped: number;
  /** Data rows in the file (counted once, on the first run). */
  total: number;
  created: number;
  updated: number;
  failed: number;
  errors: JobResult["errors"];
  /** The last chunk is committed and the file deleted. */
  done?: boolean;
}

export function importResult(cp: ImportCheckpoint | null): JobResult {
  if (!cp) return emptyResult();
  return { total: cp.total, succeeded: cp.created + cp.updated, created: cp.created, updated: cp.updated, failed: cp.failed, errors: cp.errors };
}

const stopping = new WeakSet<AppContext>();
/** Module stop: running imports stop after their current chunk and resume on the next start. */
export const interruptImports = (ctx: AppContext) => stopping.add(ctx);

const PARSE_OPTIONS: Options = { bom: true, relax_column_count: true, skip_empty_lines: true, skip_records_with_error: true };

function* slices(s: string, size = 64 * 1024) {
  for (let i = 0; i < s.length; i += size) yield s.slice(i, i + size);
}

/** Where csv-parse is in the file: records emitted (header included) and blank lines passed. */
interface ParseInfo {
  records?: number;
  empty_lines?: number;
}

/**
 * Records of the file, header first, each with its spreadsheet row (header = row 1): the rows before
 * it are the records read, the blank lines skipped and the unreadable rows skipped (a quoted cell
 * spanning lines is one row). Rows csv-parse cannot read are reported through `onSkip` with their row.
 */
async function* records(content: string, onSkip: (row: number, message: string) => void): AsyncIterable<{ cells: string[]; row: number }> {
  let skipped = 0;
  const rowOf = (info: ParseInfo | undefined, extra: number) => (info?.records ?? 0) + (info?.empty_lines ?? 0) + skipped + extra;
  const parser = Readable.from(slices(content)).pipe(
    parse({
      ...PARSE_OPTIONS,
      info: true,
      on_skip: (err) => {
        // The error carries the parser's counters at the unreadable record (which is not counted yet).
        onSkip(rowOf(err as unknown as ParseInfo, 1), err?.message ?? "unreadable row");
        skipped++;
        return undefined;
      },
    }),
  );
  for await (const rec of parser as AsyncIterable<{ record: string[]; info: ParseInfo }>) {
    yield { cells: rec.record, row: rowOf(rec.info, 0) };
  }
}

const progressOf = (cp: ImportCheckpoint) => (cp.total ? Math.min(99, Math.floor(((cp.rows + cp.skipped) / cp.total) * 100)) : 0);

const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

const TRUE = new Set(["true", "1", "yes", "y"]);
const FALSE = new Set(["false", "0", "no", "n"]);

interface Row {
  /** Spreadsheet row number (the header is row 1). */
  row: number;
  cells: string[];
}

async function applyRow(guard: boolean, q: Q, now: number, projectId: string, cols: Columns, r: Row, cp: ImportCheckpoint, events: RecordedEvent[], written: string[] = []) {
  const fail = (email: string | null, error: string) => {
    cp.failed++;
    if (cp.errors.length < MAX_REPORTED_ERRORS) cp.errors.push({ row: r.row, email, error });
  };
  const rawEmail = (r.cells[cols.email] ?? "").trim();
  if (!rawEmail) return fail(null, "Missing email");
  if (!isValidEmail(rawEmail)) return fail(rawEmail, "Invalid email");
  let subscribed: boolean | undefined;
  if (cols.subscribed >= 0) {
    const v = (r.cells[cols.subscribed] ?? "").trim().toLowerCase();
    if (TRUE.has(v)) subscribed = true;
    else if (FALSE.has(v)) subscribed = false;
    else if (v !== "") return fail(rawEmail, `Invalid subscribed value "${v.slice(0, 50)}" (use true/false, 1/0 or yes/no)`);
  }
  const data: Data = {};
  for (const [i, key] of cols.data) {
    const v = r.cells[i];
    if (v !== undefined) data[key] = v.trim();
  }
  let res;
  // A failing statement is rolled back on its own (SQLite) or to the row's savepoint (PostgreSQL, where
  // an error aborts the whole transaction; `guard`: the chunk's second try, after its fast one failed);
  // the row is reported and the chunk goes on.
  const pg = guard && q.engine === "postgres";
  try {
    if (pg) await q.run("SAVEPOINT import_row");
    res = await upsertContactRaw(q, now, { projectId, email: rawEmail, subscribed, defaultSubscribed: true, data, source: "import" });
    if (pg) await q.run("RELEASE SAVEPOINT import_row");
  } catch (e) {
    if (pg) await q.run("ROLLBACK TO SAVEPOINT import_row");
    return fail(rawEmail, `Could not import this row: ${(e as Error).message}`);
  }
  if (res.isNew) cp.created++;
  else cp.updated++;
  events.push(...res.events);
  written.push(res.contact.id);
}

class Superseded extends Error {
  constructor() {
    super("This import run was superseded by another run of the same job");
  }
}

export async function runImport(ctx: AppContext, job: JobRunContext<{ filename?: string }, ImportCheckpoint>): Promise<JobResult> {
  const projectId = job.projectId!;
  let cp: ImportCheckpoint | null = job.checkpoint;
  const file = await ctx.db.selectFrom("contact_imports").select(["content"]).where("job_id", "=", job.id).executeTakeFirst();
  if (!file) {
    if (cp?.done) return importResult(cp); // finished just before a restart
    throw new Error("The uploaded file of this import is gone");
  }
  const content = file.content;

  if (!cp) {
    let total = 0;
    let skipped = 0;
    for await (const _ of records(content, () => skipped++)) total++;
    cp = { rows: 0, skipped: 0, total: Math.max(0, total - 1) + skipped, created: 0, updated: 0, failed: 0, errors: [] };
    if (!(await job.startCheckpoint(cp))) throw new Error("This import run was superseded by another run of the same job");
  }
  const state = cp;
  const resumeAt = state.rows;
  const skipsDone = state.skipped;
  let skipsSeen = 0;

  let index = -1; // record index: 0 is the header
  let cols: Columns | null = null;
  let batch: Row[] = [];
  let skipErrors: Array<{ row: number; message: string }> = [];
  const source = records(content, (row, message) => {
    // Rows csv-parse could not read count as processed rows with an error (once, not again on resume).
    if (++skipsSeen > skipsDone) skipErrors.push({ row, message });
  });

  const commit = async (final: boolean) => {
    const events: RecordedEvent[] = [];
    const written: string[] = [];
    const rows = batch;
    const skips = skipErrors;
    batch = [];
    skipErrors = [];
    const now = ctx.clock.now();
    const expected = { rows: state.rows, skipped: state.skipped };
    const before = structuredClone(state);
    const run = (guard: boolean) => atomic(ctx.db, ctx.store.engine, async (q) => {
        for (const r of rows) {
          await applyRow(guard, q, now, projectId, cols!, r, state, events, written);
          state.rows++;
        }
        for (const s of skips) {
          state.failed++;
          state.skipped++;
          if (state.errors.length < MAX_REPORTED_ERRORS) state.errors.push({ row: s.row, email: null, error: `Unreadable CSV row: ${s.message}` });
        }
        if (final) {
          state.done = true;
          await deleteImportFile(q, job.id);
        }
        // The checkpoint commits with the rows it describes: a crash can never replay a chunk. Exactly
        // once even if a second run of this job exists (an expired lease): the chunk commits only on
        // top of the checkpoint this run continued from.
        const continued = (stored: ImportCheckpoint | null) => stored?.rows === expected.rows && stored?.skipped === expected.skipped;
        if (!(await job.saveWithin(q, final ? 100 : progressOf(state), state, continued))) {
          throw new Superseded();
        }
    });
    try {
      await run(false);
    } catch (e) {
      // PostgreSQL: a row's failure aborted the chunk's fast transaction; the chunk again, one savepoint a row.
      if (ctx.store.engine !== "postgres" || e instanceof Superseded) throw e;
      Object.assign(state, structuredClone(before));
      events.length = 0;
      written.length = 0;
      await run(true);
    }
    await notifyEvents(ctx, events);
    await contactsChanged(ctx, projectId, written);
    if (!final) {
      if (stopping.has(ctx)) throw new Error("Import interrupted by shutdown; it resumes from its checkpoint on the next start");
      await yieldToLoop();
    }
  };

  for await (const { cells: rec, row } of source) {
    index++;
    if (index === 0) {
      const c = columnsOf(rec);
      if (!c.columns) throw new Error(c.errors.map((e) => e.message).join("; "));
      cols = c.columns;
      continue;
    }
    if (index <= resumeAt) continue;
    batch.push({ row, cells: rec });
    if (batch.length + skipErrors.length >= IMPORT_CHUNK_ROWS) await commit(false);
  }
  if (!cols) cols = { email: 0, subscribed: -1, data: [] };
  await commit(true);
  return importResult(state);
}

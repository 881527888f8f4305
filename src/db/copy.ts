// `mailsvc copy --from <source> --to <target>`: a whole installation from one database to another
// (a SQLite file or a postgres:// URL on either side). The target is migrated first and must be
// empty; every table is copied in primary-key order in batches, parents before children; the
// tables that triggers fill from others (counters, field statistics) are copied last, over what
// the triggers wrote; counts are compared at the end. Run it against a stopped service or a backup.
import type { Kysely } from "kysely";
import { openDatabase, type Store } from "./index";
import { migrateStore } from "./migrate";
import { rawAll, rawGet, rawRun } from "./raw";

/** Tables written by triggers on other tables' inserts (migrations 002, 011): copied last, replacing what the triggers wrote. */
export const DERIVED_TABLES = ["contact_counts", "contact_field_stats"];
/** Bookkeeping that belongs to each database, never copied. */
const SKIPPED = new Set(["schema_migrations", "sqlite_sequence"]);

export class CopyError extends Error {}

export interface CopyReport {
  from: string;
  to: string;
  tables: { table: string; source: number; target: number }[];
  rows: number;
}

interface TableInfo {
  name: string;
  columns: string[];
  key: string[];
  parents: string[];
}

const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

async function tablesOf(store: Store): Promise<TableInfo[]> {
  const e = store.engine;
  const db = store.db;
  const names =
    e === "sqlite"
      ? (await rawAll<{ name: string }>(db, e, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")).map((r) => r.name)
      : (await rawAll<{ name: string }>(db, e, "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name")).map((r) => r.name);
  const out: TableInfo[] = [];
  for (const name of names) {
    if (SKIPPED.has(name)) continue;
    if (e === "sqlite") {
      const cols = await rawAll<{ name: string; pk: number }>(db, e, "SELECT name, pk FROM pragma_table_info(?) ORDER BY cid", [name]);
      const fks = await rawAll<{ table: string }>(db, e, 'SELECT "table" AS "table" FROM pragma_foreign_key_list(?)', [name]);
      out.push({
        name,
        columns: cols.map((c) => c.name),
        key: cols.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
        parents: [...new Set(fks.map((f) => f.table))].filter((t) => t !== name),
      });
    } else {
      const cols = await rawAll<{ name: string }>(
        db,
        e,
        "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position",
        [name],
      );
      const key = await rawAll<{ name: string }>(
        db,
        e,
        `SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
         WHERE i.indrelid = (quote_ident(current_schema()) || '.' || quote_ident(?))::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`,
        [name],
      );
      const fks = await rawAll<{ parent: string }>(
        db,
        e,
        `SELECT DISTINCT ccu.table_name AS parent FROM information_schema.table_constraints tc
         JOIN information_schema.constraint_column_usage ccu ON ccu.constraint_name = tc.constraint_name AND ccu.table_schema = tc.table_schema
         WHERE tc.constraint_type = 'FOREIGN KEY' AND tc.table_schema = current_schema() AND tc.table_name = ?`,
        [name],
      );
      out.push({ name, columns: cols.map((c) => c.name), key: key.map((k) => k.name), parents: fks.map((f) => f.parent).filter((t) => t !== name) });
    }
  }
  return out;
}

/** Parents before children (tables in a cycle, if any, keep their name order at the end). */
function copyOrder(tables: TableInfo[]): TableInfo[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const done = new Set<string>();
  const out: TableInfo[] = [];
  const derived = new Set(DERIVED_TABLES);
  let progress = true;
  while (progress) {
    progress = false;
    for (const t of tables) {
      if (done.has(t.name) || derived.has(t.name)) continue;
      if (t.parents.every((p) => done.has(p) || !byName.has(p))) {
        done.add(t.name);
        out.push(t);
        progress = true;
      }
    }
  }
  for (const t of tables) if (!done.has(t.name) && !derived.has(t.name)) out.push(t);
  for (const t of tables) if (derived.has(t.name)) out.push(t);
  return out;
}

async function countRows(db: Kysely<any>, engine: Store["engine"], table: string): Promise<number> {
  return Number((await rawGet<{ n: number }>(db, engine, `SELECT count(*) AS n FROM ${ident(table)}`))?.n ?? 0);
}

const describe = (s: { db: string; databaseUrl?: string }) => (s.databaseUrl ? new URL(s.databaseUrl).host + new URL(s.databaseUrl).pathname : s.db);

/** A place to copy from or to: a postgres:// URL or a SQLite file path. */
export function locationOf(arg: string): { db: string; databaseUrl?: string } {
  return /^postgres(ql)?:\/\//i.test(arg) ? { db: "", databaseUrl: arg } : { db: arg };
}

export async function copyInstallation(fromArg: string, toArg: string, opts: { batch?: number; log?: (line: string) => void } = {}): Promise<CopyReport> {
  const from = locationOf(fromArg);
  const to = locationOf(toArg);
  if (!from.databaseUrl && !(await Bun.file(from.db).exists())) throw new CopyError(`the source ${from.db} does not exist`);
  const source = openDatabase(from);
  const target = openDatabase(to);
  const log = opts.log ?? (() => {});
  try {
    await migrateStore(source);
    await migrateStore(target);
    const srcTables = copyOrder(await tablesOf(source));
    const dstTables = new Map((await tablesOf(target)).map((t) => [t.name, t]));
    // Empty: never served (no settings, users or projects). Rows the migrations themselves wrote (a
    // consumer's cursor) are replaced by the source's.
    for (const name of ["settings", "users", "projects"]) {
      const n = await countRows(target.db, target.engine, name);
      if (n > 0) throw new CopyError(`the target is not empty (${name} has ${n} rows): copy into a new database`);
    }
    const report: CopyReport = { from: describe(from), to: describe(to), tables: [], rows: 0 };
    for (const t of srcTables) {
      const dst = dstTables.get(t.name);
      if (!dst) throw new CopyError(`the target has no table ${t.name} (is one side older?)`);
      const cols = t.columns.filter((c) => dst.columns.includes(c));
      const key = t.key.length ? t.key : cols;
      const batch = Math.max(1, Math.min(opts.batch ?? 1000, Math.floor(30_000 / Math.max(1, cols.length))));
      let copied = 0;
      await target.db.transaction().execute(async (trx) => {
        // Trigger-filled tables (derived) and rows the migrations wrote give way to the source's rows.
        await rawRun(trx, target.engine, `DELETE FROM ${ident(t.name)}`);
        let after: unknown[] | null = null;
        const keyList = key.map(ident).join(", ");
        for (;;) {
          const where = after ? `WHERE (${keyList}) > (${key.map(() => "?").join(", ")})` : "";
          const rows: Record<string, unknown>[] = await rawAll<Record<string, unknown>>(
            source.db,
            source.engine,
            `SELECT ${cols.map(ident).join(", ")} FROM ${ident(t.name)} ${where} ORDER BY ${keyList} LIMIT ${batch}`,
            after ?? [],
          );
          if (!rows.length) break;
          const placeholders = `(${cols.map(() => "?").join(", ")})`;
          const params: unknown[] = [];
          for (const r of rows) for (const c of cols) params.push(r[c] ?? null);
          await rawRun(trx, target.engine, `INSERT INTO ${ident(t.name)} (${cols.map(ident).join(", ")}) VALUES ${rows.map(() => placeholders).join(", ")}`, params);
          copied += rows.length;
          const last: Record<string, unknown> = rows[rows.length - 1]!;
          after = key.map((k) => last[k]);
          if (rows.length < batch) break;
        }
      });
      log(`${t.name}: ${copied}`);
    }
    // Identity columns continue after the copied values (events.seq).
    if (target.engine === "postgres") {
      const seqs = await rawAll<{ t: string; c: string }>(
        target.db,
        "postgres",
        "SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND pg_get_serial_sequence(quote_ident(table_name), column_name) IS NOT NULL",
      );
      for (const s of seqs) {
        await rawRun(
          target.db,
          "postgres",
          `SELECT setval(pg_get_serial_sequence(?, ?), COALESCE((SELECT max(${ident(s.c)}) FROM ${ident(s.t)}), 0) + 1, false)`,
          [s.t, s.c],
        );
      }
    }
    for (const t of srcTables) {
      const a = await countRows(source.db, source.engine, t.name);
      const b = await countRows(target.db, target.engine, t.name);
      report.tables.push({ table: t.name, source: a, target: b });
      report.rows += b;
    }
    const off = report.tables.filter((t) => t.source !== t.target);
    if (off.length) throw new CopyError(`counts differ after the copy: ${off.map((t) => `${t.table} ${t.source} -> ${t.target}`).join(", ")}`);
    return report;
  } finally {
    await source.close();
    await target.close();
  }
}

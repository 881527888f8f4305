// Raw SQL on either engine, for the stores' hot paths and the few statements Kysely cannot say.
// A statement is written once in SQLite's form (`?` parameters, `json_each(?)` over a JSON array
// parameter); `pgText` gives its PostgreSQL form. Only stores import this (test/foundation/layers.test.ts).
import { CompiledQuery, type Kysely } from "kysely";

const cache = new Map<string, string>();

/**
 * The PostgreSQL text of a SQLite statement: `?` -> `$n` (outside quotes), `IN (SELECT value FROM json_each(?))` ->
 * `= ANY(ARRAY(SELECT jsonb_array_elements_text(?::jsonb)))`, other `json_each(?)` -> `jsonb_array_elements_text(?::jsonb)`
 * (both yield a column `value`), `INSERT OR IGNORE` -> `ON CONFLICT DO NOTHING`.
 */
export function pgText(sqliteText: string): string {
  let out = cache.get(sqliteText);
  if (out !== undefined) return out;
  // `x IN (SELECT value FROM json_each(?))` becomes `x = ANY(ARRAY(…))`: the array is computed once and
  // each element is an index probe. As a semi-join PostgreSQL guessed 100 rows for the function and could
  // scan the whole table (the outbox claim was a campaign's busiest statement).
  let t = sqliteText.replace(/(?<!NOT )IN \(SELECT value FROM json_each\(\?\)\)/g, "= ANY(ARRAY(SELECT jsonb_array_elements_text(?::jsonb)))");
  t = t.replace(/json_each\(\?\)/g, "jsonb_array_elements_text(?::jsonb)");
  let ignore = false;
  t = t.replace(/INSERT OR IGNORE INTO/gi, () => {
    ignore = true;
    return "INSERT INTO";
  });
  let n = 0;
  let quoted = false;
  let res = "";
  for (let i = 0; i < t.length; i++) {
    const ch = t[i]!;
    if (ch === "'") quoted = !quoted;
    if (ch !== "?" || quoted) {
      res += ch;
      continue;
    }
    const num = /^\d+/.exec(t.slice(i + 1))?.[0];
    if (num) {
      res += `$${num}`;
      i += num.length;
    } else res += `$${++n}`;
  }
  if (ignore) res = res.replace(/;?\s*$/, " ON CONFLICT DO NOTHING");
  out = res;
  if (cache.size < 5000) cache.set(sqliteText, out);
  return out;
}

/** Rows of a statement written in SQLite's form, on the engine `db` runs on (a transaction too). */
export async function rawAll<T>(db: Kysely<any>, engine: "sqlite" | "postgres", sqliteText: string, params: readonly unknown[] = []): Promise<T[]> {
  const text = engine === "postgres" ? pgText(sqliteText) : sqliteText;
  return (await db.executeQuery<T>(CompiledQuery.raw(text, params as unknown[]))).rows;
}

export async function rawGet<T>(db: Kysely<any>, engine: "sqlite" | "postgres", sqliteText: string, params: readonly unknown[] = []): Promise<T | undefined> {
  return (await rawAll<T>(db, engine, sqliteText, params))[0];
}

/** Runs a statement; answers the number of rows it changed. */
export async function rawRun(db: Kysely<any>, engine: "sqlite" | "postgres", sqliteText: string, params: readonly unknown[] = []): Promise<number> {
  const text = engine === "postgres" ? pgText(sqliteText) : sqliteText;
  const r = await db.executeQuery(CompiledQuery.raw(text, params as unknown[]));
  return Number(r.numAffectedRows ?? 0);
}

/** Raw statements on one handle (the database or an open transaction), in SQLite's form. */
export interface Q {
  engine: "sqlite" | "postgres";
  all<T>(sqliteText: string, params?: readonly unknown[]): Promise<T[]>;
  get<T>(sqliteText: string, params?: readonly unknown[]): Promise<T | undefined>;
  run(sqliteText: string, params?: readonly unknown[]): Promise<number>;
}

export function qOf(db: Kysely<any>, engine: "sqlite" | "postgres"): Q {
  return {
    engine,
    all: (t, p) => rawAll(db, engine, t, p),
    get: (t, p) => rawGet(db, engine, t, p),
    run: (t, p) => rawRun(db, engine, t, p),
  };
}

/** Runs `fn` in one transaction with raw statements on it. */
export function atomic<T>(db: Kysely<any>, engine: "sqlite" | "postgres", fn: (q: Q, trx: Kysely<any>) => Promise<T>): Promise<T> {
  return db.transaction().execute((trx) => fn(qOf(trx, engine), trx));
}

/**
 * A multi-row insert for `n` rows: `head` (the owner's `INSERT INTO table (columns)`) followed by `n`
 * tuples of `columns` parameters, the text cached per row count. The hot paths' multi-row inserts
 * (emails, events) chunk their rows and ask for each chunk's text.
 */
export function multiRowInsert(head: string, columns: number): (n: number) => string {
  const tuple = `(${Array(columns).fill("?").join(", ")})`;
  const texts = new Map<number, string>();
  return (n) => {
    let t = texts.get(n);
    if (!t) texts.set(n, (t = `${head} VALUES ${Array(n).fill(tuple).join(", ")}`));
    return t;
  };
}

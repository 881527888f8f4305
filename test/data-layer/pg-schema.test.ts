// The PostgreSQL twins (migrations/postgres/*.sql) against the SQLite migrations: after applying all
// of each, the same tables with the same columns (order, type by the conventions, NOT NULL, default),
// primary keys, unique constraints, foreign keys, indexes (name, columns, unique, partial) and
// triggers; and the trigger-kept counters (contact_counts, contact_field_stats, the event rollups)
// end up with the same rows after the same inserts, updates and deletes on both engines.
// Skipped when PostgreSQL is not installed (test/support/postgres.ts finds the binaries).
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { MIGRATIONS } from "../../src/db/migrations";
import { postgresBinDir, startPostgres, type PostgresServer as RunningPostgres } from "../support/postgres";

const PG_DIR = join(import.meta.dir, "../../migrations/postgres");
/** SQLite JSON-as-text columns that are jsonb on PostgreSQL (every other TEXT stays text). */
const JSONB = new Set(["contacts.data", "events.data"]);

const bin = postgresBinDir();
if (!bin) console.warn("pg-schema.test.ts: skipped, no PostgreSQL binaries (initdb, pg_ctl; set MAILSVC_PG_BINDIR)");

interface Column { name: string; type: string; notNull: boolean; default: string | null }
interface Index { table: string; columns: string[]; unique: boolean; partial: boolean }
/**
 * Triggers PostgreSQL has and SQLite does not need: events_seq_in_commit_order numbers events in commit
 * order (one writer at a time on SQLite does that by itself).
 */
const PG_ONLY_TRIGGERS = new Set(["events_seq_in_commit_order"]);

interface Table { columns: Column[]; primaryKey: string[]; uniques: string[]; foreignKeys: string[]; triggers: string[] }
interface Schema { tables: Record<string, Table>; indexes: Record<string, Index> }

// ---------------------------------------------------------------------------------------------- SQLite

function sqliteDb(): Database {
  const db = new Database(":memory:");
  db.exec("PRAGMA foreign_keys = ON");
  for (const m of MIGRATIONS) if (m.sql.replace(/--.*$/gm, "").trim()) db.exec(m.sql);
  return db;
}

function sqliteSchema(db: Database): Schema {
  const tables: Record<string, Table> = {};
  const indexes: Record<string, Index> = {};
  const names = db
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
    .all()
    .map((r) => r.name);
  for (const t of names) {
    const info = db.query<any, []>(`PRAGMA table_info("${t}")`).all();
    const typeOf = (c: any) => {
      const decl = String(c.type).toUpperCase();
      if (decl === "INTEGER") return "bigint";
      if (decl === "REAL") return "double precision";
      if (decl === "BLOB") return "bytea";
      if (decl === "TEXT") return JSONB.has(`${t}.${c.name}`) ? "jsonb" : "text";
      return `?${decl}`;
    };
    const columns = info.map((c: any) => ({
      name: c.name,
      type: typeOf(c),
      // A PRIMARY KEY column is NOT NULL on PostgreSQL; SQLite lets a rowid table's TEXT key be NULL (a quirk).
      notNull: !!c.notnull || c.pk > 0,
      default: c.dflt_value,
    }));
    const primaryKey = info.filter((c: any) => c.pk > 0).sort((a: any, b: any) => a.pk - b.pk).map((c: any) => c.name);
    const uniques: string[] = [];
    for (const ix of db.query<any, []>(`PRAGMA index_list("${t}")`).all()) {
      const cols = db
        .query<any, []>(`PRAGMA index_xinfo("${ix.name}")`)
        .all()
        .filter((c: any) => c.key)
        .map((c: any) => (c.cid === -2 ? "<expr>" : String(c.coll).toUpperCase() === "NOCASE" ? `lower(${c.name})` : c.name));
      if (ix.origin === "u") uniques.push(cols.join(","));
      if (ix.origin === "c") indexes[ix.name] = { table: t, columns: cols, unique: !!ix.unique, partial: !!ix.partial };
    }
    const fks = new Map<number, any[]>();
    for (const fk of db.query<any, []>(`PRAGMA foreign_key_list("${t}")`).all()) fks.set(fk.id, [...(fks.get(fk.id) ?? []), fk]);
    const foreignKeys = [...fks.values()].map((parts) => {
      parts.sort((a, b) => a.seq - b.seq);
      return `(${parts.map((p) => p.from).join(",")}) -> ${parts[0].table}(${parts.map((p) => p.to).join(",")}) ON DELETE ${parts[0].on_delete}`;
    });
    const triggers = db
      .query<{ name: string }, [string]>("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?")
      .all(t)
      .map((r) => r.name);
    tables[t] = { columns, primaryKey, uniques: uniques.sort(), foreignKeys: foreignKeys.sort(), triggers: triggers.sort() };
  }
  return { tables, indexes };
}

// ------------------------------------------------------------------------------------------ PostgreSQL

const DELETE_ACTION: Record<string, string> = { a: "NO ACTION", r: "RESTRICT", c: "CASCADE", n: "SET NULL", d: "SET DEFAULT" };

async function pgSchema(c: pg.Client): Promise<Schema> {
  const tables: Record<string, Table> = {};
  const indexes: Record<string, Index> = {};
  const names = (await c.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")).rows.map((r) => r.tablename);
  for (const t of names) {
    const cols = await c.query(
      `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`,
      [t],
    );
    const columns = cols.rows.map((r) => ({
      name: r.column_name,
      type: r.data_type,
      notNull: r.is_nullable === "NO",
      // '{}'::jsonb -> '{}', 'waiting'::text -> 'waiting' (SQLite keeps the literal as written).
      default: r.column_default === null ? null : String(r.column_default).replace(/::[a-z ]+$/, ""),
    }));
    const cons = await c.query(
      `SELECT con.contype, con.confdeltype, ref.relname AS ref_table,
         array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.i)::text[] AS cols,
         array(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, i) JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.i)::text[] AS ref_cols
       FROM pg_constraint con JOIN pg_class rel ON rel.oid = con.conrelid LEFT JOIN pg_class ref ON ref.oid = con.confrelid
       WHERE rel.relname = $1 AND rel.relnamespace = 'public'::regnamespace`,
      [t],
    );
    const primaryKey = cons.rows.find((r) => r.contype === "p")?.cols ?? [];
    const uniques = cons.rows.filter((r) => r.contype === "u").map((r) => r.cols.join(","));
    const foreignKeys = cons.rows
      .filter((r) => r.contype === "f")
      .map((r) => `(${r.cols.join(",")}) -> ${r.ref_table}(${r.ref_cols.join(",")}) ON DELETE ${DELETE_ACTION[r.confdeltype]}`);
    const triggers = (
      await c.query("SELECT tgname FROM pg_trigger WHERE tgrelid = ('public.' || quote_ident($1))::regclass AND NOT tgisinternal", [t])
    ).rows.map((r) => r.tgname).filter((n) => !PG_ONLY_TRIGGERS.has(n));
    tables[t] = { columns, primaryKey, uniques: uniques.sort(), foreignKeys: foreignKeys.sort(), triggers: triggers.sort() };
  }
  // Indexes that no constraint owns (PRIMARY KEY / UNIQUE indexes are compared as constraints above).
  const ix = await c.query(
    `SELECT i.relname AS name, t.relname AS table, x.indisunique AS unique, x.indpred IS NOT NULL AS partial,
       array(SELECT pg_get_indexdef(x.indexrelid, k, true) FROM generate_series(1, x.indnkeyatts) k ORDER BY k)::text[] AS columns
     FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
     WHERE t.relnamespace = 'public'::regnamespace
       AND NOT EXISTS (SELECT 1 FROM pg_constraint con WHERE con.conindid = x.indexrelid)`,
  );
  for (const r of ix.rows) indexes[r.name] = { table: r.table, columns: r.columns, unique: r.unique, partial: r.partial };
  return { tables, indexes };
}

function pgClient(url: string): pg.Client {
  // int8 as a JS number, as the application's pool does.
  return new pg.Client({
    connectionString: url,
    types: { getTypeParser: (oid: number, format?: any) => (oid === 20 ? Number : (pg.types.getTypeParser as any)(oid, format)) },
  });
}

// ------------------------------------------------------------------------------------------- the test

let server: RunningPostgres;
let client: pg.Client;
let sqlite: Database;

describe.skipIf(!bin)("PostgreSQL schema (migrations/postgres)", () => {
  beforeAll(async () => {
    server = await startPostgres();
    client = pgClient(server.url);
    await client.connect();
    sqlite = sqliteDb();
  }, 120_000);
  afterAll(async () => {
    await client?.end().catch(() => {});
    await server?.stop();
    sqlite?.close();
  });

  test("every SQLite migration has a twin of the same name, and they all apply in name order", async () => {
    const twins = readdirSync(PG_DIR).filter((f) => f.endsWith(".sql")).sort();
    expect(twins).toEqual(MIGRATIONS.map((m) => `${m.name}.sql`));
    for (const f of twins) {
      const sql = readFileSync(join(PG_DIR, f), "utf8");
      if (!sql.replace(/--.*$/gm, "").trim()) continue;
      try {
        await client.query("BEGIN");
        await client.query(sql);
        await client.query("COMMIT");
      } catch (e) {
        await client.query("ROLLBACK").catch(() => {});
        throw new Error(`${f}: ${(e as Error).message}`);
      }
    }
  });

  test("the same tables, columns, keys, foreign keys, indexes and triggers", async () => {
    const want = sqliteSchema(sqlite);
    const got = await pgSchema(client);
    expect(Object.keys(got.tables).sort()).toEqual(Object.keys(want.tables).sort());
    for (const t of Object.keys(want.tables)) expect({ table: t, ...got.tables[t] }).toEqual({ table: t, ...want.tables[t] });
    expect(Object.keys(got.indexes).sort()).toEqual(Object.keys(want.indexes).sort());
    for (const name of Object.keys(want.indexes)) expect({ name, ...got.indexes[name] }).toEqual({ name, ...want.indexes[name] });
    // The one AUTOINCREMENT column is numbered by its own sequence (in commit order: events_seq_in_commit_order).
    const seq = await client.query("SELECT pg_get_serial_sequence('events', 'seq') AS s");
    expect(seq.rows[0]).toEqual({ s: "public.events_seq" });
  });

  test("the trigger-kept counters end up the same after the same writes", async () => {
    // One scenario, run on both engines (`?` placeholders; $n on PostgreSQL).
    type Step = [sql: string, ...params: unknown[]];
    const H = 3_600_000;
    const t0 = 1_750_000_000_000 - (1_750_000_000_000 % (24 * H)) - H; // an hour before midnight
    const ann = {
      name: "Ann", age: 31, score: 1.5, ratio: 2.0, vip: true, gone: false, nick: null,
      born: "1990-04-01", tags: ["a"], address: { city: "X" }, neg: -7, code: "12-34",
    };
    const steps: Step[] = [
      ["INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p1', 'one', 'pk1', 'sk1', 0, 0)"],
      ["INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES ('p2', 'two', 'pk2', 'sk2', 0, 0)"],
      ...(
        [
          ["c1", "p1", 1, JSON.stringify(ann)],
          ["c2", "p1", 0, "{}"],
          ["c3", "p1", 1, JSON.stringify({ name: "Bob", age: "unknown", born: "1991-02-03T10:00:00Z" })],
          ["c4", "p2", 1, JSON.stringify({ x: -2, y: 2.5, z: "2024-13-99 not a date" })],
          ["c5", "p2", 0, JSON.stringify({ x: 3 })],
        ] as const
      ).map(([id, p, sub, data]): Step => [
        "INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)",
        id, p, `${id}@example.com`, sub, data,
      ]),
      ["UPDATE contacts SET subscribed = 1 WHERE id = 'c2'"],
      ["UPDATE contacts SET subscribed = 0 WHERE id = 'c1'"],
      ["UPDATE contacts SET subscribed = 1 WHERE id = 'c3'"], // no change
      // Same shape, new values (the guard's no-op path).
      ["UPDATE contacts SET data = ? WHERE id = 'c1'", JSON.stringify({ ...ann, name: "Ann B", age: 32, score: 2.25, born: "1990-04-02" })],
      // Kinds change, a key goes, a key comes.
      ["UPDATE contacts SET data = ? WHERE id = 'c3'", JSON.stringify({ name: "Bob", age: 33, plan: "pro", vip: false })],
      ["UPDATE contacts SET data = ? WHERE id = 'c2'", JSON.stringify({ name: "Cy" })],
      ["UPDATE contacts SET data = '{}' WHERE id = 'c5'"],
      // The upsert by email: its update path fires the UPDATE triggers (not the INSERT ones), its insert path the INSERT ones.
      ...["c2", "c6"].map((id): Step => [
        `INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, 'p1', ?, 0, ?, 0, 0)
         ON CONFLICT (project_id, email) DO UPDATE SET subscribed = excluded.subscribed, data = excluded.data`,
        `${id}-new`, `${id}@example.com`, JSON.stringify({ name: id, n: 2 }),
      ]),
      ["UPDATE contacts SET data = ? WHERE id = 'c4'", JSON.stringify({ x: 1.5, y: 2.5, z: "2024-13-99 not a date" })],
      // Events: six the rollup consumer has folded in, then two it has not.
      ...(
        [
          ["e1", "p1", "c1", "signup", t0],
          ["e2", "p1", "c1", "login", t0 + 10],
          ["e3", "p1", "c3", "login", t0 + H + 5],
          ["e4", "p1", "c3", "purchase", t0 + H + 6],
          ["e5", "p2", "c4", "login", t0 + 2 * H],
          ["e6", "p2", "c5", "login", t0 + 2 * H + 1],
        ] as const
      ).map(([id, p, c, name, at]): Step => [
        "INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        id, p, c, name, JSON.stringify({ n: 1 }), at,
      ]),
      // What the analytics.rollups consumer does with a batch (its upserts, in bulk), and its cursor.
      ["INSERT INTO event_rollup_hourly (project_id, bucket, name, count) SELECT project_id, (created_at / 3600000) * 3600000, name, count(*) FROM events GROUP BY 1, 2, 3"],
      ["INSERT INTO event_rollup_daily (project_id, bucket, name, count) SELECT project_id, (created_at / 86400000) * 86400000, name, count(*) FROM events GROUP BY 1, 2, 3"],
      ["INSERT INTO event_name_totals (project_id, name, count, last_at) SELECT project_id, name, count(*), max(created_at) FROM events GROUP BY 1, 2"],
      ["UPDATE event_cursors SET last_seq = (SELECT max(seq) FROM events) WHERE consumer = 'analytics.rollups'"],
      ["INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES ('e7', 'p1', 'c3', 'login', NULL, ?)", t0 + 3 * H],
      ["INSERT INTO events (id, project_id, contact_id, name, data, created_at) VALUES ('e8', 'p1', 'c1', 'login', NULL, ?)", t0 + 3 * H],
      ["DELETE FROM events WHERE id IN ('e2', 'e8')"], // one folded in, one not
      ["DELETE FROM contacts WHERE id = 'c3'"], // cascades to e3, e4 (folded in) and e7 (not)
      ["DELETE FROM contacts WHERE id IN ('c4', 'c5')"],
    ];
    for (const [sql, ...params] of steps) sqlite.query(sql).run(...(params as any[]));
    for (const [sql, ...params] of steps) {
      let n = 0;
      await client.query(sql.replace(/\?/g, () => `$${++n}`), params);
    }

    const reads = [
      "SELECT project_id, total, subscribed FROM contact_counts ORDER BY project_id",
      "SELECT project_id, key, kind, n FROM contact_field_stats ORDER BY project_id, key, kind",
      "SELECT project_id, bucket, name, count FROM event_rollup_hourly ORDER BY project_id, bucket, name",
      "SELECT project_id, bucket, name, count FROM event_rollup_daily ORDER BY project_id, bucket, name",
      "SELECT project_id, name, count, last_at FROM event_name_totals ORDER BY project_id, name",
      "SELECT project_id, total FROM event_counts ORDER BY project_id",
      "SELECT consumer, last_seq FROM event_cursors ORDER BY consumer",
      "SELECT seq, id FROM events ORDER BY seq",
    ];
    for (const sql of reads) {
      const want = sqlite.query(sql).all();
      const got = (await client.query(sql)).rows;
      expect({ sql, rows: got }).toEqual({ sql, rows: want });
    }

    // Not vacuous: every kind SQLite's json_each reports (and 'date') went through the triggers.
    const kinds = sqlite.query<{ kind: string }, []>("SELECT DISTINCT kind FROM contact_field_stats ORDER BY kind").all().map((r) => r.kind);
    expect(kinds).toEqual(["array", "date", "false", "integer", "null", "object", "real", "text", "true"]);
    expect(sqlite.query("SELECT * FROM contact_counts ORDER BY project_id").all()).toEqual([
      { project_id: "p1", total: 3, subscribed: 0 },
      { project_id: "p2", total: 0, subscribed: 0 },
    ]);
  });

  test("a field's kind is the string SQLite's json_each (with the date rule) gives, value by value", async () => {
    const values = [
      "0", "-0", "1", "-1", "12345678901234567890", "-9223372036854775808", "1.0", "0.5", "-1.5e-3", "1e-7",
      "true", "false", "null", '""', '"x"', '"é"', '"2024-01-01"', '"2024-1-01"', '" 2024-01-01"', '"2024-19-39x"',
      '"20240-01-01"', '"2024-01-01\\n"', '"1990-04-01T00:00:00Z"', '"\\u0032024-01-01"', "[]", "[1]", "{}", '{"a":1}',
    ];
    const kindSqlite = (v: string) =>
      (
        sqlite
          .query<{ kind: string }, [string]>(
            `SELECT CASE WHEN j.type = 'text' AND j.atom GLOB '[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]*' THEN 'date' ELSE j.type END AS kind
             FROM json_each(?) j`,
          )
          .get(`{"k":${v}}`) as { kind: string }
      ).kind;
    const kindPg = async (v: string) => (await client.query("SELECT kd AS kind FROM mailsvc_field_kinds($1::jsonb)", [`{"k":${v}}`])).rows[0].kind;
    for (const v of values) expect({ v, kind: await kindPg(v) }).toEqual({ v, kind: kindSqlite(v) });
    // The one known difference: jsonb stores 1e2 as 100, so an integral number written with an exponent
    // (JSON.stringify does that from 1e21 on) is 'integer' on PostgreSQL and 'real' on SQLite.
    expect([await kindPg("1e2"), kindSqlite("1e2")]).toEqual(["integer", "real"]);
  });
});

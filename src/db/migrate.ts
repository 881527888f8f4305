import type { Database } from "bun:sqlite";
import type pg from "pg";
import type { Store } from "./index";
import { MIGRATIONS } from "./migrations";

const postgresMigrations = async () => (await import("./migrations-postgres")).POSTGRES_MIGRATIONS;

/** A database this binary must not touch (migrated by a newer version). */
export class MigrationError extends Error {}

function refuseNewer(done: Iterable<string>, known: { name: string }[]) {
  const names = new Set(known.map((m) => m.name));
  const unknown = [...done].filter((n) => !names.has(n));
  if (unknown.length) {
    throw new MigrationError(
      `the database was migrated by a newer mailsvc (${unknown.join(", ")} unknown to this binary): run that version or a newer one`,
    );
  }
}

/** Applies the embedded forward-only migrations that the file has not seen yet. Returns the names applied. */
export function migrate(sqlite: Database, now = Date.now()): string[] {
  sqlite.exec("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const done = new Set(
    sqlite.query<{ name: string }, []>("SELECT name FROM schema_migrations").all().map((r) => r.name),
  );
  refuseNewer(done, MIGRATIONS);
  const applied: string[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.name)) continue;
    sqlite.transaction(() => {
      if (m.sql.replace(/--.*$/gm, "").trim()) sqlite.exec(m.sql);
      sqlite.query("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)").run(m.name, now);
    })();
    applied.push(m.name);
  }
  return applied;
}

/** An arbitrary constant: the advisory lock that lets one instance at a time migrate. */
const MIGRATION_LOCK = 7_411_023_001;

/** The PostgreSQL migrator: the same names in the same order, one transaction each, one instance at a time. */
export async function migratePostgres(pool: pg.Pool, now = Date.now()): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await client.query("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at bigint NOT NULL)");
      const done = new Set((await client.query<{ name: string }>("SELECT name FROM schema_migrations")).rows.map((r) => r.name));
      const migrations = await postgresMigrations();
      refuseNewer(done, migrations);
      const applied: string[] = [];
      for (const m of migrations) {
        if (done.has(m.name)) continue;
        await client.query("BEGIN");
        try {
          if (m.sql.replace(/--.*$/gm, "").trim()) await client.query(m.sql);
          await client.query("INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)", [m.name, now]);
          await client.query("COMMIT");
        } catch (e) {
          await client.query("ROLLBACK").catch(() => {});
          throw e;
        }
        applied.push(m.name);
      }
      return applied;
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    client.release();
  }
}

/** Migrates whichever engine the store is on. */
export async function migrateStore(store: Store, now = Date.now()): Promise<string[]> {
  if (store.engine === "postgres") return migratePostgres(store.pg!, now);
  return migrate(store.sqlite, now);
}

/** Whether the database's migrations are exactly this binary's (GET /ready). */
export async function migrationsMatch(store: Store): Promise<boolean> {
  const known = store.engine === "postgres" ? await postgresMigrations() : MIGRATIONS;
  const rows = await store.db.selectFrom("schema_migrations" as never).select("name" as never).execute();
  const done = new Set(rows.map((r: any) => r.name as string));
  return done.size === known.length && known.every((m) => done.has(m.name));
}

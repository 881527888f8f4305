import { Database, type SQLQueryBindings, type Statement } from "bun:sqlite";
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { Kysely } from "kysely";
import { BunSqliteDialect } from "./bun-sqlite-dialect";
import { startCheckpointer } from "./checkpointer";
import { openPostgres } from "./postgres";
import type { DB } from "./schema";
import type pg from "pg";

export type { DB } from "./schema";

// How code reaches the database (one rule):
// - SQL goes through Kysely (`ctx.db`), in the owning module's `queries.ts` / service, or in an
//   engine's store file (src/mail/outbox/outbox-store.ts, src/mail/outbox/store.ts, src/jobs/queue.ts,
//   src/db/settings.ts). Routes, the server and other modules call those functions; they never
//   write another module's tables behind its back.
// - Raw statements only on a hot path a benchmark shows needs them, through `Q` (src/db/raw.ts: one
//   text in SQLite's form, translated for PostgreSQL), in the owner's store next to their Kysely
//   sibling, each saying so in one line.
// - SQL a Postgres dialect could run: no SQLite-only syntax outside the store files (INSERT OR
//   IGNORE, boolean sums, json_each belong there or nowhere).

/**
 * bun:sqlite's `query()` keeps only about 20 prepared statements; with every module's hot statements
 * (the dialect's and the raw paths') that cache thrashes and each call prepares again (measured: 9%
 * of the server's CPU during scripts/bench/send.ts). This keeps every distinct SQL text prepared,
 * up to MAX_CACHED (statements with variable-length IN lists bypass it in the dialect).
 */
const MAX_CACHED = 2000;
class StatementCachingDatabase extends Database {
  private readonly statements = new Map<string, Statement<any, any>>();
  override query<ReturnType = unknown, ParamsType extends SQLQueryBindings | SQLQueryBindings[] = any>(sql: string): Statement<ReturnType, ParamsType extends any[] ? ParamsType : [ParamsType]> {
    let stmt = this.statements.get(sql);
    if (!stmt) {
      // Forget the oldest text when full; its statement is finalized by the GC once unused.
      if (this.statements.size >= MAX_CACHED) this.statements.delete(this.statements.keys().next().value!);
      stmt = this.prepare(sql);
      this.statements.set(sql, stmt);
    }
    return stmt as never;
  }
}

/**
 * The data layer's handle. `db` is Kysely (async, serialized on one connection).
 * Hot paths run raw statements through `Q` (src/db/raw.ts) on this handle or on a transaction of it,
 * so a raw statement never lands inside somebody else's open transaction.
 */
export type Engine = "sqlite" | "postgres";

export interface Store {
  engine: Engine;
  /** SQLite only: the raw handle (reading it on PostgreSQL throws). */
  sqlite: Database;
  /** PostgreSQL only: the pool under Kysely. */
  pg?: pg.Pool;
  db: Kysely<DB>;
  /** SQLite: folds the WAL into the file (PASSIVE, never blocks); nothing on PostgreSQL. */
  checkpoint(): void;
  close(): Promise<void>;
}

/** The configured engine: PostgreSQL when a URL is set, else the SQLite file. */
export function openDatabase(config: { db: string; databaseUrl?: string; instanceId?: string }): Store {
  if (!config.databaseUrl) return openStore(config.db);
  const h = openPostgres(config.databaseUrl, { applicationName: `mailsvc ${config.instanceId ?? ""}`.trim() });
  return {
    engine: "postgres",
    get sqlite(): Database {
      throw new Error("the raw SQLite handle was asked for on PostgreSQL (a store lacks its PostgreSQL sibling)");
    },
    pg: h.pool,
    db: h.db,
    checkpoint() {},
    close: () => h.close(),
  };
}

export function openStore(path: string): Store {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const sqlite = new StatementCachingDatabase(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  // 4 MB of page cache: the OS page cache holds the file anyway. 16 MB showed up in the server's RSS
  // during a large send (scripts/bench/send.ts) without a measurable gain in any benchmark.
  sqlite.exec("PRAGMA cache_size = -4096");
  const dialect = new BunSqliteDialect(sqlite);
  // Checkpoints and the WAL's rewind run from a worker thread (see checkpointer.ts); the writer's own
  // auto-checkpoint is the safety net.
  const checkpointer = path === ":memory:" ? null : startCheckpointer(path, dialect.mutex);
  sqlite.exec(`PRAGMA wal_autocheckpoint = ${checkpointer ? 20000 : 2000}`);
  const db = new Kysely<DB>({ dialect });
  let closed = false;
  return {
    engine: "sqlite",
    sqlite,
    db,
    checkpoint() {
      sqlite.exec("PRAGMA wal_checkpoint(PASSIVE)");
    },
    async close() {
      if (closed) return;
      closed = true;
      checkpointer?.stop();
      try {
        sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch {}
      sqlite.close();
    },
  };
}

/** A consistent copy of a SQLite file at `out` (VACUUM INTO reads one snapshot: safe while a server writes). */
export function backupSqlite(path: string, out: string): void {
  const store = openStore(path);
  try {
    store.sqlite.query("VACUUM INTO ?").run(out);
  } finally {
    store.sqlite.close();
  }
}

/** The configured database for reading beside a running server (doctor): read-only on SQLite; null when the file does not exist yet. */
export function openReadOnly(config: { db: string; databaseUrl?: string }): { db: Kysely<DB>; close(): Promise<void> } | null {
  if (config.databaseUrl) {
    const h = openPostgres(config.databaseUrl, { max: 1, applicationName: "mailsvc doctor" });
    return { db: h.db, close: () => h.close() };
  }
  if (!existsSync(config.db)) return null;
  const sqlite = new Database(config.db, { readonly: true });
  return { db: new Kysely<DB>({ dialect: new BunSqliteDialect(sqlite) }), close: async () => sqlite.close() };
}

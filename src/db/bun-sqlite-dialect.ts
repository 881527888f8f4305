import type { Database } from "bun:sqlite";
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
} from "kysely";

/**
 * Kysely dialect over bun:sqlite that reuses prepared statements (db.query caches them),
 * unlike kysely-bun-sqlite which prepares on every call (~25% slower writes, docs/architecture.md "Data").
 * One connection guarded by a mutex: a transaction owns it until commit/rollback.
 */
export class BunSqliteDialect implements Dialect {
  /** Shared with raw-statement callers (Store.exclusive) so they never interleave with an open transaction. */
  readonly mutex = new Mutex();
  constructor(private readonly sqlite: Database) {}
  createAdapter() {
    return new SqliteAdapter();
  }
  createDriver(): Driver {
    return new BunSqliteDriver(this.sqlite, this.mutex);
  }
  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}

/** Statements with many parameters are usually one-off IN lists: do not grow the cache with them. */
const CACHE_PARAM_LIMIT = 64;

class BunSqliteConnection implements DatabaseConnection {
  constructor(private readonly sqlite: Database) {}
  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const params = compiled.parameters as any[];
    const stmt = params.length > CACHE_PARAM_LIMIT ? this.sqlite.prepare(compiled.sql) : this.sqlite.query(compiled.sql);
    if (stmt.columnNames.length > 0) {
      return { rows: stmt.all(...params) as R[] };
    }
    const res = stmt.run(...params);
    return { rows: [], numAffectedRows: BigInt(res.changes), insertId: BigInt(res.lastInsertRowid) };
  }
  async *streamQuery<R>(compiled: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const stmt = this.sqlite.prepare(compiled.sql);
    for (const row of stmt.iterate(...(compiled.parameters as any[]))) yield { rows: [row as R] };
  }
}

export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private release?: () => void;
  async lock(): Promise<void> {
    const prev = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    await prev;
    this.release = release;
  }
  unlock(): void {
    const r = this.release;
    this.release = undefined;
    r?.();
  }
}

class BunSqliteDriver implements Driver {
  private readonly connection: BunSqliteConnection;
  constructor(sqlite: Database, private readonly mutex: Mutex) {
    this.connection = new BunSqliteConnection(sqlite);
  }
  async init() {}
  async acquireConnection() {
    await this.mutex.lock();
    return this.connection;
  }
  async beginTransaction(conn: DatabaseConnection) {
    await conn.executeQuery(CompiledQuery.raw("begin immediate"));
  }
  async commitTransaction(conn: DatabaseConnection) {
    await conn.executeQuery(CompiledQuery.raw("commit"));
  }
  async rollbackTransaction(conn: DatabaseConnection) {
    await conn.executeQuery(CompiledQuery.raw("rollback"));
  }
  async releaseConnection() {
    this.mutex.unlock();
  }
  async destroy() {}
}

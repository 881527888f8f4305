// The PostgreSQL engine: Kysely's core PostgresDialect over `pg` (node-postgres), with the three
// adjustments that let the same application code run on both engines (docs/architecture.md "Data"):
// - int8 and numeric come back as JS numbers (times are epoch milliseconds, well inside 2^53), and
//   json/jsonb as the JSON text SQLite stores (the app parses JSON columns itself);
// - a boolean parameter is sent as 1/0 (flags are integer columns on both engines, as bun:sqlite binds them),
//   and U+0000 in a string parameter as U+FFFD (PostgreSQL text cannot hold it);
// - writes of one process run one at a time (a transaction, or a single write statement outside one),
//   as on SQLite's single connection: the services were written against a serialized writer. Reads run
//   in parallel on the pool. Across instances the claims (FOR UPDATE SKIP LOCKED, leases) and row locks
//   carry the guarantees instead.
import pg from "pg";
import { CompiledQuery, Kysely, PostgresDialect, type DatabaseConnection, type Driver, type TransactionSettings } from "kysely";
import { Mutex } from "./bun-sqlite-dialect";
import type { DB } from "./schema";

const TYPE_INT8 = 20;
const TYPE_NUMERIC = 1700;
const TYPE_JSON = 114;
const TYPE_JSONB = 3802;

const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === TYPE_INT8 || oid === TYPE_NUMERIC) return (v: string) => Number(v);
    if (oid === TYPE_JSON || oid === TYPE_JSONB) return (v: string) => v;
    return pg.types.getTypeParser(oid, format as "text");
  },
};

function param(v: unknown): unknown {
  if (typeof v === "boolean") return v ? 1 : 0;
  // PostgreSQL cannot hold U+0000 in text: a value carrying one (an id or a search from a URL; JSON bodies
  // holding it are refused at the edge) goes as U+FFFD, which matches nothing stored, instead of an error.
  if (typeof v === "string" && v.includes("\u0000")) return v.replaceAll("\u0000", "\uFFFD");
  return v;
}

/** A pg pool whose clients send booleans as 1/0 (see above). */
function wrapPool(pool: pg.Pool) {
  return {
    async connect() {
      const client = await pool.connect();
      return {
        query(sqlText: string | object, params?: unknown[]) {
          if (typeof sqlText !== "string") return client.query(sqlText as never);
          return client.query(sqlText, params?.map(param));
        },
        release() {
          client.release();
        },
      };
    },
    end: () => pool.end(),
  };
}

const WRITE_NODES = new Set(["InsertQueryNode", "UpdateQueryNode", "DeleteQueryNode", "MergeQueryNode"]);
const WRITE_TEXT = /^\s*(insert|update|delete|with|create|drop|alter|merge)\b/i;
const isWrite = (q: CompiledQuery) => WRITE_NODES.has(q.query.kind) || (q.query.kind === "RawNode" && WRITE_TEXT.test(q.sql));

/** Serializes this process's writes (see the header). */
class SerializedDriver implements Driver {
  readonly mutex = new Mutex();
  private readonly holders = new WeakSet<DatabaseConnection>();
  constructor(private readonly inner: Driver) {}
  init() {
    return this.inner.init();
  }
  async acquireConnection(): Promise<DatabaseConnection> {
    const conn = await this.inner.acquireConnection();
    const holders = this.holders;
    const mutex = this.mutex;
    // A write outside a transaction waits for the writer's turn, like one inside a transaction.
    return new Proxy(conn, {
      get(target, prop, receiver) {
        if (prop !== "executeQuery") {
          const v = Reflect.get(target, prop, target);
          return typeof v === "function" ? v.bind(target) : v;
        }
        return async (q: CompiledQuery) => {
          if (holders.has(receiver) || !isWrite(q)) return target.executeQuery(q);
          await mutex.lock();
          try {
            return await target.executeQuery(q);
          } finally {
            mutex.unlock();
          }
        };
      },
    });
  }
  async beginTransaction(conn: DatabaseConnection, settings: TransactionSettings) {
    await this.mutex.lock();
    this.holders.add(conn);
    try {
      await this.inner.beginTransaction(conn, settings);
    } catch (e) {
      this.release(conn);
      throw e;
    }
  }
  async commitTransaction(conn: DatabaseConnection) {
    try {
      await this.inner.commitTransaction(conn);
    } finally {
      this.release(conn);
    }
  }
  async rollbackTransaction(conn: DatabaseConnection) {
    try {
      await this.inner.rollbackTransaction(conn);
    } finally {
      this.release(conn);
    }
  }
  private release(conn: DatabaseConnection) {
    if (!this.holders.has(conn)) return;
    this.holders.delete(conn);
    this.mutex.unlock();
  }
  savepoint(conn: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver["savepoint"]>>[2]) {
    return this.inner.savepoint!(conn, name, compile);
  }
  rollbackToSavepoint(conn: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver["savepoint"]>>[2]) {
    return this.inner.rollbackToSavepoint!(conn, name, compile);
  }
  releaseSavepoint(conn: DatabaseConnection, name: string, compile: Parameters<NonNullable<Driver["savepoint"]>>[2]) {
    return this.inner.releaseSavepoint!(conn, name, compile);
  }
  releaseConnection(conn: DatabaseConnection) {
    return this.inner.releaseConnection(conn);
  }
  destroy() {
    return this.inner.destroy();
  }
}

class SerializedPostgresDialect extends PostgresDialect {
  override createDriver(): Driver {
    return new SerializedDriver(super.createDriver());
  }
}

export interface PostgresHandle {
  db: Kysely<DB>;
  pool: pg.Pool;
  close(): Promise<void>;
}

export function openPostgres(url: string, opts: { max?: number; applicationName?: string } = {}): PostgresHandle {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10, types, application_name: opts.applicationName ?? "mailsvc" } as pg.PoolConfig);
  // An idle client's error (the server restarted) must not end the process; the next query reconnects.
  pool.on("error", () => {});
  const db = new Kysely<DB>({ dialect: new SerializedPostgresDialect({ pool: wrapPool(pool) as never }) });
  let closed: Promise<void> | null = null;
  return {
    db,
    pool,
    close() {
      closed ??= db.destroy();
      return closed;
    },
  };
}

/** Runs one SQL text (several statements allowed) outside Kysely: migrations, maintenance. */
export async function execScript(pool: pg.Pool, text: string): Promise<void> {
  await pool.query(text);
}

export { CompiledQuery };

// What differs between SQLite and PostgreSQL, in one place per engine (sqlite.ts, postgres.ts).
// A process runs on one engine: createContext (server.ts) selects it once, before anything compiles
// SQL; stores and the condition compiler ask `dialect()` for the pieces they write.
import { sqliteDialect } from "./sqlite";
import { postgresDialect } from "./postgres";
import type { Engine, SqlDialect } from "./types";

export type { ConditionDialect, Engine, SqlDialect } from "./types";
export { containsAnyWith } from "./types";

let current: SqlDialect = sqliteDialect;

/** Selects the engine of this process (server.ts createContext). */
export function useEngine(engine: Engine): void {
  current = engine === "postgres" ? postgresDialect : sqliteDialect;
}

export function dialect(): SqlDialect {
  return current;
}


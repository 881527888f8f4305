// The shape of an engine's SQL dialect (sqlite.ts, postgres.ts implement it; index.ts picks one).
import { sql, type RawBuilder } from "kysely";
import type { Frag } from "../frag";

export type Engine = "sqlite" | "postgres";

export interface SqlDialect {
  engine: Engine;
  /** Case-insensitive LIKE (SQLite's LIKE already is, for ASCII). */
  likeNoCase: "LIKE" | "ILIKE";
  /** ORDER BY a text column ignoring case. */
  orderNoCase(column: string): RawBuilder<unknown>;
  /** JSON text of a top-level key of a JSON column, as text (NULL when absent). */
  jsonText(column: string, key: string): RawBuilder<string | null>;
  /** Whether any of `columns` contains `needle`, ignoring ASCII case (a search box over several text columns). */
  containsAnyNoCase(columns: readonly string[], needle: string): RawBuilder<boolean>;
  /** Substring test (SQLite instr, PostgreSQL strpos). */
  contains(column: string, value: string): RawBuilder<boolean>;
  /** A top-level key of a JSON column: present (even when null)? */
  jsonHasKey(column: string, key: string): RawBuilder<boolean>;
  /** The JSON text of a top-level key's value. */
  jsonRawValue(column: string, key: string): RawBuilder<string>;
  /** The JSON column without a top-level key. */
  jsonRemoveKey(column: string, key: string): RawBuilder<string>;
  /** A shell-style pattern match (`*`, `?`) of a text column. */
  glob(column: string, pattern: string): RawBuilder<boolean>;
  /** Whether a table exists in this database. */
  tableExistsSql(name: string): RawBuilder<{ n: number }>;
  /** An index hint after a table name (SQLite INDEXED BY; nothing on PostgreSQL). */
  indexedBy(index: string): RawBuilder<unknown>;
  /** The contact-condition pieces (audience/conditions/dialect.ts). */
  conditions: ConditionDialect;
}

/** The SQL the condition compiler writes over contacts `c` that is not plain SQL. NULL-free predicates. */
export interface ConditionDialect {
  /** The stored value of a data key (an expression index serves `jsonValue(k) = ?`). */
  jsonValue(key: string): Frag;
  /** The stored value of a data key that is a JSON number, as a number (NULL otherwise). */
  numberValue(key: string): Frag;
  hasKey(key: string): Frag;
  isText(key: string): Frag;
  isNumber(key: string): Frag;
  isBoolean(key: string, b: boolean): Frag;
  isNumericText(x: Frag): Frag;
  textNumber(x: Frag): Frag;
  isDateText(x: Frag): Frag;
  dateMs(x: Frag): Frag;
  containsText(x: Frag, v: string): Frag;
  startsWithText(x: Frag, v: string): Frag;
  endsWithText(x: Frag, v: string): Frag;
  /** LIKE that ignores ASCII case, as SQLite's LIKE does. */
  like: string;
  /**
   * How many contact-set subqueries (`c.id IN (SELECT …)`: event and static-segment filters) one
   * condition may hold as joins. PostgreSQL pulls each up into a semi-join and its join search grows
   * steeply with their number (measured on 15: 16 sets plan in 11 ms, 40 in 40 ms, 200 in 50 s);
   * beyond the limit every set is kept out of the join search by `ownSubplan`. SQLite: no limit.
   */
  joinedSetLimit: number;
  /** A set predicate evaluated as its own subplan (hashed when it fits), never pulled up into a join. */
  ownSubplan(f: Frag): Frag;
}

/** `col LIKE '%needle%'` (escaped) over several columns, OR-ed, with the engine's case-insensitive LIKE. */
export function containsAnyWith(like: "LIKE" | "ILIKE", columns: readonly string[], needle: string): RawBuilder<boolean> {
  const pattern = `%${needle.replace(/[\\%_]/g, (c) => "\\" + c)}%`;
  return sql<boolean>`(${sql.join(columns.map((c) => sql`${sql.ref(c)} ${sql.raw(like)} ${pattern} ESCAPE '\\'`), sql` OR `)})`;
}

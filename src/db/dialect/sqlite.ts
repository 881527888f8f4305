import { sql } from "kysely";
import { q, raw, type Frag } from "../frag";
import { containsAnyWith, type SqlDialect } from "./types";

/** The JSON path literal of a top-level data key (keys are validated: no quotes, backslashes or control characters). */
const pathLiteral = (key: string) => raw(`'$."${key.replaceAll("'", "''")}"'`);
const jsonTypeOr = (key: string) => q`COALESCE(json_type(c.data, ${pathLiteral(key)}), '')`;
const jsonValue = (key: string) => q`json_extract(c.data, ${pathLiteral(key)})`;

export const sqliteDialect: SqlDialect = {
  engine: "sqlite",
  likeNoCase: "LIKE",
  orderNoCase: (column) => sql`${sql.ref(column)} COLLATE NOCASE`,
  jsonText: (column, key) => sql<string | null>`json_extract(${sql.ref(column)}, ${`$."${key}"`})`,
  containsAnyNoCase: (columns, needle) => containsAnyWith("LIKE", columns, needle),
  contains: (column, value) => sql<boolean>`instr(${sql.ref(column)}, ${value}) > 0`,
  jsonHasKey: (column, key) => sql<boolean>`json_type(${sql.ref(column)}, ${`$."${key}"`}) IS NOT NULL`,
  jsonRawValue: (column, key) => sql<string>`${sql.ref(column)} -> ${`$."${key}"`}`,
  jsonRemoveKey: (column, key) => sql<string>`json_remove(${sql.ref(column)}, ${`$."${key}"`})`,
  glob: (column, pattern) => sql<boolean>`${sql.ref(column)} GLOB ${pattern}`,
  tableExistsSql: (name) => sql<{ n: number }>`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ${name}`,
  indexedBy: (index) => sql`INDEXED BY ${sql.raw(index)}`,
  conditions: {
    jsonValue,
    numberValue: jsonValue,
    hasKey: (key) => q`json_type(c.data, ${pathLiteral(key)}) IS NOT NULL`,
    isText: (key) => q`${jsonTypeOr(key)} = 'text'`,
    isNumber: (key) => q`${jsonTypeOr(key)} IN ('integer', 'real')`,
    isBoolean: (key, b) => q`${jsonTypeOr(key)} = ${raw(b ? "'true'" : "'false'")}`,
    /** `-?digits[.digits]` with at least one digit (values.ts numericText). */
    isNumericText: (x: Frag) =>
      q`(${x} <> '' AND ${x} NOT GLOB '*[^0-9.-]*' AND ${x} GLOB '*[0-9]*' AND substr(${x}, 2) NOT GLOB '*-*' AND ${x} NOT GLOB '*.*.*')`,
    textNumber: (x) => q`CAST(${x} AS REAL)`,
    /** A string SQLite's julianday() reads as a date, starting YYYY-MM-DD (values.ts dateText). */
    isDateText: (x) => q`(${x} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' AND julianday(${x}) IS NOT NULL)`,
    dateMs: (x) => q`CAST(round((julianday(${x}) - 2440587.5) * 86400000.0) AS INTEGER)`,
    containsText: (x, v) => q`instr(${x}, ${v}) > 0`,
    startsWithText: (x, v) => q`substr(${x}, 1, length(${v})) = ${v}`,
    endsWithText: (x, v) => q`(length(${x}) >= length(${v}) AND substr(${x}, length(${x}) - length(${v}) + 1) = ${v})`,
    like: "LIKE",
    joinedSetLimit: Number.POSITIVE_INFINITY,
    ownSubplan: (f) => f,
  },
};

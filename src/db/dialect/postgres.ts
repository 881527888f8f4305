import { sql } from "kysely";
import { q, raw, type Frag } from "../frag";
import { containsAnyWith, type SqlDialect } from "./types";

/** A top-level key as a string literal (keys are validated: no quotes, backslashes or control characters). */
const keyLiteral = (key: string) => raw(`'${key.replaceAll("'", "''")}'`);
const jsonType = (key: string) => q`COALESCE(jsonb_typeof(c.data -> ${keyLiteral(key)}), '')`;
const NUMERIC_TEXT = "'^-?[0-9]*[.]?[0-9]*$'";

/**
 * PostgreSQL's spelling. Casts never raise: text is cast to a number only under a CASE that proved it
 * numeric, and dates go through mailsvc_date_ms() (migrations/postgres/001), which answers NULL for a
 * string PostgreSQL cannot read, as SQLite's julianday() does.
 */
export const postgresDialect: SqlDialect = {
  engine: "postgres",
  likeNoCase: "ILIKE",
  orderNoCase: (column) => sql`lower(${sql.ref(column)})`,
  jsonText: (column, key) => sql<string | null>`(${sql.ref(column)}::jsonb ->> ${key})`,
  containsAnyNoCase: (columns, needle) => containsAnyWith("ILIKE", columns, needle),
  contains: (column, value) => sql<boolean>`strpos(${sql.ref(column)}, ${value}::text) > 0`,
  jsonHasKey: (column, key) => sql<boolean>`(${sql.ref(column)}::jsonb -> ${key}::text) IS NOT NULL`,
  jsonRawValue: (column, key) => sql<string>`(${sql.ref(column)}::jsonb -> ${key}::text)::text`,
  jsonRemoveKey: (column, key) => sql<string>`(${sql.ref(column)}::jsonb - ${key}::text)`,
  glob: (column, pattern) => sql<boolean>`${sql.ref(column)} ~ ${globToRegex(pattern)}`,
  tableExistsSql: (name) => sql<{ n: number }>`SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ${name}`,
  indexedBy: () => sql``,
  conditions: {
    jsonValue: (key) => q`(c.data ->> ${keyLiteral(key)})`,
    numberValue: (key) => q`(CASE WHEN jsonb_typeof(c.data -> ${keyLiteral(key)}) = 'number' THEN (c.data ->> ${keyLiteral(key)})::double precision END)`,
    hasKey: (key) => q`(c.data -> ${keyLiteral(key)}) IS NOT NULL`,
    isText: (key) => q`${jsonType(key)} = 'string'`,
    isNumber: (key) => q`${jsonType(key)} = 'number'`,
    isBoolean: (key, b) => q`COALESCE(c.data -> ${keyLiteral(key)} = ${raw(b ? "'true'" : "'false'")}::jsonb, false)`,
    isNumericText: (x: Frag) => q`COALESCE(${x} ~ ${raw(NUMERIC_TEXT)} AND ${x} ~ '[0-9]', false)`,
    textNumber: (x) => q`(CASE WHEN ${x} ~ ${raw(NUMERIC_TEXT)} AND ${x} ~ '[0-9]' THEN ${x}::double precision END)`,
    isDateText: (x) => q`COALESCE(${x} ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}' AND mailsvc_date_ms(${x}) IS NOT NULL, false)`,
    dateMs: (x) => q`mailsvc_date_ms(${x})`,
    containsText: (x, v) => q`strpos(${x}, ${v}::text) > 0`,
    startsWithText: (x, v) => q`COALESCE(starts_with(${x}, ${v}::text), false)`,
    endsWithText: (x, v) => q`COALESCE(right(${x}, length(${v}::text)) = ${v}::text, false)`,
    like: "ILIKE",
    joinedSetLimit: 16,
    // A sublink inside an expression is not pulled up into the join tree.
    ownSubplan: (f) => q`(${f}) IS TRUE`,
  },
};

/** `*` any run, `?` one character, everything else literal. */
function globToRegex(glob: string): string {
  let out = "^";
  for (const ch of glob) out += ch === "*" ? ".*" : ch === "?" ? "." : /[\\^$.|+()[\]{}]/.test(ch) ? `\\${ch}` : ch;
  return out + "$";
}

/**
 * The SQLite-specific pieces of the compiled SQL, in one place: JSON access to `c.data`, date and
 * number parsing of stored strings, substring search. Everything else the compiler writes is plain
 * SQL. (A Postgres dialect would map json_type/json_extract to jsonb_typeof/->>, instr to strpos,
 * GLOB to SIMILAR TO and julianday to a to_timestamp expression.)
 *
 * Every predicate here is NULL-free (TRUE or FALSE, never NULL), so the compiler can negate it with NOT.
 */
import { Frag, q, raw } from "./frag";

/** The JSON path literal of a top-level data key (keys are validated: no quotes, backslashes or control characters). */
export const pathLiteral = (key: string) => raw(`'$."${key.replaceAll("'", "''")}"'`);

/** The stored value (matches an expression index `json_extract(data, '$."key"')`). */
export const jsonValue = (key: string) => q`json_extract(c.data, ${pathLiteral(key)})`;
const jsonTypeOr = (key: string) => q`COALESCE(json_type(c.data, ${pathLiteral(key)}), '')`;

export const hasKey = (key: string) => q`json_type(c.data, ${pathLiteral(key)}) IS NOT NULL`;
export const isText = (key: string) => q`${jsonTypeOr(key)} = 'text'`;
export const isNumber = (key: string) => q`${jsonTypeOr(key)} IN ('integer', 'real')`;
export const isBoolean = (key: string, b: boolean) => q`${jsonTypeOr(key)} = ${raw(b ? "'true'" : "'false'")}`;

/** `-?digits[.digits]` with at least one digit (values.ts numericText). */
export const isNumericText = (x: Frag) =>
  q`(${x} <> '' AND ${x} NOT GLOB '*[^0-9.-]*' AND ${x} GLOB '*[0-9]*' AND substr(${x}, 2) NOT GLOB '*-*' AND ${x} NOT GLOB '*.*.*')`;
export const textNumber = (x: Frag) => q`CAST(${x} AS REAL)`;

/** A string SQLite's julianday() reads as a date, starting YYYY-MM-DD (values.ts dateText). */
export const isDateText = (x: Frag) => q`(${x} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' AND julianday(${x}) IS NOT NULL)`;
/** Epoch ms of a date string. */
export const dateMs = (x: Frag) => q`CAST(round((julianday(${x}) - 2440587.5) * 86400000.0) AS INTEGER)`;

export const containsText = (x: Frag, v: string) => q`instr(${x}, ${v}) > 0`;
export const startsWithText = (x: Frag, v: string) => q`substr(${x}, 1, length(${v})) = ${v}`;
export const endsWithText = (x: Frag, v: string) => q`(length(${x}) >= length(${v}) AND substr(${x}, length(${x}) - length(${v}) + 1) = ${v})`;

/** LIKE pattern of a literal substring (`\` escapes). */
export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (m) => `\\${m}`);

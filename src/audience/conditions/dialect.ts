/**
 * The engine-specific pieces of the compiled SQL (JSON access to `c.data`, date and number parsing of
 * stored strings, substring search), taken from the process's SQL dialect (src/db/dialect/). Everything
 * else the compiler writes is plain SQL. Every predicate is NULL-free (TRUE or FALSE, never NULL), so
 * the compiler can negate it with NOT.
 */
import { dialect } from "../../db/dialect";
import type { Frag } from "../../db/frag";

const c = () => dialect().conditions;

export const jsonValue = (key: string) => c().jsonValue(key);
export const numberValue = (key: string) => c().numberValue(key);
export const hasKey = (key: string) => c().hasKey(key);
export const isText = (key: string) => c().isText(key);
export const isNumber = (key: string) => c().isNumber(key);
export const isBoolean = (key: string, b: boolean) => c().isBoolean(key, b);
/** `-?digits[.digits]` with at least one digit (values.ts numericText). */
export const isNumericText = (x: Frag) => c().isNumericText(x);
export const textNumber = (x: Frag) => c().textNumber(x);
/** A string the engine reads as a date, starting YYYY-MM-DD (values.ts dateText). */
export const isDateText = (x: Frag) => c().isDateText(x);
/** Epoch ms of a date string. */
export const dateMs = (x: Frag) => c().dateMs(x);
export const containsText = (x: Frag, v: string) => c().containsText(x, v);
export const startsWithText = (x: Frag, v: string) => c().startsWithText(x, v);
export const endsWithText = (x: Frag, v: string) => c().endsWithText(x, v);
/** LIKE that ignores ASCII case. */
export const like = () => c().like;
/** How many set subqueries a condition may hold as joins before each becomes its own subplan. */
export const joinedSetLimit = () => c().joinedSetLimit;
export const ownSubplan = (f: Frag) => c().ownSubplan(f);

/** LIKE pattern of a literal substring (`\` escapes). */
export const likeEscape = (s: string) => s.replace(/[\\%_]/g, (m) => `\\${m}`);

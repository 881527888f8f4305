/**
 * Expression indexes for the data fields segments test with `equals`: a count over a million contacts
 * on `json_extract(data, '$."plan"') = ?` reads the index instead of parsing every row's JSON
 * (~8 ms instead of ~300 ms per field, docs/api.md "Segments and conditions", Speed). The compiler writes exactly this expression
 * (dialect.ts jsonValue). A group ANDing equalities on several fields gets ONE composite index
 * (project_id, field a, field b[, field c]): SQLite uses a single index per table, so with one index
 * per field it would still read (and JSON-parse) every row the most selective one finds, while the
 * composite one answers a count from the index alone (scripts/bench/segments.ts: 2-filter count).
 * A field tested alone gets a single-field index. One index per field set for all projects, at most
 * MAX_FIELD_INDEXES; each costs a little on contact writes, so only `equals` filters of DYNAMIC
 * segments ask for one. (DDL and sqlite_master: SQLite-specific, kept in this one file.)
 */
import { sql } from "kysely";
import type { AppContext } from "../../context";
import { modeOf, type ConditionTree } from "../conditions";

export const MAX_FIELD_INDEXES = 20;
export const FIELD_INDEX_PREFIX = "contacts_data_";
/** Columns after project_id of a composite index (the rest of a wider group is checked on the row). */
export const MAX_INDEX_FIELDS = 3;

/**
 * Whether the compiler writes this `equals` value as the plain `json_extract(...) = ?` an index serves
 * (compile.ts dataFilter: a text value; numbers, booleans and dates compile to type-checking forms).
 * A composite index must not lead with a field the query cannot seek on.
 */
const indexable = (value: unknown) => modeOf(value) === "string" && !/^\s*[[{]/.test(String(value));

/**
 * PostgreSQL: per AND group, its `equals` data filters with their values (sorted by key, at most
 * MAX_INDEX_FIELDS). An expression index on PostgreSQL cannot answer a count from the index alone
 * (the planner wants the `data` column itself), so a segment's equalities get a partial index of their
 * values, which can (scripts/bench/engines.ts: 1M contacts, ~27 ms instead of ~350 ms).
 */
export function equalsFieldValues(tree: ConditionTree, out: [string, string][][] = []): [string, string][][] {
  for (const g of tree.groups ?? []) {
    const pairs = new Map<string, string>();
    for (const f of g.filters ?? []) {
      if (f.operator === "equals" && f.field.startsWith("data.") && f.field.length <= 5 + 64 && indexable(f.value) && String(f.value).length <= 200) {
        if (!pairs.has(f.field.slice(5))) pairs.set(f.field.slice(5), String(f.value));
      }
    }
    if (pairs.size) out.push([...pairs].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).slice(0, MAX_INDEX_FIELDS));
    if (g.conditions) equalsFieldValues(g.conditions, out);
  }
  return out;
}

/** The field sets to index: per AND group, its distinct `equals` data keys (sorted, at most MAX_INDEX_FIELDS). */
export function equalsFieldSets(tree: ConditionTree, out: string[][] = []): string[][] {
  for (const g of tree.groups ?? []) {
    const keys = new Set<string>();
    for (const f of g.filters ?? []) if (f.operator === "equals" && f.field.startsWith("data.") && f.field.length <= 5 + 64 && indexable(f.value)) keys.add(f.field.slice(5));
    // Sorted: the same fields in another order share the index (equalities: any column order serves).
    if (keys.size) out.push([...keys].sort().slice(0, MAX_INDEX_FIELDS));
    if (g.conditions) equalsFieldSets(g.conditions, out);
  }
  return out;
}

const hex = (key: string) => Buffer.from(key, "utf8").toString("hex");
/** `contacts_data_<hex a>` or `contacts_data_<hex a>_<hex b>…` (hex has no `_`). */
export const fieldIndexName = (keys: string | readonly string[]) => FIELD_INDEX_PREFIX + (typeof keys === "string" ? [keys] : keys).map(hex).join("_");

/** PostgreSQL names are at most 63 bytes: a longer one becomes the prefix and a digest of it. */
const pgIndexName = (name: string) => (name.length <= 63 ? name : `${FIELD_INDEX_PREFIX}h${new Bun.CryptoHasher("sha1").update(name).digest("hex").slice(0, 40)}`);

/** Creates the missing field indexes of a condition (idempotent). Never throws: an index is an optimisation. */
export async function ensureFieldIndexes(ctx: AppContext, tree: ConditionTree | null): Promise<string[]> {
  if (!tree) return [];
  const sets = equalsFieldSets(tree);
  if (!sets.length) return [];
  try {
    const pg = ctx.store.engine === "postgres";
    const listed = pg
      ? sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE ${FIELD_INDEX_PREFIX + "%"}`
      : sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE ${FIELD_INDEX_PREFIX + "%"}`;
    const existing = new Set((await listed.execute(ctx.db)).rows.map((r) => r.name));
    const created: string[] = [];
    if (pg) {
      // One partial index per set of equalities with their values (see equalsFieldValues).
      for (const pairs of equalsFieldValues(tree)) {
        const digest = new Bun.CryptoHasher("sha1").update(JSON.stringify(pairs)).digest("hex").slice(0, 10);
        const name = pgIndexName(`${fieldIndexName(pairs.map(([k]) => k))}_v${digest}`);
        if (existing.has(name) || existing.size >= MAX_FIELD_INDEXES) continue;
        const lit = (x: string) => `'${x.replaceAll("'", "''")}'`;
        const where = pairs.map(([k, v]) => `(data ->> ${lit(k)}) = ${lit(v)}`).join(" AND ");
        await sql.raw(`CREATE INDEX IF NOT EXISTS ${name} ON contacts (project_id, created_at, id) WHERE ${where}`).execute(ctx.db);
        existing.add(name);
        created.push(name);
      }
    }
    for (const keys of sets) {
      const name = pg ? pgIndexName(fieldIndexName(keys)) : fieldIndexName(keys);
      if (existing.has(name)) continue;
      if (existing.size >= MAX_FIELD_INDEXES) break;
      // The expression the compiler writes for `equals` (src/db/dialect/*: jsonValue), so the planner uses it.
      const cols = keys.map((key) => (pg ? `(data ->> '${key.replaceAll("'", "''")}')` : `json_extract(data, '$."${key.replaceAll("'", "''")}"')`)).join(", ");
      await sql.raw(`CREATE INDEX IF NOT EXISTS ${name} ON contacts (project_id, ${cols})`).execute(ctx.db);
      existing.add(name);
      created.push(name);
    }
    return created;
  } catch (e) {
    ctx.log.error("segment field index failed", { error: String((e as Error)?.message ?? e) });
    return [];
  }
}

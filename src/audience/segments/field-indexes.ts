/**
 * Expression indexes for the data fields segments test with `equals`: a count over a million contacts
 * on `json_extract(data, '$."plan"') = ?` reads the index instead of parsing every row's JSON
 * (~8 ms instead of ~300 ms per field, docs/stack-notes). The compiler writes exactly this expression
 * (dialect.ts jsonValue). One index per field name for all projects, at most MAX_FIELD_INDEXES; each
 * costs a little on contact writes, so only `equals` filters of DYNAMIC segments ask for one.
 * (DDL and sqlite_master: SQLite-specific, kept in this one file.)
 */
import { sql } from "kysely";
import type { AppContext } from "../../context";
import type { ConditionTree } from "../conditions";

export const MAX_FIELD_INDEXES = 20;
export const FIELD_INDEX_PREFIX = "contacts_data_";

function equalsFields(tree: ConditionTree, out = new Set<string>()): Set<string> {
  for (const g of tree.groups ?? []) {
    for (const f of g.filters ?? []) if (f.operator === "equals" && f.field.startsWith("data.")) out.add(f.field.slice(5));
    if (g.conditions) equalsFields(g.conditions, out);
  }
  return out;
}

export const fieldIndexName = (key: string) => FIELD_INDEX_PREFIX + Buffer.from(key, "utf8").toString("hex");

/** Creates the missing field indexes of a condition (idempotent). Never throws: an index is an optimisation. */
export async function ensureFieldIndexes(ctx: AppContext, tree: ConditionTree | null): Promise<string[]> {
  if (!tree) return [];
  const keys = [...equalsFields(tree)].filter((k) => k.length <= 64);
  if (!keys.length) return [];
  try {
    const existing = new Set(
      (await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE ${FIELD_INDEX_PREFIX + "%"}`.execute(ctx.db)).rows.map((r) => r.name),
    );
    const created: string[] = [];
    for (const key of keys) {
      const name = fieldIndexName(key);
      if (existing.has(name)) continue;
      if (existing.size >= MAX_FIELD_INDEXES) break;
      const path = `'$."${key.replaceAll("'", "''")}"'`;
      await sql.raw(`CREATE INDEX IF NOT EXISTS ${name} ON contacts (project_id, json_extract(data, ${path}))`).execute(ctx.db);
      existing.add(name);
      created.push(name);
    }
    return created;
  } catch (e) {
    ctx.log.error("segment field index failed", { error: String((e as Error)?.message ?? e) });
    return [];
  }
}

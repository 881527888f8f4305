// Store file (SQLite-specific on purpose): the project reset deletes the project's rows from EVERY
// table that has a project_id column, except the ones a reset keeps, in ONE transaction. Tables are
// found from the schema so that a module added later (campaigns, segments, workflows, …) is wiped
// too without registering anything; its resetProject hook still runs afterwards for caches.
import type { Database } from "bun:sqlite";

/** What a reset keeps (decisions.md): the project, its keys (on the project row), members, domains, billing. */
export const KEPT_TABLES = new Set([
  "projects",
  "project_members",
  "domains",
  "billing_limits",
  "billing_usage",
  "billing_subscriptions",
  "billing_invoices",
  "webhook_endpoints",
]);

export function projectTables(sqlite: Database): string[] {
  const tables = sqlite
    .query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .all()
    .map((r) => r.name);
  return tables.filter(
    (t) => !KEPT_TABLES.has(t) && sqlite.query<{ name: string }, [string]>("SELECT name FROM pragma_table_info(?) WHERE name = 'project_id'").get(t),
  );
}

/** Deletes every row of the project outside KEPT_TABLES in one transaction; returns rows per table. */
export function wipeProjectRows(sqlite: Database, projectId: string): Record<string, number> {
  const deleted: Record<string, number> = {};
  sqlite.transaction(() => {
    // Deferred: rows reference each other across tables in any order; every check runs at commit.
    sqlite.exec("PRAGMA defer_foreign_keys = ON");
    for (const t of projectTables(sqlite)) {
      const n = sqlite.query(`DELETE FROM "${t.replace(/"/g, '""')}" WHERE project_id = ?`).run(projectId).changes;
      if (n) deleted[t] = n;
    }
  })();
  return deleted;
}

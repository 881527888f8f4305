// Store file: the project reset deletes the project's rows from EVERY table that has a project_id
// column, except the ones a reset keeps, in ONE transaction. Tables are found from the schema (each
// engine's catalog) so that a module added later is wiped too without registering anything; its
// resetProject hook still runs afterwards for caches.
import type { Kysely } from "kysely";
import { atomic, rawAll } from "../../db/raw";

/** What a reset keeps (docs/api.md "Billing, uploads, project reset", **Reset**): the project, its keys (on the project row), members, domains, billing. */
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

const TABLES_WITH_PROJECT_ID = {
  sqlite:
    "SELECT m.name AS name FROM sqlite_master m WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND EXISTS (SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'project_id') ORDER BY m.name",
  postgres:
    "SELECT table_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'project_id' ORDER BY table_name",
} as const;

export async function projectTables(db: Kysely<any>, engine: "sqlite" | "postgres"): Promise<string[]> {
  const rows = await rawAll<{ name: string }>(db, engine, TABLES_WITH_PROJECT_ID[engine]);
  return rows.map((r) => r.name).filter((t) => !KEPT_TABLES.has(t));
}

/** Deletes every row of the project outside KEPT_TABLES in one transaction; returns rows per table. */
export async function wipeProjectRows(db: Kysely<any>, engine: "sqlite" | "postgres", projectId: string): Promise<Record<string, number>> {
  const tables = await projectTables(db, engine);
  const deleted: Record<string, number> = {};
  await atomic(db, engine, async (q) => {
    // Deferred: rows reference each other across tables in any order; every check runs at commit.
    const del = (t: string) => q.run(`DELETE FROM "${t.replace(/"/g, '""')}" WHERE project_id = ?`, [projectId]);
    if (engine === "sqlite") {
      await q.run("PRAGMA defer_foreign_keys = ON");
      for (const t of tables) {
        const n = await del(t);
        if (n) deleted[t] = n;
      }
      return;
    }
    // PostgreSQL checks a foreign key at each statement: a table still referenced by rows of another
    // is retried after the others (each attempt behind a savepoint).
    let left = tables;
    while (left.length) {
      const retry: string[] = [];
      for (const t of left) {
        await q.run("SAVEPOINT wipe");
        try {
          const n = await del(t);
          await q.run("RELEASE SAVEPOINT wipe");
          if (n) deleted[t] = (deleted[t] ?? 0) + n;
        } catch (e) {
          await q.run("ROLLBACK TO SAVEPOINT wipe");
          if ((e as { code?: string }).code !== "23503") throw e;
          retry.push(t);
        }
      }
      if (retry.length === left.length) throw new Error(`project reset: foreign keys keep ${retry.join(", ")} from being emptied`);
      left = retry;
    }
  });
  return deleted;
}

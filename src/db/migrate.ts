import type { Database } from "bun:sqlite";
import { MIGRATIONS } from "./migrations";

/** Applies the embedded forward-only migrations that the file has not seen yet. Returns the names applied. */
export function migrate(sqlite: Database, now = Date.now()): string[] {
  sqlite.exec("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)");
  const done = new Set(
    sqlite.query<{ name: string }, []>("SELECT name FROM schema_migrations").all().map((r) => r.name),
  );
  const applied: string[] = [];
  for (const m of MIGRATIONS) {
    if (done.has(m.name)) continue;
    sqlite.transaction(() => {
      if (m.sql.replace(/--.*$/gm, "").trim()) sqlite.exec(m.sql);
      sqlite.query("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)").run(m.name, now);
    })();
    applied.push(m.name);
  }
  return applied;
}

// One migration history per engine, the same names in the same order (decisions.md "PostgreSQL and
// many instances"); a database migrated by a newer binary is refused.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { MIGRATIONS } from "../../src/db/migrations";
import { POSTGRES_MIGRATIONS } from "../../src/db/migrations-postgres";
import { migrate, MigrationError } from "../../src/db/migrate";

describe("migrations on both engines", () => {
  test("every SQLite migration has its PostgreSQL twin, the same name in the same order", () => {
    expect(POSTGRES_MIGRATIONS.map((m) => m.name)).toEqual(MIGRATIONS.map((m) => m.name));
    for (const m of POSTGRES_MIGRATIONS) expect(m.sql.length).toBeGreaterThan(0);
  });

  test("a database migrated by a newer binary is refused, naming what it does not know", () => {
    const db = new Database(":memory:");
    migrate(db);
    db.query("INSERT INTO schema_migrations (name, applied_at) VALUES ('999_from_the_future', 0)").run();
    expect(() => migrate(db)).toThrow(MigrationError);
    expect(() => migrate(db)).toThrow("999_from_the_future");
    db.close();
  });
});

// The installation's settings (secrets generated once and kept in the database, so the one-file
// backup carries them). Read with Kysely; the JWT secret is also read synchronously, once, while
// the context is built (createContext is synchronous), through the raw sibling.
import type { Database } from "bun:sqlite";
import type { Kysely } from "kysely";
import type { DB } from "./schema";

/** The value of `key`, created with `make()` when absent (first writer wins). */
export async function settingOrCreate(db: Kysely<DB>, key: string, make: () => string): Promise<string> {
  const row = await db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirst();
  if (row) return row.value;
  await db.insertInto("settings").values({ key, value: make() }).onConflict((oc) => oc.column("key").doNothing()).execute();
  return (await db.selectFrom("settings").select("value").where("key", "=", key).executeTakeFirstOrThrow()).value;
}

/** settingOrCreate for start-up, before anything async runs. */
export function settingOrCreateSync(sqlite: Database, key: string, make: () => string): string {
  const read = () => sqlite.query<{ value: string }, [string]>("SELECT value FROM settings WHERE key = ?").get(key)?.value;
  const value = read();
  if (value !== undefined) return value;
  sqlite.query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING").run(key, make());
  return read()!;
}

// The data layer's one rule, checked on the source: SQL text, `sql` tags, raw statements and the raw
// database handle appear only in stores (the modules that own tables) and in src/db/ (the engines and
// their dialects). Services call stores. A store is a file named store.ts, *-store.ts, queries.ts,
// raw.ts, *-raw.ts or dialect.ts, or one listed below with the tables it owns.
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { existsSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

/** Stores whose file name does not say so, and what they own. */
const OWNERS: Record<string, string> = {
  "src/audience/segments/field-indexes.ts": "the contacts table's field indexes (DDL)",
  "src/http/idempotency.ts": "idempotency_keys",
  "src/jobs/queue.ts": "jobs",
  "src/mail/outbox/enqueue.ts": "emails and email_contents (the one email insert)",
  "src/mail/outbox/suppressions.ts": "suppressions",
  "src/mail/tracking/tracked-links.ts": "tracked_links",
  "src/modules/analytics/rollup-consumer.ts": "event_rollup_hourly, event_rollup_daily, event_name_totals, campaign_rollup",
  "src/modules/billing/quota.ts": "billing_usage",
  "src/modules/campaigns/recipients.ts": "a campaign's audience (contacts read)",
  "src/modules/domains/dmarc.ts": "dmarc_reports",
};

const isStore = (f: string) =>
  f.startsWith("src/db/") || /(^|\/)(store|queries|raw|dialect)\.ts$/.test(f) || /-(store|raw)\.ts$/.test(f) || f in OWNERS;

function sqlSignals(text: string): string[] {
  const hits: string[] = [];
  if (/from "bun:sqlite"/.test(text)) hits.push("imports bun:sqlite");
  if (/\bstore\.sqlite\b|\.exclusive\(/.test(text)) hits.push("holds the raw handle");
  if (/\bsql(<[^>]*>)?`/.test(text)) hits.push("a sql`` tag");
  if (/executeQuery\(|CompiledQuery\.raw/.test(text)) hits.push("a raw compiled query");
  if (/["'`]\s*(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE (UNIQUE )?INDEX)\b/.test(text)) hits.push("SQL text");
  return hits;
}

describe("the data layer", () => {
  test("SQL and the raw handle live only in stores and src/db/", async () => {
    const offenders: string[] = [];
    for await (const f of new Glob("src/**/*.ts").scan(ROOT)) {
      if (isStore(f)) continue;
      const hits = sqlSignals(await Bun.file(join(ROOT, f)).text());
      if (hits.length) offenders.push(`${f}: ${hits.join(", ")}`);
    }
    expect(offenders).toEqual([]);
  });

  test("every listed owner exists and holds SQL (a stale entry would hide nothing)", async () => {
    for (const f of Object.keys(OWNERS)) {
      expect({ f, exists: existsSync(join(ROOT, f)) }).toEqual({ f, exists: true });
      expect({ f, sql: sqlSignals(await Bun.file(join(ROOT, f)).text()).length > 0 }).toEqual({ f, sql: true });
    }
  });

  test("the scan sees what it looks for", () => {
    expect(sqlSignals('const q = "SELECT id FROM contacts";')).toEqual(["SQL text"]);
    expect(sqlSignals("db.select(sql<number>`count(*)`)")).toEqual(["a sql`` tag"]);
    expect(sqlSignals("ctx.store.sqlite.query(x)")).toEqual(["holds the raw handle"]);
    expect(sqlSignals("const a = ctx.db.selectFrom('contacts')")).toEqual([]);
  });
});

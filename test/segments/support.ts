// A small in-process audience on a migrated database of the suite's engine for the compiler's unit and property tests:
// contacts + events + static memberships, and a runner that selects with the compiled SQL and with
// the in-memory evaluator.
import type { Kysely } from "kysely";
import { openDatabase, openStore, type DB, type Store } from "../../src/db";
import { useEngine } from "../../src/db/dialect";
import { migrate, migrateStore } from "../../src/db/migrate";
import { atomic, rawAll } from "../../src/db/raw";
import { dropTestDatabase, TEST_ENGINE, testDatabaseUrl } from "../support/postgres";
import { compileCondition, evaluateInMemory, evaluateKnown, type CompileContext, type ConditionTree, type MemContact, type MemEvent, type SegmentDef } from "../../src/audience/conditions";

export const PROJECT = "p1";
const NONE: ReadonlySet<string> = new Set();
export const OTHER = "p2";

export interface Seed {
  contacts: Array<MemContact & { projectId?: string }>;
  events: Array<{ contactId: string; name: string; createdAt: number; projectId?: string }>;
  segments: SegmentDef[];
  members: Array<{ segmentId: string; contactId: string }>;
}

export class Audience {
  private eventsBy = new Map<string, MemEvent[]>();
  private membersBy = new Map<string, Set<string>>();
  readonly segments: Map<string, SegmentDef>;
  private own: Seed["contacts"] | null = null;

  private constructor(
    readonly seed: Seed,
    readonly store: Store,
  ) {
    this.segments = new Map(seed.segments.map((g) => [g.id, g]));
  }

  get db(): Kysely<DB> {
    return this.store.db;
  }

  get engine() {
    return this.store.engine;
  }

  /** A migrated database of the suite's engine (an in-memory SQLite file, or a fresh PostgreSQL database) holding `seed`. */
  static async open(seed: Seed): Promise<Audience> {
    let store: Store;
    if (TEST_ENGINE === "postgres") {
      store = openDatabase({ db: "", databaseUrl: await testDatabaseUrl() });
      await migrateStore(store);
    } else {
      store = openStore(":memory:");
      migrate(store.sqlite);
    }
    useEngine(store.engine);
    const aud = new Audience(seed, store);
    await aud.fill();
    return aud;
  }

  private async fill() {
    const seed = this.seed;
    await atomic(this.db, this.engine, async (q) => {
      for (const p of [PROJECT, OTHER]) {
        await q.run("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES (?, ?, ?, ?, 0, 0)", [p, p, `pk_${p}`, `sk_${p}`]);
      }
      for (const c of seed.contacts) {
        await q.run("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)", [
          c.id,
          c.projectId ?? PROJECT,
          c.email,
          c.subscribed ? 1 : 0,
          JSON.stringify(c.data),
          c.createdAt,
          c.updatedAt,
        ]);
      }
      for (const e of seed.events) {
        await q.run("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, NULL, NULL, ?)", [
          Bun.randomUUIDv7(undefined, e.createdAt),
          e.projectId ?? PROJECT,
          e.contactId,
          e.name,
          e.createdAt,
        ]);
        const list = this.eventsBy.get(e.contactId) ?? [];
        list.push({ name: e.name, createdAt: e.createdAt });
        this.eventsBy.set(e.contactId, list);
      }
      for (const g of seed.segments) {
        await q.run("INSERT INTO segments (id, project_id, name, slug, type, condition, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, 0)", [
          g.id,
          PROJECT,
          g.id,
          g.id,
          g.type,
          g.condition ? JSON.stringify(g.condition) : null,
        ]);
      }
      for (const m of seed.members) {
        await q.run("INSERT INTO segment_members (segment_id, contact_id, created_at) VALUES (?, ?, 0)", [m.segmentId, m.contactId]);
        const set = this.membersBy.get(m.contactId) ?? new Set();
        set.add(m.segmentId);
        this.membersBy.set(m.contactId, set);
      }
    });
  }

  /** Runs a statement written in SQLite's form on the audience's database. */
  all<T>(sqliteText: string, params: unknown[] = []): Promise<T[]> {
    return rawAll<T>(this.db, this.engine, sqliteText, params);
  }

  /** Ids of PROJECT's contacts selected by the compiled SQL. */
  async sqlIds(tree: ConditionTree, ctx: Omit<CompileContext, "projectId" | "segments"> & { shape?: "set" | "row" }): Promise<string[]> {
    const { sql, params } = compileCondition(tree, { ...ctx, projectId: PROJECT, segments: this.segments });
    const rows = await this.all<{ id: string }>(`SELECT c.id FROM contacts c WHERE c.project_id = ? AND (${sql}) ORDER BY c.id`, [PROJECT, ...params]);
    return rows.map((r) => r.id);
  }

  /** Ids of PROJECT's contacts selected by the in-memory evaluator. */
  memIds(tree: ConditionTree, ctx: { now: number; facts?: CompileContext["facts"]; mode?: "segment" | "workflow" }): string[] {
    this.own ??= this.seed.contacts.filter((c) => (c.projectId ?? PROJECT) === PROJECT);
    return this.own
      .filter((c) =>
        evaluateInMemory(tree, c, {
          now: ctx.now,
          facts: ctx.facts,
          mode: ctx.mode,
          events: this.eventsBy.get(c.id) ?? [],
          memberships: this.membersBy.get(c.id) ?? NONE,
          segments: this.segments,
        }),
      )
      .map((c) => c.id)
      .sort();
  }

  /**
   * evaluateKnown (without the events) beside the full evaluation, for PROJECT's contacts: how many
   * it decided, and the contacts where its decision differs from the full answer (must be none).
   */
  knownVsFull(tree: ConditionTree, now: number): { decided: number; total: number; wrong: string[] } {
    this.own ??= this.seed.contacts.filter((c) => (c.projectId ?? PROJECT) === PROJECT);
    let decided = 0;
    const wrong: string[] = [];
    for (const c of this.own) {
      const opts = { now, memberships: this.membersBy.get(c.id) ?? NONE, segments: this.segments };
      const known = evaluateKnown(tree, c, opts);
      if (known === undefined) continue;
      decided++;
      if (known !== evaluateInMemory(tree, c, { ...opts, events: this.eventsBy.get(c.id) ?? [] })) wrong.push(c.id);
    }
    return { decided, total: this.own.length, wrong };
  }

  async close() {
    const url = TEST_ENGINE === "postgres" ? (this.store.pg?.options as { connectionString?: string } | undefined)?.connectionString : undefined;
    await this.store.close();
    if (url) await dropTestDatabase(url).catch(() => {});
  }
}

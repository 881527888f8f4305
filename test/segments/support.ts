// A small in-process audience on a migrated SQLite file for the compiler's unit and property tests:
// contacts + events + static memberships, and a runner that selects with the compiled SQL and with
// the in-memory evaluator.
import { Database } from "bun:sqlite";
import { Kysely } from "kysely";
import { BunSqliteDialect } from "../../src/db/bun-sqlite-dialect";
import { migrate } from "../../src/db/migrate";
import type { DB } from "../../src/db";
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
  readonly sqlite: Database;
  readonly db: Kysely<DB>;
  private eventsBy = new Map<string, MemEvent[]>();
  private membersBy = new Map<string, Set<string>>();
  readonly segments: Map<string, SegmentDef>;
  private own: Seed["contacts"] | null = null;

  constructor(readonly seed: Seed) {
    this.sqlite = new Database(":memory:", { strict: true });
    this.sqlite.exec("PRAGMA foreign_keys = ON");
    migrate(this.sqlite);
    this.db = new Kysely<DB>({ dialect: new BunSqliteDialect(this.sqlite) });
    const s = this.sqlite;
    for (const p of [PROJECT, OTHER]) {
      s.query("INSERT INTO projects (id, name, public_key, secret_key, created_at, updated_at) VALUES (?, ?, ?, ?, 0, 0)").run(p, p, `pk_${p}`, `sk_${p}`);
    }
    s.transaction(() => {
      const ic = s.query("INSERT INTO contacts (id, project_id, email, subscribed, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)");
      for (const c of seed.contacts) ic.run(c.id, c.projectId ?? PROJECT, c.email, c.subscribed ? 1 : 0, JSON.stringify(c.data), c.createdAt, c.updatedAt);
      const ie = s.query("INSERT INTO events (id, project_id, contact_id, name, data, email_id, created_at) VALUES (?, ?, ?, ?, NULL, NULL, ?)");
      for (const e of seed.events) {
        ie.run(Bun.randomUUIDv7(undefined, e.createdAt), e.projectId ?? PROJECT, e.contactId, e.name, e.createdAt);
        const list = this.eventsBy.get(e.contactId) ?? [];
        list.push({ name: e.name, createdAt: e.createdAt });
        this.eventsBy.set(e.contactId, list);
      }
      const is = s.query("INSERT INTO segments (id, project_id, name, slug, type, condition, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 0, 0)");
      for (const g of seed.segments) is.run(g.id, PROJECT, g.id, g.id, g.type, g.condition ? JSON.stringify(g.condition) : null);
      const im = s.query("INSERT INTO segment_members (segment_id, contact_id, created_at) VALUES (?, ?, 0)");
      for (const m of seed.members) {
        im.run(m.segmentId, m.contactId);
        const set = this.membersBy.get(m.contactId) ?? new Set();
        set.add(m.segmentId);
        this.membersBy.set(m.contactId, set);
      }
    })();
    this.segments = new Map(seed.segments.map((g) => [g.id, g]));
  }

  /** Ids of PROJECT's contacts selected by the compiled SQL. */
  sqlIds(tree: ConditionTree, ctx: Omit<CompileContext, "projectId" | "segments"> & { shape?: "set" | "row" }): string[] {
    const { sql, params } = compileCondition(tree, { ...ctx, projectId: PROJECT, segments: this.segments });
    const rows = this.sqlite.query<{ id: string }, any[]>(`SELECT c.id FROM contacts c WHERE c.project_id = ? AND (${sql}) ORDER BY c.id`).all(PROJECT, ...(params as any[]));
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

  close() {
    this.sqlite.close();
  }
}

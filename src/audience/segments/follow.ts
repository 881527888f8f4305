/**
 * Tracked segments follow /v1/track inside the track batch's own transaction.
 *
 * Pure half (table-tested in test/segments/follow.test.ts):
 *   - `segmentDeps(tree, segments)`: what a condition reads (data keys, event names, contact
 *     columns, stored memberships), through `segment.<id>` references to DYNAMIC segments;
 *   - `touches(deps, change)`: whether one contact write can move a segment. A write that reaches
 *     none of a segment's inputs cannot change its membership, so the segment is not evaluated.
 *     Time alone (a `triggeredWithin` window closing) moves nothing here: that is the sweep's job.
 *
 * Then `SegmentFollower` (one per transaction, raw statements: the /v1/track hot path,
 * scripts/bench/segments.ts) evaluates only the touched segments of a written contact:
 *   - in memory when the condition reads no events (or the contact is new, so its events are
 *     exactly the ones this write recorded): evaluateInMemory, property-tested against the SQL;
 *   - in memory too when the rest of the condition decides without the events (evaluateKnown,
 *     three-valued: `plan = enterprise AND triggered invite_sent` for a contact on another plan);
 *   - otherwise with the compiled SQL for that one contact: ONE query whatever the number of such
 *     segments (a CASE column each, compiled once per transaction);
 * and diffs the results against the contact's stored memberships: member rows, entry/exit events
 * and memberCount deltas are written in the same transaction as the track itself. Every match is
 * decided before the first write, so the order of the segments does not matter.
 */
import type { Q } from "../../db/raw";
import { evaluateInMemory, evaluateKnown, parseField, type ConditionTree, type MemContact, type MemEvent, type SegmentDef } from "../conditions";
import type { RecordedEvent } from "../events";
import type { TrackedSegment } from "./tracked";
import { addToCountsRaw, matchColumns, writeMoveRaw, matchOneSql } from "./membership-raw";

// ---- pure: what a condition reads, and what a write changes ---------------------------------------

export interface Deps {
  /** Top-level `data.<key>` keys. */
  keys: Set<string>;
  /** Event names of the `triggered` family (`email.*` included). */
  events: Set<string>;
  email: boolean;
  subscribed: boolean;
  createdAt: boolean;
  updatedAt: boolean;
  /** Reads STATIC memberships (`segment.<id>` of a STATIC segment). */
  memberships: boolean;
}

export function segmentDeps(tree: ConditionTree | null, segments: ReadonlyMap<string, SegmentDef>): Deps {
  const d: Deps = { keys: new Set(), events: new Set(), email: false, subscribed: false, createdAt: false, updatedAt: false, memberships: false };
  const seen = new Set<string>();
  const walk = (t: ConditionTree | null | undefined, depth: number) => {
    if (!t || !Array.isArray(t.groups) || depth > 20) return;
    for (const g of t.groups) {
      for (const f of g?.filters ?? []) {
        const ref = parseField(String(f?.field), String(f?.operator), "segment");
        switch (ref?.kind) {
          case "data":
            d.keys.add(ref.key);
            break;
          case "event":
            d.events.add(ref.name);
            break;
          case "email":
          case "subscribed":
          case "createdAt":
          case "updatedAt":
            d[ref.kind] = true;
            break;
          case "segment": {
            const seg = segments.get(ref.id);
            if (!seg || seen.has(ref.id)) break;
            seen.add(ref.id);
            if (seg.type === "STATIC") d.memberships = true;
            else walk(seg.condition, depth + 1);
            break;
          }
        }
      }
      walk(g?.conditions, depth + 1);
    }
  };
  walk(tree, 0);
  return d;
}

/** What one write did to a contact. */
export interface ContactChange {
  isNew: boolean;
  /** Data keys set or deleted. */
  keys: readonly string[];
  /** Names of the events the write recorded. */
  events: readonly string[];
  /** `subscribed` flipped. */
  subscribed: boolean;
  /** The row was written (updatedAt moved). */
  updated: boolean;
}

export function touches(d: Deps, ch: ContactChange): boolean {
  if (ch.isNew) return true;
  if (ch.subscribed && d.subscribed) return true;
  if (ch.updated && d.updatedAt) return true;
  for (const k of ch.keys) if (d.keys.has(k)) return true;
  for (const e of ch.events) if (d.events.has(e)) return true;
  return false;
}

// ---- the follower -----------------------------------------------------------------------------------

/** A project's tracked segments, ready for the hot path (built once per segment change, see membership.ts). */
export interface FollowPlan {
  projectId: string;
  tracked: ReadonlyArray<{ seg: TrackedSegment; deps: Deps }>;
  /** Segments the tracked ones reference (transitively). */
  segments: ReadonlyMap<string, SegmentDef>;
}

export function followPlan(projectId: string, tracked: readonly TrackedSegment[], segments: ReadonlyMap<string, SegmentDef>): FollowPlan {
  return { projectId, segments, tracked: tracked.map((seg) => ({ seg, deps: segmentDeps(seg.tree, segments) })) };
}

export class SegmentFollower {
  /** Entry/exit events recorded (hand them to notifyEvents after the commit). */
  readonly events: RecordedEvent[] = [];
  private readonly deltas = new Map<string, number>();
  private readonly compiled = new Map<string, { sql: string; params: readonly unknown[] }>();
  /** Segments whose evaluation failed in this transaction: reported once, then skipped. */
  private readonly failed = new Set<string>();

  constructor(
    private readonly q: Q,
    private readonly now: number,
    private readonly onError: (segmentId: string, e: unknown) => void,
  ) {}

  /**
   * Re-evaluates `contact` against the tracked segments `change` touches; writes the moves.
   * `stored`: the contact's stored memberships before the write, read with its row in the same
   * look-up (raw.ts upsertContactRaw withMemberships).
   */
  async follow(plan: FollowPlan, contact: MemContact, change: ContactChange, stored: ReadonlySet<string>): Promise<void> {
    const touched = plan.tracked.filter((t) => touches(t.deps, change) && !this.failed.has(t.seg.id));
    if (!touched.length) return;
    const newEvents: MemEvent[] | null = change.isNew ? change.events.map((name) => ({ name, createdAt: this.now })) : null;
    // Decided in memory: segments that read no events, every segment of a new contact (its events
    // are the ones this write recorded), and event-reading ones whose other filters decide alone
    // (`plan = enterprise AND triggered invite_sent` for a contact on another plan). The rest: SQL.
    const decided = new Map<TrackedSegment, boolean>();
    const inSql: TrackedSegment[] = [];
    const opts = { now: this.now, memberships: stored, segments: plan.segments };
    for (const { seg, deps } of touched) {
      try {
        const known = newEvents || deps.events.size === 0 ? evaluateInMemory(seg.tree, contact, { ...opts, events: newEvents ?? [] }) : evaluateKnown(seg.tree, contact, opts);
        if (known === undefined) inSql.push(seg);
        else decided.set(seg, known);
      } catch (e) {
        this.fail([seg], e);
      }
    }
    let sqlMatches: boolean[] = [];
    try {
      sqlMatches = await this.matchInSql(plan, inSql, contact.id);
    } catch (e) {
      this.fail(inSql, e);
    }
    inSql.forEach((seg, k) => {
      if (k < sqlMatches.length) decided.set(seg, sqlMatches[k]!);
    });
    // Every match is decided (the one query has run): now the moves, in the segments' order.
    for (const { seg } of touched) {
      const match = decided.get(seg);
      if (match === undefined || match === stored.has(seg.id)) continue;
      this.events.push(await writeMoveRaw(this.q, plan.projectId, this.now, seg, contact.id, match));
      this.deltas.set(seg.id, (this.deltas.get(seg.id) ?? 0) + (match ? 1 : -1));
    }
  }

  /** Segments to recount after the commit (moved while their memberCount was out of sync; recount.ts). */
  readonly recount: string[] = [];

  /** Writes the memberCount deltas; call once, last, inside the same transaction. */
  async finish(): Promise<void> {
    this.recount.push(...(await addToCountsRaw(this.q, this.deltas)));
    this.deltas.clear();
  }

  /** A broken condition never fails the track: reported once per transaction, skipped; the sweep retries it. */
  private fail(segs: readonly TrackedSegment[], e: unknown) {
    for (const seg of segs) {
      this.failed.add(seg.id);
      this.onError(seg.id, e);
    }
  }

  /** Whether the contact matches each of `segs`: one query, a CASE column per segment. */
  private async matchInSql(plan: FollowPlan, segs: readonly TrackedSegment[], contactId: string): Promise<boolean[]> {
    if (!segs.length) return [];
    const key = segs.map((s) => s.id).join(" ");
    let c = this.compiled.get(key);
    if (!c) {
      const cols = matchColumns(segs, { projectId: plan.projectId, now: this.now, segments: plan.segments });
      c = { sql: matchOneSql(cols.sql), params: cols.params };
      this.compiled.set(key, c);
    }
    const row = await this.q.get<Record<string, number>>(c.sql, [...c.params, contactId]);
    return segs.map((_, k) => Number(row?.[`m${k}`]) === 1);
  }
}

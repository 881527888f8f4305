// The store of periodic_tasks (migration 026): who runs a periodic task's due time. Every instance's
// timer fires; the one whose conditional UPDATE moves due_at past this due time runs it, the others
// see zero rows changed and skip (the graphile-worker / pg-boss way). On SQLite (one instance per
// file) the same statements run and are always won.
import type { Kysely } from "kysely";
import { qOf } from "../db/raw";

export interface PeriodicStore {
  /**
   * Claims the due time of `name` at `now` for this instance and moves its next due time to `next`.
   * True: this instance runs it. False: another instance did already (or it is not due yet).
   */
  claim(name: string, now: number, next: number): Promise<boolean>;
}

/** A timer may fire this early on one instance (timer slack, small clock skew) and still count as due. */
export const EARLY_FIRE_MS = 2_000;

export function periodicStore(db: Kysely<any>, engine: "sqlite" | "postgres", instanceId: string): PeriodicStore {
  const q = qOf(db, engine);
  return {
    async claim(name, now, next) {
      await q.run("INSERT OR IGNORE INTO periodic_tasks (name, due_at) VALUES (?, ?)", [name, now]);
      const won = await q.run("UPDATE periodic_tasks SET due_at = ?, run_by = ?, run_at = ? WHERE name = ? AND due_at <= ?", [
        next,
        instanceId,
        now,
        name,
        // Early by at most half the period: the next due time is never taken for this one.
        now + Math.max(0, Math.min(EARLY_FIRE_MS, Math.floor((next - now) / 2))),
      ]);
      return won > 0;
    },
  };
}

import { atomic } from "../db/raw";
import { iso } from "../clock";
import type { AppContext } from "../context";
import { AppError, invalidField } from "./errors";

const KEY_RE = /^[\x20-\x7e]{1,255}$/;

/**
 * Runs `work` at most once per (project, Idempotency-Key) within the TTL.
 * The key row is inserted before the work starts; SQLite serialises the insert, so of two
 * simultaneous requests with one key exactly one wins and the other gets 409. A failed request
 * releases its key (nothing was performed), so the client may retry with the same key.
 * Rows still without a status after a crash are cleared at start-up (see clearUnfinishedKeys). On
 * PostgreSQL with several instances the primary key decides the same way: one INSERT wins, the other
 * request gets 409, whichever instance it reached. The row records the instance running the request.
 */
export async function withIdempotency<T>(
  ctx: AppContext,
  projectId: string,
  rawKey: string | null | undefined,
  request: { method: string; path: string },
  work: () => Promise<T>,
  successStatus = 200,
): Promise<T> {
  if (rawKey === null || rawKey === undefined) return work();
  if (!KEY_RE.test(rawKey)) {
    throw invalidField("Idempotency-Key", "Idempotency-Key must be 1 to 255 printable ASCII characters", "invalid_string", rawKey.slice(0, 255));
  }
  const key = rawKey;
  const now = ctx.clock.now();
  const ttlMs = ctx.config.idempotencyTtlHours * 3_600_000;
  const existing = await atomic(ctx.db, ctx.store.engine, async (q) => {
    await q.run("DELETE FROM idempotency_keys WHERE project_id = ? AND key = ? AND created_at <= ?", [projectId, key, now - ttlMs]);
    const inserted = await q.run(
      "INSERT INTO idempotency_keys (project_id, key, method, path, status_code, created_at, locked_by) VALUES (?, ?, ?, ?, NULL, ?, ?) ON CONFLICT DO NOTHING",
      [projectId, key, request.method, request.path, now, ctx.config.instanceId],
    );
    if (inserted > 0) return null;
    return (
      (await q.get<{ method: string; path: string; status_code: number | null; created_at: number }>(
        "SELECT method, path, status_code, created_at FROM idempotency_keys WHERE project_id = ? AND key = ?",
        [projectId, key],
      )) ?? null
    );
  });
  if (existing) {
    throw new AppError(409, "IDEMPOTENCY_KEY_REUSED", "This Idempotency-Key was already used; the request was not performed again", {
      details: {
        key,
        originalRequest: `${existing.method} ${existing.path}`,
        originalRequestAt: iso(existing.created_at),
        originalStatusCode: existing.status_code,
      },
      suggestion: "Use a new Idempotency-Key for a new request.",
    });
  }
  try {
    const result = await work();
    await ctx.db
      .updateTable("idempotency_keys")
      .set({ status_code: successStatus })
      .where("project_id", "=", projectId)
      .where("key", "=", key)
      .execute();
    return result;
  } catch (e) {
    await ctx.db.deleteFrom("idempotency_keys").where("project_id", "=", projectId).where("key", "=", key).execute();
    throw e;
  }
}

/**
 * At start-up: keys whose request never finished (the process died) are released. On SQLite (one
 * instance per file) every unfinished key is the previous run's. On PostgreSQL a peer may be running
 * one right now: only this instance's own unfinished keys (its previous run under the same
 * MAILSVC_INSTANCE_ID died) and other instances' keys older than the lease (MAILSVC_LEASE: a request
 * does not run that long, so their instance died) are released. Answers how many were released.
 */
export async function clearUnfinishedKeys(ctx: AppContext): Promise<number> {
  let q = ctx.db.deleteFrom("idempotency_keys").where("status_code", "is", null);
  if (ctx.store.engine === "postgres") {
    const me = ctx.config.instanceId;
    const stale = ctx.clock.now() - ctx.config.leaseMs;
    q = q.where((eb) => eb.or([eb("locked_by", "=", me), eb("created_at", "<", stale)]));
  }
  const r = await q.executeTakeFirst();
  return Number(r.numDeletedRows ?? 0);
}

export async function purgeExpiredKeys(ctx: AppContext): Promise<void> {
  const cutoff = ctx.clock.now() - ctx.config.idempotencyTtlHours * 3_600_000;
  await ctx.db.deleteFrom("idempotency_keys").where("created_at", "<=", cutoff).execute();
}

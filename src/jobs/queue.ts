import { PollTimer } from "./poll-timer";
import type { Q } from "../db/raw";
import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import type { Clock } from "../clock";
import type { DB } from "../db";
import type { Logger } from "../http/logger";
import type { Metrics } from "../observability/metrics";

export type JobState = "waiting" | "active" | "completed" | "failed";

export interface JobRunContext<P = any, C = any> {
  id: string;
  type: string;
  projectId: string | null;
  payload: P;
  /** What the handler saved last time it ran (null on the first run): a restarted job resumes from here. */
  checkpoint: C | null;
  attempt: number;
  /** Persists progress (0-100) and a resume point; also extends the lease. */
  save(progress: number, checkpoint?: C): Promise<void>;
  /** Sets the first checkpoint unless one exists (another run of this job got there first): false then. */
  startCheckpoint(checkpoint: C): Promise<boolean>;
  /**
   * save() inside the caller's raw transaction (`q` runs on it), for a
   * chunk that must commit with the checkpoint describing it. The raw sibling of save(), for the
   * contact import's hot path (scripts/bench/import.ts). Returns false, writing nothing, when the
   * stored checkpoint fails `expected` (another run of the job moved it): the caller rolls back.
   */
  saveWithin(q: Q, progress: number, checkpoint: C, expected: (stored: C | null) => boolean): Promise<boolean>;
}

export type JobHandler = (job: JobRunContext) => Promise<unknown>;

export interface EnqueueOptions {
  projectId?: string | null;
  runAt?: number;
  maxAttempts?: number;
  /** While a job with this key is waiting, enqueueing another is a no-op returning the existing id. */
  dedupeKey?: string;
  /** Enqueue inside the caller's transaction (persist-first). */
  trx?: Transaction<DB>;
}

export interface JobsOptions {
  concurrency?: number;
  pollMs?: number;
  /** MAILSVC_LEASE: how long a claim lasts without renewal before another instance may take the job over. */
  leaseMs?: number;
  /** MAILSVC_INSTANCE_ID: written as locked_by on the jobs this queue runs. */
  instanceId?: string;
  /** PostgreSQL: several instances may share the queue (start-up takes back only its own or expired claims). */
  engine?: "sqlite" | "postgres";
  metrics?: Metrics;
}

/**
 * The durable job loop. Jobs are rows with run_at; a claim is one UPDATE … RETURNING that moves
 * due rows to `active` with a lease. A throw is retried with exponential backoff until
 * max_attempts, then `failed`. On start, jobs left `active` by a dead process go back to `waiting`
 * and resume from their checkpoint: on SQLite every active job (one process per file), on PostgreSQL
 * only jobs whose lease ended or that this instance id holds (a live peer's jobs stay its own). A
 * running job's lease is renewed every third of MAILSVC_LEASE while its handler runs.
 */

/** A new waiting job row. */
function waitingRow(type: string, payload: unknown, opts: { projectId?: string | null; runAt?: number; maxAttempts?: number }, now: number, dedupeKey: string | null) {
  return {
    id: Bun.randomUUIDv7(),
    type,
    project_id: opts.projectId ?? null,
    state: "waiting" as const,
    payload: JSON.stringify(payload ?? {}),
    run_at: opts.runAt ?? now,
    max_attempts: opts.maxAttempts ?? 5,
    dedupe_key: dedupeKey,
    created_at: now,
    updated_at: now,
  };
}
export class JobQueue {
  private handlers = new Map<string, JobHandler>();
  private running = 0;
  private inflight = new Set<Promise<void>>();
  private readonly concurrency: number;
  private readonly loop: PollTimer;
  private readonly leaseMs: number;
  private readonly instanceId: string | null;
  private readonly shared: boolean;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly clock: Clock,
    private readonly log: Logger,
    opts: JobsOptions = {},
  ) {
    this.concurrency = opts.concurrency ?? 4;
    this.loop = new PollTimer(opts.pollMs ?? 250, () => this.tick(), (e) => this.log.error("job loop tick failed", { error: String(e) }));
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.instanceId = opts.instanceId ?? null;
    this.shared = opts.engine === "postgres";
    this.metrics = opts.metrics;
  }
  private readonly metrics?: Metrics;

  register(type: string, handler: JobHandler): void {
    this.handlers.set(type, handler);
  }

  async enqueue(type: string, payload: unknown, opts: EnqueueOptions = {}): Promise<string> {
    const now = this.clock.now();
    const db = opts.trx ?? this.db;
    const existing = () =>
      db.selectFrom("jobs").select("id").where("dedupe_key", "=", opts.dedupeKey!).where("state", "=", "waiting").executeTakeFirst();
    if (opts.dedupeKey) {
      const found = await existing();
      if (found) return found.id;
    }
    const row = waitingRow(type, payload, opts, now, opts.dedupeKey ?? null);
    const id = row.id;
    // A deduplicated job is one waiting row per key (the partial unique index jobs_dedupe): when another
    // instance inserted it meanwhile, its row is the answer (a periodic task runs once per due time).
    const inserted = await db
      .insertInto("jobs")
      .values(row)
      // The conflict target names the partial index by its predicate, literally (SQLite matches it as written).
      .onConflict((oc) => oc.column("dedupe_key").where("dedupe_key", "is not", null).where("state", "=", sql.lit("waiting")).doNothing())
      .executeTakeFirst();
    if (opts.dedupeKey && Number(inserted.numInsertedOrUpdatedRows ?? 1) === 0) {
      const found = await existing();
      if (found) return found.id;
    }
    if (!opts.trx) this.wake();
    return id;
  }

  /** Enqueues many jobs of one type with multi-row inserts (no dedupe). Returns their ids in order. */
  async enqueueMany(type: string, payloads: unknown[], opts: Omit<EnqueueOptions, "dedupeKey"> = {}): Promise<string[]> {
    const db = opts.trx ?? this.db;
    const rows = this.newRows(type, payloads, opts);
    for (let i = 0; i < rows.length; i += 200) await db.insertInto("jobs").values(rows.slice(i, i + 200)).execute();
    if (!opts.trx && rows.length) this.wake();
    return rows.map((r) => r.id);
  }

  /** The waiting rows of enqueueMany (no dedupe key). */
  private newRows(type: string, payloads: unknown[], opts: Omit<EnqueueOptions, "dedupeKey" | "trx">) {
    const now = this.clock.now();
    return payloads.map((payload) => waitingRow(type, payload, opts, now, null));
  }

  async get(id: string) {
    return this.db.selectFrom("jobs").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** Cancels a waiting job; returns false when it is not waiting any more. */
  async cancel(id: string): Promise<boolean> {
    const r = await this.db
      .updateTable("jobs")
      .set({ state: "failed", error: "cancelled", finished_at: this.clock.now(), updated_at: this.clock.now() })
      .where("id", "=", id)
      .where("state", "=", "waiting")
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async start(): Promise<void> {
    const now = this.clock.now();
    let reset = this.db.updateTable("jobs").set({ state: "waiting", lease_until: null, locked_by: null, updated_at: now }).where("state", "=", "active");
    if (this.shared) {
      const me = this.instanceId;
      reset = reset.where((eb) =>
        eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now), ...(me ? [eb("locked_by", "=", me)] : [])]),
      );
    }
    await reset.execute();
    this.loop.start();
  }

  /** Stops claiming and waits for running handlers to finish. */
  async stop(): Promise<void> {
    this.loop.stop();
    await Promise.allSettled([...this.inflight]);
  }

  wake(): void {
    this.loop.schedule(0);
  }


  /** Claims and starts every due job up to the concurrency cap. Returns how many were started. */
  async tick(): Promise<number> {
    const free = this.concurrency - this.running;
    if (free <= 0) return 0;
    const now = this.clock.now();
    const types = [...this.handlers.keys()];
    if (!types.length) return 0;
    // Due jobs in run_at order straight off the (state, run_at) index (an OR with the expired leases
    // made SQLite sort every due row on each claim: quadratic when thousands fall due together).
    const [due, expired] = await Promise.all([
      this.db.selectFrom("jobs").select("id").where("state", "=", "waiting").where("run_at", "<=", now).where("type", "in", types).orderBy("run_at").limit(free).execute(),
      this.db.selectFrom("jobs").select("id").where("state", "=", "active").where("lease_until", "<", now).where("type", "in", types).limit(free).execute(),
    ]);
    const ids = [...expired, ...due].slice(0, free).map((r) => r.id);
    if (!ids.length) return 0;
    const claimed = await this.db
      .updateTable("jobs")
      .set({ state: "active", lease_until: now + this.leaseMs, locked_by: this.instanceId, updated_at: now, attempts: (eb) => eb("attempts", "+", 1) })
      .where("id", "in", ids)
      .where((eb) =>
        eb.or([
          eb.and([eb("state", "=", "waiting"), eb("run_at", "<=", now)]),
          eb.and([eb("state", "=", "active"), eb("lease_until", "<", now)]),
        ]),
      )
      .returningAll()
      .execute();
    for (const row of claimed) {
      if (row.state === "active" && row.attempts === 1) this.metrics?.jobLagSeconds.observe({ type: row.type }, Math.max(0, now - row.run_at) / 1000);
      const p = this.run(row).finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
    return claimed.length;
  }

  /** Runs due jobs until none is left (tests: after moving the clock). */
  async drain(maxRounds = 100): Promise<void> {
    for (let i = 0; i < maxRounds; i++) {
      const started = await this.tick();
      if (this.inflight.size) await Promise.allSettled([...this.inflight]);
      else if (!started) return;
    }
  }

  private async run(row: Selectable<DB["jobs"]>): Promise<void> {
    const handler = this.handlers.get(row.type)!;
    this.running++;
    const ctx: JobRunContext = {
      id: row.id,
      type: row.type,
      projectId: row.project_id,
      payload: JSON.parse(row.payload),
      checkpoint: row.checkpoint ? JSON.parse(row.checkpoint) : null,
      attempt: row.attempts,
      save: async (progress, checkpoint) => {
        const now = this.clock.now();
        await this.db
          .updateTable("jobs")
          .set({
            progress: Math.max(0, Math.min(100, Math.round(progress))),
            ...(checkpoint !== undefined ? { checkpoint: JSON.stringify(checkpoint) } : {}),
            lease_until: now + this.leaseMs,
            updated_at: now,
          })
          .where("id", "=", row.id)
          .execute();
      },
      startCheckpoint: async (checkpoint) => {
        const r = await this.db
          .updateTable("jobs")
          .set({ checkpoint: JSON.stringify(checkpoint) })
          .where("id", "=", row.id)
          .where("checkpoint", "is", null)
          .executeTakeFirst();
        return Number(r.numUpdatedRows) > 0;
      },
      saveWithin: async (q, progress, checkpoint, expected) => {
        const stored = await q.get<{ checkpoint: string | null }>(q.engine === "postgres" ? "SELECT checkpoint FROM jobs WHERE id = ? FOR UPDATE" : "SELECT checkpoint FROM jobs WHERE id = ?", [row.id]);
        if (!stored || !expected(stored.checkpoint ? JSON.parse(stored.checkpoint) : null)) return false;
        const now = this.clock.now();
        await q.run("UPDATE jobs SET checkpoint = ?, progress = ?, lease_until = ?, updated_at = ? WHERE id = ?", [
          JSON.stringify(checkpoint),
          Math.max(0, Math.min(100, Math.round(progress))),
          now + this.leaseMs,
          now,
          row.id,
        ]);
        return true;
      },
    };
    // Long work keeps its claim: the lease is renewed while the handler runs (only while still ours).
    // Needed on SQLite too: the claim below takes any active job whose lease ended, in this process as well.
    const renew = setInterval(() => {
      const now = this.clock.now();
      this.db
        .updateTable("jobs")
        .set({ lease_until: now + this.leaseMs })
        .where("id", "=", row.id)
        .where("state", "=", "active")
        .where("attempts", "=", row.attempts)
        .execute()
        .catch((e) => this.log.warn("job lease renewal failed", { job: row.id, error: String(e) }));
    }, Math.max(1_000, Math.floor(this.leaseMs / 3)));
    try {
      const result = await handler(ctx);
      const now = this.clock.now();
      await this.db
        .updateTable("jobs")
        .set({
          state: "completed",
          progress: 100,
          result: result === undefined ? null : JSON.stringify(result),
          lease_until: null,
          locked_by: null,
          finished_at: now,
          updated_at: now,
        })
        .where("id", "=", row.id)
        .execute();
    } catch (e) {
      const now = this.clock.now();
      const final = row.attempts >= row.max_attempts;
      const backoff = Math.min(2 ** (row.attempts - 1) * 1000, 3_600_000);
      this.log.warn("job failed", { job: row.id, type: row.type, attempt: row.attempts, final, error: String(e) });
      await this.db
        .updateTable("jobs")
        .set({
          state: final ? "failed" : "waiting",
          error: String((e as Error)?.message ?? e),
          run_at: final ? row.run_at : now + backoff,
          lease_until: null,
          locked_by: null,
          finished_at: final ? now : null,
          updated_at: now,
        })
        .where("id", "=", row.id)
        .execute()
        .catch(() => {});
    } finally {
      clearInterval(renew);
      this.running--;
      this.loop.schedule(0);
    }
  }
}

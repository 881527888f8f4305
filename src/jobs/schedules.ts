import { Cron } from "croner";
import type { Logger } from "../http/logger";
import type { PeriodicStore } from "./periodic-store";
import type { JobQueue } from "./queue";

/**
 * Periodic work. `every` schedules are durable and clock-driven: a job of type `schedule:<name>`
 * that re-enqueues itself `intervalMs` after each run (so tests move the clock instead of sleeping,
 * and a restart does not lose or double the schedule; the `:next` dedupe key keeps one queued run across
 * instances). `cron` is wall-clock housekeeping via croner: every instance's timer fires, and with a
 * PeriodicStore only the instance that wins the task's due time (periodic_tasks) runs it.
 */
export class Schedules {
  private crons: Cron[] = [];
  private intervals = new Map<string, number>();
  constructor(
    private readonly jobs: JobQueue,
    private readonly log: Logger,
    private readonly now: () => number,
    private readonly periodic?: PeriodicStore,
  ) {}

  every(name: string, intervalMs: number, fn: () => Promise<void>): void {
    const type = `schedule:${name}`;
    this.intervals.set(name, intervalMs);
    this.jobs.register(type, async (job) => {
      try {
        // One line per run (the instance that ran it is the process writing it): counted across instances.
        this.log.info("periodic task ran", { name, job: job.id });
        await fn();
      } finally {
        await this.jobs.enqueue(type, {}, { runAt: this.now() + intervalMs, dedupeKey: `${type}:next`, maxAttempts: 1 });
      }
    });
  }

  /** Makes sure each `every` schedule has its next run queued (called once at start). */
  async arm(): Promise<void> {
    for (const [name, ms] of this.intervals) {
      const type = `schedule:${name}`;
      await this.jobs.enqueue(type, {}, { runAt: this.now() + ms, dedupeKey: `${type}:next`, maxAttempts: 1 });
    }
  }

  /** Croner names are process-global, so `name` stays ours (logs) and is not given to croner: tests run several instances. */
  cron(name: string, pattern: string, fn: () => Promise<void> | void): void {
    const periodic = this.periodic;
    const run = periodic
      ? async (self: Cron) => {
          // Wall-clock, as croner is: the due time is the same instant for every instance.
          const now = Date.now();
          const next = self.nextRun()?.getTime() ?? now + 86_400_000;
          if (!(await periodic.claim(name, now, next))) return;
          this.log.info("periodic task ran", { name, dueAt: new Date(now).toISOString() });
          await fn();
        }
      : fn;
    this.crons.push(new Cron(pattern, { protect: true, catch: (e) => this.log.error("schedule failed", { name, error: String(e) }) }, run));
  }

  stop(): void {
    for (const c of this.crons) c.stop();
    this.crons = [];
  }
}

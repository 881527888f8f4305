import type { Clock } from "../clock";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** `limit` as a header value (made once). */
  limitHeader: string;
  remaining: number;
  resetSeconds: number;
}

/**
 * Fixed window per key (one minute per project for the API), in memory (one process owns the service).
 * The API's counter is per project, so all keys and sessions of a project share it; the account
 * endpoints use their own instances keyed by address (users/service.ts).
 */
export class RateLimiter {
  private windows = new Map<string, { start: number; count: number }>();
  private readonly limitHeader: string;
  constructor(private readonly limit: number, private readonly clock: Clock, private readonly windowMs = 60_000) {
    this.limitHeader = String(limit);
  }

  hit(projectId: string): RateDecision {
    const now = this.clock.now();
    let w = this.windows.get(projectId);
    if (!w || now - w.start >= this.windowMs) {
      w = { start: now, count: 0 };
      this.windows.set(projectId, w);
      if (this.windows.size > 10_000) this.sweep(now);
    }
    const resetSeconds = Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
    if (w.count >= this.limit) return { allowed: false, limit: this.limit, limitHeader: this.limitHeader, remaining: 0, resetSeconds };
    w.count++;
    return { allowed: true, limit: this.limit, limitHeader: this.limitHeader, remaining: this.limit - w.count, resetSeconds };
  }

  /** Seconds until `key`'s window resets when it is used up, else 0 (looks without counting). */
  blockedFor(key: string): number {
    const now = this.clock.now();
    const w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  private sweep(now: number) {
    for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
  }
}

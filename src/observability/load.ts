/**
 * Load signals: whether a counter that only grows (requests answered, delivery attempts) grew
 * faster than a threshold lately. Background work reads them to yield to foreground work: the
 * workflow engine to the API, webhook dispatch to bulk mail delivery. Cheap enough to ask on every
 * turn: the rate is re-measured at most every WINDOW_MS.
 */
export const WINDOW_MS = 250;

export class RateSignal {
  private total: number | null = null;
  private at = 0;
  private busyUntil = -Infinity;

  constructor(
    private readonly read: () => number,
    /** Events per second above which the signal says busy. */
    readonly perSecond: number,
    /** How long it stays busy after the last busy window (bursty counters: a lull of one window is not the end). */
    private readonly holdMs = 0,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** Whether the counter grew faster than `perSecond` over the last completed window (or within holdMs before it). */
  busy(): boolean {
    const now = this.clock();
    const total = this.read();
    if (this.total === null) {
      this.total = total;
      this.at = now;
    } else if (now - this.at >= WINDOW_MS) {
      // Busy until the next measurement is due, and holdMs beyond it.
      if (((total - this.total) * 1000) / (now - this.at) > this.perSecond) this.busyUntil = now + WINDOW_MS + this.holdMs;
      this.total = total;
      this.at = now;
    }
    return now < this.busyUntil;
  }
}

/**
 * The timer of a polling loop (the job loop, the webhook dispatcher): `tick` runs `ms` after
 * schedule(ms), then every `pollMs` until stop(); schedule(0) (a wake-up) moves the next run to now.
 * A tick's failure is handed to `onError` and the loop goes on.
 */
export class PollTimer {
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** True until start() and after stop(): schedule() does nothing then. */
  stopped = true;

  constructor(
    private readonly pollMs: number,
    private readonly tick: () => Promise<unknown>,
    private readonly onError: (e: unknown) => void = () => {},
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Runs the tick in `ms` (replacing the next run already planned), unless stopped. */
  schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.tick()
        .catch(this.onError)
        .finally(() => {
          if (!this.stopped && !this.timer) this.schedule(this.pollMs);
        });
    }, ms);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

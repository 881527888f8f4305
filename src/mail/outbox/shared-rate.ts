// MAILSVC_SEND_RATE across instances (PostgreSQL): the rate is charged when a message is handed to the
// dispatcher, not when it is claimed. Charged at the claim, emails claimed in one second and sent in a
// later one (slow first connections, a busy machine) reached the receiving end together with the next
// seconds' and passed the rate there. Each instance takes grants of the current second's budget of a
// project (outbox-store.ts takeSendBudget: a conditional UPDATE of its row in send_rate_windows under the
// row's lock, so all instances together never take more than the rate) and hands them out locally; a
// project with nothing left this second waits for the next. Seconds are wall-clock seconds (a rate is
// what the receiving servers see), whatever clock the rest of the outbox runs on.
export type TakeBudget = (project: string, windowStart: number, want: number) => Promise<number>;

interface Grant {
  window: number;
  left: number;
  /** The second's budget is spent (a grant came back short). */
  spent: boolean;
  fetching: Promise<void> | null;
}

export class SharedSendRate {
  private readonly grants = new Map<string, Grant>();
  private readonly budget: number;
  /** Taken per round trip: a quarter of a second's budget, so one instance never holds the whole second. */
  private readonly chunk: number;

  constructor(
    rate: number,
    private readonly take: TakeBudget,
    private readonly onError: (e: unknown) => void = () => {},
  ) {
    this.budget = Math.max(1, Math.floor(rate));
    this.chunk = Math.max(1, Math.ceil(this.budget / 4));
  }

  /** Waits for one message's share of `project`'s rate; false when `stopped()` turned true meanwhile. */
  async acquire(project: string, stopped: () => boolean): Promise<boolean> {
    for (;;) {
      if (stopped()) return false;
      const now = Date.now();
      const window = now - (now % 1000);
      let g = this.grants.get(project);
      if (!g || g.window !== window) {
        g = { window, left: 0, spent: false, fetching: null };
        this.grants.set(project, g);
        if (this.grants.size > 10_000) for (const [k, v] of this.grants) if (v.window < window) this.grants.delete(k);
      }
      if (g.left > 0) {
        g.left--;
        return true;
      }
      if (g.spent) {
        await Bun.sleep(window + 1000 - now);
        continue;
      }
      const grant = g;
      grant.fetching ??= this.take(project, window, this.chunk)
        .then((n) => {
          grant.left += n;
          if (n < this.chunk) grant.spent = true;
        })
        .catch((e) => {
          this.onError(e);
          grant.spent = true; // try again next second
        })
        .finally(() => {
          grant.fetching = null;
        });
      await grant.fetching;
    }
  }
}

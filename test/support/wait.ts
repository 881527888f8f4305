// The suite's one poller: reads a value until it is what the test waits for (a delivery, a job, a
// webhook, a status), or fails naming what it waited for and the last value it read.

export interface WaitOptions<T> {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between two reads (default 20 ms). */
  intervalMs?: number;
  /** What is awaited, for the failure message: "email 0190… DELIVERED". */
  what?: string;
  /** Done when this holds for the value read; without it, when the value is truthy. */
  until?: (value: T) => boolean;
}

type Truthy<T> = Exclude<T, null | undefined | false | 0 | "">;

/**
 * Calls `read` until its value is truthy (or satisfies `until`) and returns that value. `read` may move
 * work along (drain jobs, advance the clock) before reading. An error thrown by `read` ends the wait.
 */
export async function waitFor<T>(read: () => T | Promise<T>, opts: WaitOptions<T> & { until: (value: T) => boolean }): Promise<T>;
export async function waitFor<T>(read: () => T | Promise<T>, opts?: WaitOptions<T>): Promise<Truthy<T>>;
export async function waitFor<T>(read: () => T | Promise<T>, opts: WaitOptions<T> = {}): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 20, what = "a condition", until = (v: T) => !!v } = opts;
  const t0 = Date.now();
  for (;;) {
    const value = await read();
    if (until(value)) return value;
    if (Date.now() - t0 >= timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${show(value)}`);
    await Bun.sleep(intervalMs);
  }
}

/** A value as a failure message shows it: JSON, arrays with their length, cut at 1,000 characters. */
function show(value: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? String(v) : v)) ?? String(value);
  } catch {
    s = String(value);
  }
  if (s.length > 1000) s = s.slice(0, 1000) + "…";
  return Array.isArray(value) ? `(${value.length} items) ${s}` : s;
}

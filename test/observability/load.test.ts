import { describe, expect, test } from "bun:test";
import { RateSignal, WINDOW_MS } from "../../src/observability/load";
import { dueCutoff } from "../../src/webhooks/dispatcher";

describe("RateSignal", () => {
  function signal(perSecond: number, holdMs = 0) {
    const s = { t: 0, n: 0 };
    return { s, sig: new RateSignal(() => s.n, perSecond, holdMs, () => s.t) };
  }

  test("busy after a window above the rate, until a window below it", () => {
    const { s, sig } = signal(100);
    expect(sig.busy()).toBe(false); // first reading: nothing measured yet
    s.t += WINDOW_MS;
    s.n += 30; // 120/s
    expect(sig.busy()).toBe(true);
    s.t += WINDOW_MS / 2;
    expect(sig.busy()).toBe(true); // within the window: the last measure stands
    s.t += WINDOW_MS / 2;
    s.n += 20; // 80/s over the window
    expect(sig.busy()).toBe(false);
    s.t += WINDOW_MS;
    s.n += 25; // exactly 100/s is not above it
    expect(sig.busy()).toBe(false);
  });

  test("holdMs keeps it busy through short lulls (bursty counters)", () => {
    const { s, sig } = signal(100, 1000);
    sig.busy();
    s.t += WINDOW_MS;
    s.n += 100;
    expect(sig.busy()).toBe(true);
    for (let i = 0; i < 4; i++) {
      s.t += WINDOW_MS; // quiet windows
      expect(sig.busy()).toBe(true);
    }
    s.t += WINDOW_MS;
    expect(sig.busy()).toBe(false);
    s.t += WINDOW_MS;
    s.n += 100; // a burst again
    expect(sig.busy()).toBe(true);
  });

  test("a long gap between readings is one window averaged over it", () => {
    const { s, sig } = signal(100);
    sig.busy();
    s.t += 10_000;
    s.n += 500; // 50/s over 10 s
    expect(sig.busy()).toBe(false);
  });
});

describe("dueCutoff (webhook deliveries and bulk mail)", () => {
  test.each([
    [1_000_000, false, 30_000, 1_000_000],
    [1_000_000, true, 30_000, 970_000],
    [1_000_000, true, 0, 1_000_000],
    [1_000_000, false, 0, 1_000_000],
  ])("now %p, mail busy %p, max defer %p -> %p", (now, busy, max, want) => {
    expect(dueCutoff(now, busy, max)).toBe(want);
  });
});

// The suite's poller and timestamp assertion on their own.
import { describe, expect, test } from "bun:test";
import { expectTimeBetween } from "./time";
import { waitFor } from "./wait";

describe("waitFor", () => {
  test("returns the first truthy value read, after as many reads as it took", async () => {
    let reads = 0;
    const v = await waitFor(() => (++reads >= 3 ? { n: reads } : null), { intervalMs: 1 });
    expect(v).toEqual({ n: 3 });
    expect(reads).toBe(3);
  });

  test("with `until`, returns the value that satisfies it (falsy values included)", async () => {
    let n = 3;
    expect(await waitFor(() => --n, { until: (x) => x === 0, intervalMs: 1 })).toBe(0);
  });

  test("reads once when the value is already there (no pause)", async () => {
    const t0 = performance.now();
    expect(await waitFor(async () => "ready", { intervalMs: 1_000 })).toBe("ready");
    expect(performance.now() - t0).toBeLessThan(500);
  });

  test("times out naming what it waited for and the last value read", async () => {
    let n = 0;
    const err = await waitFor(() => ({ status: "PENDING", n: ++n }), { until: (v) => v.status === "SENT", timeoutMs: 60, intervalMs: 10, what: "email 42 SENT" }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toStartWith("timed out after 60 ms waiting for email 42 SENT; last value: ");
    expect((err as Error).message).toEndWith(`{"status":"PENDING","n":${n}}`);
    expect(n).toBeGreaterThanOrEqual(2);
  });

  test("an array's length leads the last value; long values are cut at 1,000 characters", async () => {
    const err = (await waitFor(() => ["x".repeat(2_000)], { until: () => false, timeoutMs: 0 }).catch((e: Error) => e)) as Error;
    expect(err.message).toContain("last value: (1 items) [\"xxx");
    expect(err.message).toEndWith("x…");
    expect(err.message.length).toBeLessThan(1_200);
  });

  test("an error thrown while reading ends the wait with that error", async () => {
    let reads = 0;
    const failing = () => {
      reads++;
      throw new Error("GET /emails/1: 404");
    };
    await expect(waitFor(failing, { timeoutMs: 1_000 })).rejects.toThrow("GET /emails/1: 404");
    expect(reads).toBe(1);
  });
});

describe("expectTimeBetween", () => {
  const from = Date.parse("2024-05-13T09:12:01.000Z");
  const to = from + 1_000;

  test("accepts an ISO date-time or epoch ms inside the range (bounds included) and returns epoch ms", () => {
    expect(expectTimeBetween("2024-05-13T09:12:01.500Z", from, to)).toBe(from + 500);
    expect(expectTimeBetween("2024-05-13T11:12:01.000+02:00", from, to)).toBe(from);
    expect(expectTimeBetween(to, from, to)).toBe(to);
  });

  test("refuses a time outside the range, a non-ISO string, and a missing value", () => {
    expect(() => expectTimeBetween("2024-05-13T09:12:02.001Z", from, to)).toThrow("expected a time between 2024-05-13T09:12:01.000Z and 2024-05-13T09:12:02.000Z");
    expect(() => expectTimeBetween(from - 1, from, to)).toThrow("expected a time between");
    expect(() => expectTimeBetween("Mon, 13 May 2024 09:12:01 GMT", from, to)).toThrow();
    expect(() => expectTimeBetween(undefined, from, to)).toThrow();
    expect(() => expectTimeBetween(null, from, to)).toThrow();
  });
});

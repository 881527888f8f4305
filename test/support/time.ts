// Timestamps asserted by value: an API date-time (or a stored epoch-ms column) must fall between the
// server clock's reading before the action and after it, not merely be present.
import { expect } from "bun:test";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Asserts that `value` (an ISO 8601 date-time string, or epoch milliseconds) lies in [from, to]
 * (epoch ms, inclusive) and returns it as epoch milliseconds.
 */
export function expectTimeBetween(value: unknown, from: number, to: number): number {
  let ms: number;
  if (typeof value === "number") ms = value;
  else {
    expect(typeof value).toBe("string");
    expect(value as string).toMatch(ISO);
    ms = Date.parse(value as string);
  }
  expect(Number.isFinite(ms)).toBe(true);
  if (ms < from || ms > to) {
    throw new Error(`expected a time between ${new Date(from).toISOString()} and ${new Date(to).toISOString()}, got ${JSON.stringify(value)}`);
  }
  return ms;
}

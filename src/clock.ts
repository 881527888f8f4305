/** Injectable time source: the service reads time only through a Clock so tests can move it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that starts at real time and can be moved forward by tests. */
export class ManualClock implements Clock {
  private offset = 0;
  constructor(private frozenAt?: number) {}
  now(): number {
    return (this.frozenAt ?? Date.now()) + this.offset;
  }
  advance(ms: number): void {
    this.offset += ms;
  }
  set(epochMs: number): void {
    this.frozenAt = epochMs;
    this.offset = 0;
  }
}

export const iso = (ms: number | null | undefined): string | null =>
  ms === null || ms === undefined ? null : new Date(ms).toISOString();

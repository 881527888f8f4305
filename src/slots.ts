/**
 * At most `max` tasks at a time; the others wait their turn in order. `after` runs as each task
 * ends, before the next one starts (body.ts gives memory back there).
 */
export class Slots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(
    private readonly max: number,
    private readonly after?: () => void,
  ) {}

  async run<T>(fn: () => Promise<T>): Promise<T> {
    while (this.running >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await fn();
    } finally {
      this.after?.();
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

// Group commit: items that arrive within a few milliseconds of each other are written in one
// transaction. Each caller waits for the commit of its own item; the first item of a group waits
// at most `windowMs` for others, or not at all when `othersComing()` says none can come (e.g. every
// SMTP connection is waiting for this commit). Used by the outbox (delivery outcomes) and the webhook
// dispatcher (attempt outcomes).

interface Waiting<T> {
  item: T;
  resolve: () => void;
  reject: (e: unknown) => void;
}

export class GroupCommit<T> {
  private waiting: Waiting<T>[] = [];
  private writing: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly windowMs: number,
    private readonly othersComing: () => boolean,
    private readonly onError: (count: number, e: unknown) => void,
  ) {}

  /** Resolves once `item` is committed; rejects when its group's write failed. */
  add(item: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.timer && !this.othersComing()) {
        clearTimeout(this.timer);
        this.timer = null;
        void this.flush();
      } else if (!this.timer) {
        this.timer = setTimeout(
          () => {
            this.timer = null;
            void this.flush();
          },
          this.othersComing() ? this.windowMs : 0,
        );
      }
    });
  }

  /** Writes everything waiting now (and what arrives meanwhile); settles when all of it is written. */
  flush(): Promise<void> {
    if (this.writing) return this.writing;
    this.writing = (async () => {
      while (this.waiting.length) {
        const group = this.waiting.splice(0);
        try {
          await this.write(group.map((w) => w.item));
          for (const w of group) w.resolve();
        } catch (e) {
          this.onError(group.length, e);
          for (const w of group) w.reject(e);
        }
      }
    })().finally(() => {
      this.writing = null;
    });
    return this.writing;
  }
}

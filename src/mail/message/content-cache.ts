// Email contents by id, least recently used first out, bounded by size (a content with attachments
// can be megabytes). The outbox keeps a small one (it only plans with a content and sends it to the
// build worker once); the build worker keeps a larger one.
import type { ContentRow } from "../outbox/outbox-store";

/** The bytes a content holds, roughly (its strings' lengths). */
export function contentSize(row: ContentRow): number {
  return row.html.length + row.subject.length + (row.text?.length ?? 0) + (row.attachments?.length ?? 0) + (row.headers?.length ?? 0);
}

export class ContentCache {
  private readonly map = new Map<string, { row: ContentRow; size: number }>();
  private size = 0;
  constructor(
    private readonly maxBytes: number,
    private readonly sizeOf: (row: ContentRow) => number = contentSize,
  ) {}

  get(id: string): ContentRow | undefined {
    const e = this.map.get(id);
    if (!e) return undefined;
    this.map.delete(id);
    this.map.set(id, e);
    return e.row;
  }

  /** Adds or replaces a content; the least recently used go while over the bound (the newest always stays). */
  set(row: ContentRow): void {
    const old = this.map.get(row.id);
    if (old) {
      this.size -= old.size;
      this.map.delete(row.id);
    }
    const size = this.sizeOf(row);
    this.map.set(row.id, { row, size });
    this.size += size;
    for (const [id, e] of this.map) {
      if (this.size <= this.maxBytes || this.map.size <= 1) break;
      this.map.delete(id);
      this.size -= e.size;
    }
  }
}

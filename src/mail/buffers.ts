// Recycled message buffers. Every message is built into one buffer (headers written in front of
// the body, see compose.ts) that lives until its SMTP transaction ends. At a thousand 30 KB
// messages a second, fresh buffers are 30 MB/s of garbage the GC is slow to notice (RSS grows);
// the outbox hands each buffer back here once the outcome is recorded.
const CLASS = 16 * 1024;
const MAX_POOLED_SIZE = 256 * 1024;
const MAX_POOLED_BYTES = 8 * 1024 * 1024;

const free = new Map<number, ArrayBuffer[]>();
let pooledBytes = 0;

/** A buffer of exactly `size` bytes (uninitialised), from the pool when one fits. */
export function acquireBuffer(size: number): Buffer {
  const cls = Math.max(CLASS, Math.ceil(size / CLASS) * CLASS);
  if (cls > MAX_POOLED_SIZE) return Buffer.allocUnsafe(size);
  const ab = free.get(cls)?.pop();
  if (ab) {
    pooledBytes -= cls;
    return Buffer.from(ab, 0, size);
  }
  return Buffer.from(new ArrayBuffer(cls), 0, size);
}

/** Gives a buffer from acquireBuffer back. Call once, when nothing reads it any more. */
export function releaseBuffer(buf: Buffer): void {
  const ab = buf.buffer;
  if (!(ab instanceof ArrayBuffer)) return;
  const cls = ab.byteLength;
  if (cls % CLASS !== 0 || cls > MAX_POOLED_SIZE || pooledBytes + cls > MAX_POOLED_BYTES) return;
  let list = free.get(cls);
  if (!list) free.set(cls, (list = []));
  if (list.includes(ab)) return; // released twice: keep one entry
  list.push(ab);
  pooledBytes += cls;
}

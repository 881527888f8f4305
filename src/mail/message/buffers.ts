// Recycled message buffers. Every message is built into one buffer (headers written in front of
// the body, see compose.ts) that lives until its SMTP transaction ends. At a thousand 30 KB
// messages a second, fresh buffers are 30 MB/s of garbage the GC is slow to notice (RSS grows);
// the outbox hands each buffer back here once the outcome is recorded.
const CLASS = 16 * 1024;
const MAX_POOLED_SIZE = 256 * 1024;
const MAX_POOLED_BYTES = 8 * 1024 * 1024;

const free = new Map<number, ArrayBuffer[]>();
let pooledBytes = 0;
/** ArrayBuffers this module handed out: only these may be transferred to another thread (see exclusive). */
const ours = new WeakSet<ArrayBuffer>();

/** A buffer of exactly `size` bytes (uninitialised), from the pool when one fits. */
export function acquireBuffer(size: number): Buffer {
  const cls = Math.max(CLASS, Math.ceil(size / CLASS) * CLASS);
  if (cls > MAX_POOLED_SIZE) return fresh(size);
  const ab = free.get(cls)?.pop();
  if (ab) {
    pooledBytes -= cls;
    return Buffer.from(ab, 0, size);
  }
  return fresh(size, cls);
}

function fresh(size: number, capacity = size): Buffer {
  const ab = new ArrayBuffer(capacity);
  ours.add(ab);
  return Buffer.from(ab, 0, size);
}

/**
 * `buf` in an ArrayBuffer of its own (one from acquireBuffer), copied there when it is not: small
 * Buffers may share Node's allocation pool, which must never be transferred to another thread.
 */
export function exclusive(buf: Buffer): Buffer {
  if (buf.buffer instanceof ArrayBuffer && ours.has(buf.buffer)) return buf;
  const out = acquireBuffer(buf.length);
  buf.copy(out);
  return out;
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
  ours.add(ab); // (an ArrayBuffer transferred back from another thread is a new object)
  list.push(ab);
  pooledBytes += cls;
}

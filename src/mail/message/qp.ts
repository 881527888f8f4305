// Quoted-printable (RFC 2045) for message bodies, written straight into the message buffer.
// Line breaks of any style become CRLF; a dot that would start a line is encoded. The output never holds a tab, two spaces in a row or a
// space before a line break, so its DKIM relaxed body canonicalization is the body itself and the
// signer can hash the bytes as they are (see dkim.ts).
import { acquireBuffer } from "./buffers";

const HEX = Buffer.from("0123456789ABCDEF", "latin1");
const NON_ASCII = /[^\x00-\x7f]/;
const MAX_LINE = 75; // 76 with the soft-break "="

// 0: literal, 1: =XX, 2: space, 3: CR or LF
const CLASS = new Uint8Array(256).fill(1);
for (let b = 33; b <= 126; b++) CLASS[b] = 0;
CLASS[61] = 1; // "="
CLASS[32] = 2;
CLASS[13] = 3;
CLASS[10] = 3;

/** Largest output of `len` input bytes (every byte as =XX, a soft break every 25 of them). */
export const qpBound = (len: number) => len * 3 + Math.ceil(len / 24) * 3 + 8;

/** The column where the last qpEncodeInto left off. */
let endCol = 0;

/**
 * Encodes `src[0..len)` into `out` at `o`, the output line being at column `col`; returns the new end
 * offset (and leaves the column it ends at in `endCol`). `out` must have qpBound(len) room.
 */
export function qpEncodeInto(src: Uint8Array, len: number, out: Buffer, o: number, col = 0): number {
  let prevSpace = false;
  for (let i = 0; i < len; i++) {
    const b = src[i]!;
    const c = CLASS[b]!;
    if (c === 0) {
      if (col === MAX_LINE) {
        out[o] = 61;
        out[o + 1] = 13;
        out[o + 2] = 10;
        o += 3;
        col = 0;
      }
      if (b === 46 && col === 0) {
        // A dot starting a line is written =2E: the body then needs no SMTP dot-stuffing (smtp-data.ts).
        out[o] = 61;
        out[o + 1] = 50;
        out[o + 2] = 69;
        o += 3;
        col = 3;
        prevSpace = false;
        continue;
      }
      out[o++] = b;
      col++;
      prevSpace = false;
      continue;
    }
    if (c === 3) {
      if (b === 13 && i + 1 < len && src[i + 1] === 10) i++;
      out[o] = 13;
      out[o + 1] = 10;
      o += 2;
      col = 0;
      prevSpace = false;
      continue;
    }
    if (c === 2 && !prevSpace && i + 1 < len && CLASS[src[i + 1]!] !== 3) {
      if (col === MAX_LINE) {
        out[o] = 61;
        out[o + 1] = 13;
        out[o + 2] = 10;
        o += 3;
        col = 0;
      }
      out[o++] = 32;
      col++;
      prevSpace = true;
      continue;
    }
    if (col + 3 > MAX_LINE) {
      out[o] = 61;
      out[o + 1] = 13;
      out[o + 2] = 10;
      o += 3;
      col = 0;
    }
    out[o] = 61;
    out[o + 1] = HEX[b >> 4]!;
    out[o + 2] = HEX[b & 15]!;
    o += 3;
    col += 3;
    prevSpace = false;
  }
  endCol = col;
  return o;
}

/**
 * Quoted-printable text prepared once and copied as it is into many messages (a campaign's literal
 * HTML between its per-recipient parts, see skeleton.ts): encoded from column 0, so whatever comes
 * before it must end its line (BodyWriter.qpPiece writes a soft break when it did not). The chunks
 * of one skeleton share one buffer (QpChunks): a few objects per content, not one per chunk.
 */
export interface QpChunk {
  start: number;
  end: number;
  /** The column its last line ends at. */
  endCol: number;
}

export class QpChunks {
  private out = Buffer.allocUnsafe(64 * 1024);
  private o = 0;

  add(s: string): QpChunk {
    const n = BodyWriter.utf8(s);
    const need = this.o + qpBound(n);
    if (need > this.out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(need, this.out.length * 2));
      this.out.copy(bigger, 0, 0, this.o);
      this.out = bigger;
    }
    const start = this.o;
    this.o = qpEncodeInto(BodyWriter.scratch, n, this.out, this.o, 0);
    return { start, end: this.o, endCol };
  }

  /** The bytes every chunk added points into. */
  finish(): Buffer {
    return Buffer.from(this.out.subarray(0, this.o));
  }
}

/**
 * Builds a message body in a reused scratch buffer and hands out one exactly-sized copy: a 30 KB
 * message costs one 30 KB allocation instead of a handful (garbage the GC is slow to see).
 * Synchronous use only (one writer at a time).
 */
export class BodyWriter {
  private static out = Buffer.allocUnsafe(256 * 1024);
  private static src = Buffer.allocUnsafe(64 * 1024);
  private o = 0;

  /** `s` as UTF-8 in the shared scratch buffer (BodyWriter.scratch); returns its length. */
  static utf8(s: string): number {
    if (s.length <= 4096 && !NON_ASCII.test(s)) {
      // Short ASCII (a campaign's per-recipient parts): straight from the string, no UTF-8 encoder call.
      const src = BodyWriter.src;
      for (let i = 0; i < s.length; i++) src[i] = s.charCodeAt(i);
      return s.length;
    }
    const max = s.length * 3;
    if (BodyWriter.src.length < max) BodyWriter.src = Buffer.allocUnsafe(Math.max(max, BodyWriter.src.length * 2));
    return BodyWriter.src.write(s, 0, "utf8");
  }

  static get scratch(): Buffer {
    return BodyWriter.src;
  }

  private ensure(extra: number) {
    if (this.o + extra <= BodyWriter.out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(BodyWriter.out.length * 2, this.o + extra));
    BodyWriter.out.copy(bigger, 0, 0, this.o);
    BodyWriter.out = bigger;
  }

  ascii(s: string): this {
    this.ensure(s.length);
    this.o += BodyWriter.out.write(s, this.o, "latin1");
    return this;
  }

  qp(s: string): this {
    this.qpAt(s, 0);
    return this;
  }

  /** Quoted-printable of `s`, its first byte at column `col` of the current line; returns the column it ends at. */
  qpAt(s: string, col: number): number {
    if (!s) return col;
    const n = BodyWriter.utf8(s);
    this.ensure(qpBound(n));
    this.o = qpEncodeInto(BodyWriter.src, n, BodyWriter.out, this.o, col);
    return endCol;
  }

  /** A prepared chunk at column `col`: a soft line break first unless the line is empty. Returns the column it ends at. */
  qpPiece(bytes: Buffer, chunk: QpChunk, col: number): number {
    this.ensure(chunk.end - chunk.start + 3);
    const out = BodyWriter.out;
    if (col > 0) {
      out[this.o] = 61;
      out[this.o + 1] = 13;
      out[this.o + 2] = 10;
      this.o += 3;
    }
    bytes.copy(out, this.o, chunk.start, chunk.end);
    this.o += chunk.end - chunk.start;
    return chunk.endCol;
  }

  /** The body, in a new buffer with `headroom` free bytes before it (for the header block, see toWire). */
  finish(headroom = 0): Buffer {
    const b = acquireBuffer(headroom + this.o);
    BodyWriter.out.copy(b, headroom, 0, this.o);
    this.o = 0;
    return b.subarray(headroom);
  }
}

/** Quoted-printable of a whole string (tests, small parts). */
export function qpEncode(input: string): Buffer {
  return new BodyWriter().qp(input).finish();
}

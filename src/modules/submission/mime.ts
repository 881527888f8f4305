// A synchronous MIME reader for submitted messages: the top-level headers (decoded Subject and
// address lists, and every raw line for the headers we copy), the text and HTML bodies and the
// attachments, in one pass without streams. mailparser gives the same answers but through a chain
// of streams whose every hop waits for a turn of the event loop: tens of milliseconds per message
// while the delivery engine keeps the loop busy, which is what an SMTP client waits for its 250.
// Built on nodemailer's header-value and address parsers; charsets through TextDecoder.
import addressparser, { type Address } from "nodemailer/lib/addressparser";
import { parseHeaderValue } from "nodemailer/lib/mime-funcs";

export interface HeaderLine {
  /** Lower-case name. */
  key: string;
  /** "Name: value" unfolded to one line (8-bit bytes read as UTF-8). */
  line: string;
}

export interface MailboxAddress {
  name: string;
  address: string;
}

export interface MimeAttachment {
  filename: string | null;
  contentType: string;
  /** Content-ID without angle brackets. */
  cid: string | null;
  disposition: "inline" | "attachment";
  content: Buffer;
}

export interface ParsedMessage {
  headerLines: HeaderLine[];
  subject: string | null;
  from: MailboxAddress[];
  to: MailboxAddress[];
  cc: MailboxAddress[];
  replyTo: MailboxAddress[];
  /** Line ends as "\n"; null when the message has no such part. */
  text: string | null;
  html: string | null;
  attachments: MimeAttachment[];
}

const MAX_DEPTH = 20;
const MAX_PARTS = 500;

export function parseMessage(raw: Buffer): ParsedMessage {
  const s = raw.toString("latin1"); // one char per byte: string offsets are byte offsets
  const top = readHeaders(s, 0, s.length);
  const out: ParsedMessage = {
    headerLines: top.lines,
    subject: top.first.has("subject") ? decodeWords(top.first.get("subject")!).trim() : null,
    from: addresses(top.first.get("from")),
    to: addresses(top.first.get("to")),
    cc: addresses(top.first.get("cc")),
    replyTo: addresses(top.first.get("reply-to")),
    text: null,
    html: null,
    attachments: [],
  };
  const texts: string[] = [];
  const htmls: string[] = [];
  let parts = 0;
  const walk = (h: Headers, bodyStart: number, end: number, depth: number) => {
    if (++parts > MAX_PARTS) return;
    const ct = parseHeaderValue(h.first.get("content-type") ?? "text/plain", { stripComments: true });
    const type = (ct.value || "text/plain").toLowerCase();
    if (type.startsWith("multipart/") && ct.params.boundary && depth < MAX_DEPTH) {
      for (const [a, b] of splitMultipart(s, bodyStart, end, ct.params.boundary)) {
        const child = readHeaders(s, a, b);
        walk(child, child.bodyStart, b, depth + 1);
      }
      return;
    }
    const cd = h.first.has("content-disposition") ? parseHeaderValue(h.first.get("content-disposition")!, { stripComments: true }) : null;
    const disposition = (cd?.value ?? "").toLowerCase();
    const content = decodeTransfer(raw.subarray(bodyStart, end), h.first.get("content-transfer-encoding"));
    if ((type === "text/plain" || type === "text/html") && disposition !== "attachment") {
      let text = decodeCharset(content, ct.params.charset).replace(/\r\n?/g, "\n");
      if (type === "text/plain" && (ct.params.format ?? "").toLowerCase() === "flowed") text = decodeFlowed(text, (ct.params.delsp ?? "").toLowerCase() === "yes");
      (type === "text/html" ? htmls : texts).push(text);
      return;
    }
    const filename = cd?.params.filename ?? ct.params.name;
    const cid = (h.first.get("content-id") ?? "").trim().replace(/^<|>$/g, "");
    out.attachments.push({
      filename: filename ? decodeWords(filename) : null,
      contentType: type,
      cid: cid || null,
      disposition: disposition === "inline" ? "inline" : "attachment",
      content,
    });
  };
  walk(top, top.bodyStart, s.length, 0);
  if (texts.length) out.text = texts.join("\n");
  if (htmls.length) out.html = htmls.join("\n");
  return out;
}

interface Headers {
  lines: HeaderLine[];
  /** The first value of each header, unfolded and trimmed. */
  first: Map<string, string>;
  bodyStart: number;
}

/** The header block starting at `start` (up to the first empty line) and where the body begins. */
function readHeaders(s: string, start: number, end: number): Headers {
  let headEnd = end;
  let bodyStart = end;
  if (s.startsWith("\r\n", start) || s[start] === "\n") {
    headEnd = start;
    bodyStart = start + (s[start] === "\r" ? 2 : 1);
  } else {
    for (let i = s.indexOf("\n", start); i >= 0 && i < end; i = s.indexOf("\n", i + 1)) {
      if (s[i + 1] === "\n" || (s[i + 1] === "\r" && s[i + 2] === "\n")) {
        headEnd = i;
        bodyStart = Math.min(end, i + (s[i + 1] === "\n" ? 2 : 3));
        break;
      }
    }
  }
  const lines: HeaderLine[] = [];
  const first = new Map<string, string>();
  for (const folded of s.slice(start, headEnd).split(/\r?\n(?![ \t])/)) {
    const colon = folded.indexOf(":");
    if (colon <= 0) continue;
    let line = folded.replace(/\r?\n/g, "");
    if (/[\x80-\xff]/.test(line)) line = Buffer.from(line, "latin1").toString("utf8");
    const key = line.slice(0, line.indexOf(":")).trim().toLowerCase();
    lines.push({ key, line });
    if (!first.has(key)) first.set(key, line.slice(line.indexOf(":") + 1).trim());
  }
  return { lines, first, bodyStart };
}

/** The [start, end) byte ranges of the parts between the `--boundary` lines (a missing closing line keeps what follows). */
function splitMultipart(s: string, from: number, to: number, boundary: string): [number, number][] {
  const delim = "--" + boundary;
  const ranges: [number, number][] = [];
  let partStart = -1;
  let i = from;
  while (i < to) {
    const at = s.indexOf(delim, i);
    if (at < 0 || at >= to) break;
    const afterDelim = at + delim.length;
    i = afterDelim;
    if (at !== from && s[at - 1] !== "\n") continue;
    const closing = s.startsWith("--", afterDelim);
    let eol = s.indexOf("\n", afterDelim);
    if (eol < 0 || eol > to) eol = to;
    if (s.slice(afterDelim + (closing ? 2 : 0), eol).trim() !== "") continue; // a longer boundary of a nested part
    if (partStart >= 0) {
      let partEnd = at;
      if (s[partEnd - 1] === "\n") partEnd--;
      if (s[partEnd - 1] === "\r") partEnd--;
      ranges.push([partStart, Math.max(partStart, partEnd)]);
    }
    if (closing) return ranges;
    partStart = Math.min(eol + 1, to);
    i = partStart;
  }
  if (partStart >= 0 && partStart < to) ranges.push([partStart, to]);
  return ranges;
}

function decodeTransfer(body: Buffer, encoding: string | undefined): Buffer {
  const enc = (encoding ?? "").trim().toLowerCase();
  if (enc === "base64") return Buffer.from(body.toString("latin1").replace(/[^A-Za-z0-9+/=]/g, ""), "base64");
  if (enc === "quoted-printable") return decodeQuotedPrintable(body);
  return body;
}

function hexValue(c: number | undefined): number {
  if (c === undefined) return -1;
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** RFC 2045 6.7: =XX bytes, "=" at a line end is a soft break; anything malformed is kept as it is. */
export function decodeQuotedPrintable(b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(b.length);
  let o = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c !== 0x3d) {
      out[o++] = c;
      continue;
    }
    // "=" then optional transport padding, then a line end: a soft break.
    let j = i + 1;
    while (b[j] === 0x20 || b[j] === 0x09) j++;
    if (b[j] === 0x0a || (b[j] === 0x0d && b[j + 1] === 0x0a) || j >= b.length) {
      i = b[j] === 0x0d ? j + 1 : j;
      continue;
    }
    const hi = hexValue(b[i + 1]);
    const lo = hexValue(b[i + 2]);
    if (hi >= 0 && lo >= 0) {
      out[o++] = hi * 16 + lo;
      i += 2;
    } else out[o++] = c;
  }
  return out.subarray(0, o);
}

const decoders = new Map<string, TextDecoder | null>();
/** Bytes in a charset (UTF-8 when unknown or absent). */
export function decodeCharset(b: Buffer, charset: string | undefined): string {
  const label = (charset ?? "utf-8").trim().toLowerCase().replace(/\*.*$/, "");
  if (label === "utf-8" || label === "utf8" || label === "us-ascii" || label === "ascii" || label === "") return b.toString("utf8");
  let d = decoders.get(label);
  if (d === undefined) {
    try {
      d = new TextDecoder(label);
    } catch {
      d = null;
    }
    decoders.set(label, d);
  }
  return d ? d.decode(b) : b.toString("utf8");
}

const ENCODED_WORD = /=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g;

/** RFC 2047 encoded words (adjacent ones of one charset joined before decoding); the rest as it is. */
export function decodeWords(value: string): string {
  if (!value.includes("=?")) return value;
  let out = "";
  let last = 0;
  let charset: string | null = null; // of the encoded words waiting in `bytes`
  let bytes: Buffer[] = [];
  const flush = () => {
    if (charset !== null) out += decodeCharset(Buffer.concat(bytes), charset);
    charset = null;
    bytes = [];
  };
  for (const m of value.matchAll(ENCODED_WORD)) {
    const between = value.slice(last, m.index);
    const cs = m[1]!.toLowerCase().replace(/\*.*$/, "");
    const word = m[2]!.toUpperCase() === "B" ? Buffer.from(m[3]!, "base64") : decodeQuotedPrintable(Buffer.from(m[3]!.replace(/_/g, " "), "latin1"));
    // Whitespace between two encoded words is not part of the text (RFC 2047 6.2).
    const adjacent = charset !== null && /^\s*$/.test(between);
    if (!(adjacent && cs === charset)) {
      flush();
      if (!adjacent) out += between;
    }
    charset = cs;
    bytes.push(word);
    last = m.index + m[0].length;
  }
  flush();
  return out + value.slice(last);
}

/** RFC 3676: a line ending in a space continues on the next (with DelSp=yes that space goes); leading space-stuffing removed. */
function decodeFlowed(text: string, delSp: boolean): string {
  const out: string[] = [];
  let current = "";
  for (const raw of text.split("\n")) {
    const line = raw.startsWith(" ") ? raw.slice(1) : raw;
    if (line.endsWith(" ") && line !== "-- ") current += delSp ? line.slice(0, -1) : line;
    else {
      out.push(current + line);
      current = "";
    }
  }
  if (current) out.push(current);
  return out.join("\n");
}

function addresses(value: string | undefined): MailboxAddress[] {
  if (!value) return [];
  const flat = (list: Address[]): MailboxAddress[] => list.flatMap((a) => (a.group ? flat(a.group) : [{ name: decodeWords(a.name ?? "").trim(), address: (a.address ?? "").trim() }]));
  try {
    return flat(addressparser(value)).filter((a) => a.address);
  } catch {
    return [];
  }
}

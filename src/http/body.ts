// Request bodies, bounded before they are read: a per-route byte limit checked against
// Content-Length before anything is read and enforced again while streaming (chunked bodies), and a
// nesting-depth limit checked on the JSON text before it is parsed. A rejected body is never buffered
// past its limit and never reaches a validator.
import { Slots } from "../slots";
import { AppError, payloadTooLarge, validationError } from "./errors";

/** Default request body limit. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Deepest JSON accepted anywhere (objects and arrays counted; `{"a":[1]}` is depth 2). */
export const MAX_JSON_DEPTH = 32;

const MB = 1024 * 1024;
/** Routes that need more than the default (prefix match on the path; first match wins). */
const LIMITS: [prefix: string, bytes: number][] = [
  // A 40 MB message with 10 MB of base64 attachments is ~54 MB of JSON.
  ["/v1/send", 60 * MB],
  // 5 MB CSV / 5 MB image plus multipart framing; the routes answer 413 for a larger file themselves.
  ["/contacts/import", 5 * MB + 64 * 1024],
  ["/uploads/image", 5 * MB + 64 * 1024],
  // HTML bodies of templates and campaigns.
  ["/templates", 5 * MB],
  ["/campaigns", 5 * MB],
];

export function bodyLimitFor(path: string): number {
  for (const [prefix, bytes] of LIMITS) if (path.startsWith(prefix)) return bytes;
  return DEFAULT_BODY_LIMIT;
}

export const bodyTooLarge = (limit: number) =>
  payloadTooLarge(`The request body is larger than this endpoint accepts (${limit} bytes)`);

/**
 * Requests answered without reading their whole body (over a limit, not JSON, refused before the
 * read): their answer says `Connection: close`, so the server need not drain what the client is
 * still sending (50 MB) before answering.
 */
export const unreadBodies = new WeakSet<Request>();

/** Raw text of JSON request bodies, for routes that verify a signature over the exact bytes (webhooks). */
export const rawBodies = new WeakMap<Request, string>();

/**
 * Bodies refused while parsing (too deep). The parser yields an empty object so that authentication
 * still answers first; the auth macro, the validation mapper and a global beforeHandle then throw this.
 */
export const rejectedBodies = new WeakMap<Request, AppError>();

export function pathOf(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const q = url.indexOf("?", start);
  return q < 0 ? url.slice(start) : url.slice(start, q);
}

/** 413 before reading when the declared length is over the route's limit. */
export function checkDeclaredLength(request: Request): void {
  const declared = request.headers.get("content-length");
  if (!declared) return;
  const n = Number(declared);
  const limit = bodyLimitFor(pathOf(request));
  if (Number.isFinite(n) && n > limit) {
    unreadBodies.add(request);
    throw bodyTooLarge(limit);
  }
}

/**
 * A body over the default limit on a secret-key-only route (/v1/send): the key is checked before a
 * byte is read, so nobody without one can make the server read 60 MB.
 */
export function needsKeyBeforeBody(request: Request): boolean {
  const path = pathOf(request);
  if (!path.startsWith("/v1/send")) return false;
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  return !Number.isFinite(declared) || declared > DEFAULT_BODY_LIMIT;
}

/**
 * Reads the body, stopping (and cancelling the stream) as soon as it passes `limit` bytes. A body
 * with a Content-Length (already checked against the limit in onRequest) is read natively in one go.
 */
export async function readBounded(request: Request, limit: number): Promise<Uint8Array> {
  const body = request.body;
  if (!body) return new Uint8Array(0);
  if (request.headers.has("content-length")) return new Uint8Array(await request.arrayBuffer());
  const chunks: Uint8Array[] = [];
  let total = 0;
  await eachChunk(request, body, limit, (value) => {
    chunks.push(value);
    total += value.byteLength;
    return true;
  });
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * Hands the body to `take` chunk by chunk; past `limit` bytes, or when `take` answers false, the
 * stream is cancelled and the request marked unread (413 thrown for the limit). True when it ended.
 */
async function eachChunk(request: Request, body: ReadableStream<Uint8Array>, limit: number, take: (chunk: Uint8Array) => boolean): Promise<boolean> {
  const reader = body.getReader();
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return true;
    total += value.byteLength;
    const over = total > limit;
    if (over || !take(value)) {
      reader.cancel().catch(() => undefined);
      unreadBodies.add(request);
      if (over) throw bodyTooLarge(limit);
      return false;
    }
  }
}

/**
 * A body sent with a GET or HEAD, which no route reads, nor can: Bun hands these requests no body
 * stream, so there is no way to drain it. Left unread, whatever had not arrived with the head was
 * still in the socket when the answer was written and the connection closed, and the close became a
 * reset that cut a large answer (the OpenAPI document, the Swagger bundle) short; from a 200 KB body
 * on, on loopback. So any body (a Content-Length above 0, or chunked) is 413 before anything else,
 * answered with `Connection: close`: a small answer, written whole before the close.
 */
export function checkBodilessRequest(request: Request): void {
  const length = request.headers.get("content-length");
  const chunked = request.headers.has("transfer-encoding");
  if (!chunked && (length === null || /^\s*0+\s*$/.test(length))) return;
  unreadBodies.add(request);
  throw payloadTooLarge(`A ${request.method} request carries no body`);
}

/**
 * True when the JSON text nests objects/arrays deeper than `max`. One pass over the characters,
 * skipping strings; stops at the first level past the limit.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) {
      // Skip the string, honouring backslash escapes.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 92) i++;
        else if (d === 34) break;
      }
    } else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}

/** The path of the first string (key or value) holding U+0000, or null. */
export function nulPath(v: unknown, at: string): string | null {
  if (typeof v === "string") return v.includes("\u0000") ? at : null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const p = nulPath(v[i], `${at}[${i}]`);
      if (p) return p;
    }
    return null;
  }
  if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      const here = at === "body" ? k : `${at}.${k}`;
      if (k.includes("\u0000")) return here;
      const p = nulPath(x, here);
      if (p) return p;
    }
  }
  return null;
}

export const tooDeep = () =>
  validationError(
    [{ field: "body", message: `JSON nests deeper than ${MAX_JSON_DEPTH} levels`, code: "too_deep" }],
    `Request body nests deeper than ${MAX_JSON_DEPTH} levels`,
  );


/** readBounded for text: native text() for a declared length; a chunked body is collected, then decoded once. */
export async function readBoundedText(request: Request, limit: number): Promise<string> {
  if (!request.body) return "";
  if (request.headers.has("content-length")) return request.text();
  return new TextDecoder().decode(await readBounded(request, limit));
}

/** What readJsonText returns for a body that cannot be JSON (its first byte says so). */
export const NOT_JSON = Symbol("not JSON");

/** Bytes a JSON text may start with: whitespace, a value's first character, or a UTF-8 BOM. */
const JSON_START = new Set([0x20, 0x09, 0x0a, 0x0d, 0x7b, 0x5b, 0x22, 0x2d, 0x74, 0x66, 0x6e, 0xef, ...Array.from({ length: 10 }, (_, i) => 0x30 + i)]);

/**
 * readBoundedText for JSON. A chunked or large body is decoded chunk by chunk (never held twice), and
 * one whose first non-blank byte cannot start a JSON text is refused there (NOT_JSON, the stream
 * cancelled): 50 MB of garbage is not read to learn that it does not parse.
 */
export async function readJsonText(request: Request, limit: number): Promise<string | typeof NOT_JSON> {
  if (!request.body) return "";
  // A small declared body is read natively in one go; a large one streams like a chunked one.
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (Number.isFinite(declared) && declared <= DEFAULT_BODY_LIMIT) return request.text();
  const decoder = new TextDecoder();
  const parts: string[] = [];
  let sniffed = false;
  const complete = await eachChunk(request, request.body, limit, (value) => {
    if (!sniffed) {
      let i = 0;
      while (i < value.length && (value[i] === 0x20 || value[i] === 0x09 || value[i] === 0x0a || value[i] === 0x0d)) i++;
      if (i < value.length) {
        sniffed = true;
        if (!JSON_START.has(value[i]!)) return false;
      }
    }
    parts.push(decoder.decode(value, { stream: true }));
    return true;
  });
  if (!complete) return NOT_JSON;
  parts.push(decoder.decode());
  return parts.length === 1 ? parts[0]! : parts.join("");
}

/**
 * Bodies over the default limit (a big /v1/send, a CSV, an image) are read and parsed one at a
 * time (MAX_LARGE_READS): a burst of 50 MB bodies waits its turn instead of stacking up in memory
 * (an unread body costs nothing: it stays in the socket), and a full collection follows each.
 */
export const MAX_LARGE_READS = 1;
// A large body leaves tens of MB of dead strings and buffers; left to the collector's own pace a
// burst of them held the RSS at 700 MB (8 x 50 MB to /v1/send). A full collection after each (a few
// ms, one large body at a time anyway) gives the memory back before the next one is read.
const largeReads = new Slots(MAX_LARGE_READS, () => Bun.gc(true));

function isLarge(request: Request, limit: number): boolean {
  if (limit <= DEFAULT_BODY_LIMIT) return false;
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  return !Number.isFinite(declared) || declared > DEFAULT_BODY_LIMIT;
}

/**
 * Routes that parse their own (small) bodies: the subscription pages' forms and the SNS webhook.
 * Their Content-Length is still checked against the default limit before anything is read, and they read through readBounded.
 */
const OWN_PARSERS = ["/unsubscribe/", "/subscribe/", "/manage/", "/webhooks/sns"];

/** multipart/form-data as Elysia shapes it: one value per field, an array for repeated fields. */
async function parseMultipart(bytes: Uint8Array, contentType: string): Promise<Record<string, unknown>> {
  const form = await new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { "content-type": contentType } }).formData();
  const out: Record<string, unknown> = {};
  for (const key of new Set(form.keys())) {
    if (key === "__proto__" || key === "constructor" || key === "prototype") continue;
    const all = form.getAll(key);
    out[key] = all.length === 1 ? all[0] : all;
  }
  return out;
}

function parseUrlencoded(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const params = new URLSearchParams(text);
  for (const key of new Set(params.keys())) {
    if (key === "__proto__" || key === "constructor" || key === "prototype") continue;
    const all = params.getAll(key);
    out[key] = all.length === 1 ? all[0] : all;
  }
  return out;
}

/**
 * The app-wide body parser (server.ts onParse). Returns the parsed body, or undefined to leave the
 * request to a route's own parser (routes in `ownParsers`, which read small bodies themselves).
 * `malformed` is called for JSON that does not parse (answered 400 after authentication).
 *
 * `route` is the matched route's pattern (`/unsubscribe/:token`): the router matches the path as
 * sent, while `request.url` has its dot segments resolved (`/unsubscribe/..` and `/unsubscribe/%2e%2e`
 * arrive as `/`), so which parser a route gets is decided by its pattern, not by the URL.
 */
export async function parseBody(request: Request, contentType: string | undefined, malformed: (r: Request) => void, route?: string): Promise<unknown> {
  const path = pathOf(request);
  const matched = route || path;
  if (OWN_PARSERS.some((p) => matched.startsWith(p))) return;
  const limit = bodyLimitFor(path);
  const read = () => readAndParse(request, path, limit, contentType, malformed, route);
  return isLarge(request, limit) ? largeReads.run(read) : read();
}

async function readAndParse(request: Request, path: string, limit: number, contentType: string | undefined, malformed: (r: Request) => void, route?: string): Promise<unknown> {
  const type = (contentType ?? "").toLowerCase();
  if (!type || type.startsWith("application/json") || type.endsWith("+json")) {
    const text = await readJsonText(request, limit);
    if (text === NOT_JSON) {
      malformed(request);
      return {};
    }
    if (!text) return;
    // Kept only where a signature is checked over the exact bytes (a 50 MB send body is not kept twice).
    if (path.startsWith("/webhooks/") || route?.startsWith("/webhooks/")) rawBodies.set(request, text);
    if (jsonTooDeep(text)) {
      rejectedBodies.set(request, tooDeep());
      return {};
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      malformed(request);
      return {};
    }
    // U+0000 cannot be stored in a text or JSON column of PostgreSQL, and is in no email address,
    // header or message: refused on both engines alike, naming the field.
    if (text.includes("\\u0000") && !path.startsWith("/webhooks/")) {
      const at = nulPath(parsed, "body");
      if (at) {
        rejectedBodies.set(request, validationError([{ field: at, message: "Must not contain the NUL character (U+0000)", code: "invalid_string" }]));
        return {};
      }
    }
    return parsed;
  }
  if (type.startsWith("multipart/form-data")) {
    const bytes = await readBounded(request, limit);
    try {
      // Elysia hands parsers the MIME type without its parameters: the boundary is in the header.
      return await parseMultipart(bytes, request.headers.get("content-type") ?? contentType!);
    } catch {
      throw new AppError(400, "BAD_REQUEST", "Malformed multipart/form-data body");
    }
  }
  if (type.startsWith("application/x-www-form-urlencoded")) return parseUrlencoded(await readBoundedText(request, limit));
  if (type.startsWith("text/")) return readBoundedText(request, limit);
  return (await readBounded(request, limit)).slice().buffer;
}

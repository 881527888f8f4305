/**
 * The one template renderer, used wherever mail (or a webhook body) is built.
 *
 * Syntax (docs/api.md "Templates and rendering"):
 *   {{name}}  {{ data.plan }}  {{ order.items.0.sku }}  {{ data["first name"] }}
 *   {{ firstName ?? "there" }}  {{ nickname ?? firstName ?? 'friend' }}  {{ count ?? 0 }}
 *   {{{ rawHtml }}}            inserted without HTML-escaping
 *   \{{ literal }}             a backslash before {{ prints the braces as text
 * A missing value renders empty. A fallback (`??`) is used when the value is missing, null or "".
 * Paths resolve against the variables both ways: `{{plan}}` finds `data.plan` and `{{data.plan}}`
 * finds a top-level `plan`, so callers may pass contact data flat, nested under `data`, or both.
 * Only own properties are read (`{{constructor}}` is empty, never a prototype member).
 *
 * Bodies are HTML-escaped (renderHtml), subjects are not escaped but lose CR/LF and control
 * characters (renderSubject), plain text is neither (renderText), JSON webhook bodies escape values
 * for a JSON string (renderJson).
 * Compiled templates are cached by source: a campaign renders one template thousands of times.
 */

export class TemplateSyntaxError extends Error {
  constructor(
    readonly reason: string,
    /** 0-based offset in the source. */
    readonly position: number,
    /** 1-based. */
    readonly line: number,
    /** 1-based. */
    readonly column: number,
  ) {
    super(`${reason} at line ${line}, column ${column} (position ${position})`);
    this.name = "TemplateSyntaxError";
  }
}

type Alternative = { path: string[] } | { literal: string };

export interface Slot {
  raw: boolean;
  alts: Alternative[];
}

export type Part = string | Slot;

export interface CompiledTemplate {
  readonly source: string;
  readonly parts: readonly Part[];
  /** Every variable path the template references, dotted (`data.plan`, `firstName`). */
  readonly variables: readonly string[];
}

export type Vars = Record<string, unknown>;
type Source = string | CompiledTemplate;

// ---- compile ----------------------------------------------------------------------------------

const IDENT_START = /[A-Za-z_$]/;
const IDENT_CHAR = /[A-Za-z0-9_$-]/;
const DIGIT = /[0-9]/;

function lineCol(source: string, pos: number): { line: number; column: number } {
  let line = 1;
  let last = -1;
  for (let i = 0; i < pos && i < source.length; i++) {
    if (source.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  }
  return { line, column: pos - last };
}

function fail(source: string, reason: string, pos: number): never {
  const { line, column } = lineCol(source, pos);
  throw new TemplateSyntaxError(reason, pos, line, column);
}

/** Parses the expression that starts at `i` (just after the opener); returns the slot and the index after the closer. */
function parseSlot(src: string, open: number, i: number, raw: boolean): { slot: Slot; end: number } {
  const closer = raw ? "}}}" : "}}";
  const alts: Alternative[] = [];
  const skipWs = () => {
    while (i < src.length && /\s/.test(src[i]!)) i++;
  };
  const unclosed = (): never => fail(src, `Unclosed "${raw ? "{{{" : "{{"}" (expected "${closer}")`, open);

  if (src.indexOf(closer, i) < 0) unclosed();
  skipWs();
  if (src.startsWith(closer, i)) fail(src, "Empty expression", open);
  const c0 = src[i];
  if (c0 === "#" || c0 === "/" || c0 === ">" || c0 === "^" || c0 === "!" || c0 === "&") {
    fail(src, `"{{${c0}" blocks, partials and comments are not supported; use {{name}}, {{ a.b }}, {{ x ?? "fallback" }} or {{{raw}}}`, i);
  }
  for (;;) {
    skipWs();
    if (i >= src.length) unclosed();
    const c = src[i]!;
    if (c === '"' || c === "'") {
      const start = i;
      let out = "";
      i++;
      for (;;) {
        if (i >= src.length) fail(src, "Unterminated string", start);
        const ch = src[i]!;
        if (ch === "\\" && i + 1 < src.length) {
          const n = src[i + 1]!;
          out += n === "n" ? "\n" : n === "t" ? "\t" : n;
          i += 2;
          continue;
        }
        if (ch === c) {
          i++;
          break;
        }
        if (ch === "\n" || ch === "\r") fail(src, "Unterminated string", start);
        out += ch;
        i++;
      }
      alts.push({ literal: out });
    } else if (DIGIT.test(c) || (c === "-" && DIGIT.test(src[i + 1] ?? ""))) {
      const m = /^-?\d+(?:\.\d+)?/.exec(src.slice(i, i + 64))!;
      alts.push({ literal: m[0] });
      i += m[0].length;
    } else if (IDENT_START.test(c)) {
      const path: string[] = [];
      let j = i;
      while (j < src.length && IDENT_CHAR.test(src[j]!)) j++;
      path.push(src.slice(i, j));
      i = j;
      for (;;) {
        if (src[i] === ".") {
          i++;
          let k = i;
          while (k < src.length && IDENT_CHAR.test(src[k]!)) k++;
          if (k === i) fail(src, "Expected a name after '.'", i);
          path.push(src.slice(i, k));
          i = k;
        } else if (src[i] === "[") {
          const start = i;
          i++;
          skipWs();
          const q = src[i];
          let seg = "";
          if (q === '"' || q === "'") {
            const end = src.indexOf(q, i + 1);
            if (end < 0 || src.slice(i + 1, end).includes("\n")) fail(src, "Unterminated string", i);
            seg = src.slice(i + 1, end);
            i = end + 1;
          } else {
            let k = i;
            while (k < src.length && DIGIT.test(src[k]!)) k++;
            if (k === i) fail(src, "Expected a quoted key or an index inside [ ]", i);
            seg = src.slice(i, k);
            i = k;
          }
          skipWs();
          if (src[i] !== "]") fail(src, "Expected ']'", i >= src.length ? start : i);
          i++;
          path.push(seg);
        } else break;
      }
      alts.push({ path });
    } else if (src.startsWith(closer, i) || src.startsWith("??", i)) {
      fail(src, "Expected a variable name or a quoted fallback", i);
    } else if (c === "}") {
      fail(src, raw ? `Expected "}}}" to close "{{{"` : `Unexpected "}"`, i);
    } else {
      fail(src, `Unexpected character ${JSON.stringify(c)} in expression`, i);
    }
    skipWs();
    if (i >= src.length) unclosed();
    if (src.startsWith(closer, i)) return { slot: { raw, alts }, end: i + closer.length };
    if (src.startsWith("??", i)) {
      i += 2;
      continue;
    }
    if (raw && src.startsWith("}}", i)) fail(src, `Expected "}}}" to close "{{{"`, i);
    fail(src, `Unexpected ${JSON.stringify(src[i])} in expression (separate fallbacks with "??")`, i);
  }
}

/**
 * The most `{{ }}` a template may hold. Each compiles to an object of its own: a 2 MB body of
 * `{{a}}` was 400,000 of them, 80 MB of heap and 1.5 s to compile (then kept in the cache below). Far
 * above any real template (a long newsletter has a few hundred).
 */
export const MAX_TEMPLATE_SLOTS = 10_000;

function parse(src: string): CompiledTemplate {
  const parts: Part[] = [];
  let slots = 0;
  const variables = new Set<string>();
  let text = "";
  let i = 0;
  while (i < src.length) {
    const at = src.indexOf("{{", i);
    if (at < 0) {
      text += src.slice(i);
      break;
    }
    if (at > 0 && src[at - 1] === "\\") {
      text += src.slice(i, at - 1) + "{{";
      i = at + 2;
      continue;
    }
    text += src.slice(i, at);
    if (++slots > MAX_TEMPLATE_SLOTS) fail(src, `More than ${MAX_TEMPLATE_SLOTS} variables`, at);
    const raw = src[at + 2] === "{";
    const { slot, end } = parseSlot(src, at, at + (raw ? 3 : 2), raw);
    if (text) parts.push(text);
    text = "";
    parts.push(slot);
    for (const a of slot.alts) if ("path" in a) variables.add(a.path.join("."));
    i = end;
  }
  if (text) parts.push(text);
  return { source: src, parts, variables: [...variables] };
}

// A bounded cache of compiled templates, least recently used out first.
// Bounded by size: each /v1/send request can bring its own 20 KB body, a compiled template holds its
// source twice (source and text parts), and each of its slots is an object of its own (SLOT_COST).
const MAX_CACHED_CHARS = 2 * 1024 * 1024;
const MAX_CACHED_ENTRIES = 5000;
/** What a compiled slot costs in the cache's budget, in characters of source (its object is ~200 bytes). */
const SLOT_COST = 200;
const cache = new Map<string, { compiled: CompiledTemplate; cost: number }>();
let cachedChars = 0;

/**
 * A template source that renders to `text` exactly (content that is not a template, e.g. a message
 * submitted over SMTP): every "{{" gets the backslash that prints it as text (`\{{` itself becomes
 * `\\{{`, which prints `\{{`).
 */
export function literalSource(text: string): string {
  return text.includes("{{") ? text.replaceAll("{{", "\\{{") : text;
}

/** Compiles (or returns the cached compilation of) a template source. Throws TemplateSyntaxError. */
export function compile(source: string): CompiledTemplate {
  const hit = cache.get(source);
  if (hit) {
    cache.delete(source);
    cache.set(source, hit);
    return hit.compiled;
  }
  const compiled = parse(source);
  let slots = 0;
  for (const p of compiled.parts) if (typeof p !== "string") slots++;
  const cost = source.length + SLOT_COST * slots;
  cache.set(source, { compiled, cost });
  cachedChars += cost;
  while (cache.size > MAX_CACHED_ENTRIES || (cachedChars > MAX_CACHED_CHARS && cache.size > 1)) {
    const [oldest, entry] = cache.entries().next().value as [string, { cost: number }];
    cache.delete(oldest);
    cachedChars -= entry.cost;
  }
  return compiled;
}

// Sources known to be valid (least recently checked out first). Code that sends the same body with
// different data on every /v1/send is the common case: remembering the source skips its parse.
const MAX_VALID_CHARS = 1024 * 1024;
const validSources = new Map<string, true>();
let validChars = 0;

/** Checks a source without compiling it for later: null when valid, else the error. */
export function checkSyntax(source: string): TemplateSyntaxError | null {
  if (validSources.has(source)) {
    validSources.delete(source);
    validSources.set(source, true);
    return null;
  }
  try {
    // Not through the compile cache: a request's body is rendered later, elsewhere (the build worker).
    parse(source);
  } catch (e) {
    if (e instanceof TemplateSyntaxError) return e;
    throw e;
  }
  if (source.length <= MAX_VALID_CHARS / 4) {
    validSources.set(source, true);
    validChars += source.length;
    for (const old of validSources.keys()) {
      if (validChars <= MAX_VALID_CHARS) break;
      validSources.delete(old);
      validChars -= old.length;
    }
  }
  return null;
}

/** Whether the template references `name` (e.g. the marketing footer rule checks `unsubscribeUrl`). */
export function usesVariable(tpl: Source, name: string): boolean {
  return asCompiled(tpl).variables.includes(name);
}

// ---- render -----------------------------------------------------------------------------------

const has = Object.prototype.hasOwnProperty;

function isContainer(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

function walk(root: unknown, path: readonly string[], from: number): unknown {
  let cur = root;
  for (let i = from; i < path.length; i++) {
    if (!isContainer(cur) || !has.call(cur, path[i]!)) return undefined;
    cur = (cur as Record<string, unknown>)[path[i]!];
  }
  return cur;
}

/** Resolves a path; `data.x` and `x` stand in for each other when only one of them exists. */
export function lookup(vars: Vars, path: readonly string[]): unknown {
  const direct = walk(vars, path, 0);
  if (direct !== undefined) return direct;
  if (path[0] === "data") return path.length > 1 ? walk(vars, path, 1) : undefined;
  const data = has.call(vars, "data") ? vars.data : undefined;
  return isContainer(data) ? walk(data, path, 0) : undefined;
}

function toText(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(toText).join(", ");
  try {
    return JSON.stringify(v);
  } catch {
    return "";
  }
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;", "`": "&#96;" };
const NEEDS_ESCAPE = /[&<>"'`]/;
export function escapeHtml(s: string): string {
  return NEEDS_ESCAPE.test(s) ? s.replace(/[&<>"'`]/g, (c) => ESCAPES[c]!) : s;
}

function valueOf(slot: Slot, vars: Vars): string {
  for (const alt of slot.alts) {
    const text = "literal" in alt ? alt.literal : toText(lookup(vars, alt.path));
    if (text !== "") return text;
  }
  return "";
}

/** One slot's value as a body shows it: through `escape` (unless the slot is `{{{raw}}}`), or as it is. */
export function slotText(slot: Slot, vars: Vars, escape: ((s: string) => string) | null): string {
  const v = valueOf(slot, vars);
  return escape && !slot.raw ? escape(v) : v;
}

function asCompiled(tpl: Source): CompiledTemplate {
  return typeof tpl === "string" ? compile(tpl) : tpl;
}

/** Inside a JSON string literal: quotes, backslashes and control characters escaped. */
function escapeJsonString(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

/**
 * The most characters one render may produce. A template repeats its variables as often as it likes
 * (`{{bio}}` 400,000 times in a 2 MB body, each a 64 KB value, would be 25 GB): rendering stops with
 * RenderTooLargeError once the output passes this, far above any real message (40 MB in all).
 */
export const MAX_RENDERED_CHARS = 16 * 1024 * 1024;

export class RenderTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`The rendered text would be longer than ${limit} characters`);
  }
}

function render(tpl: Source, vars: Vars, escape: ((s: string) => string) | null, limit = MAX_RENDERED_CHARS): string {
  const parts = asCompiled(tpl).parts;
  let out = "";
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    out += typeof p === "string" ? p : slotText(p, vars, escape);
    if (out.length > limit) throw new RenderTooLargeError(limit);
  }
  return out;
}

/** HTML bodies: values are HTML-escaped, `{{{raw}}}` is not. */
export function renderHtml(tpl: Source, vars: Vars, limit?: number): string {
  return render(tpl, vars, escapeHtml, limit);
}

/** Plain text and webhook bodies: nothing is escaped. */
export function renderText(tpl: Source, vars: Vars, limit?: number): string {
  return render(tpl, vars, null, limit);
}

/**
 * JSON bodies (workflow webhooks): `"{{name}}"` stays a valid JSON string whatever the value holds
 * (quotes, backslashes, newlines are escaped); `{{{raw}}}` is inserted as is.
 */
export function renderJson(tpl: Source, vars: Vars): string {
  return render(tpl, vars, escapeJsonString);
}

/** Removes what may never reach a header: line breaks become one space, other control characters go. */
export function headerSafe(s: string): string {
  return s.replace(/[\r\n\u2028\u2029]+/g, " ").replace(/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g, "");
}

/** Subjects (and other header values): never HTML-escaped, CR/LF stripped. */
export function renderSubject(tpl: Source, vars: Vars): string {
  return headerSafe(render(tpl, vars, null));
}

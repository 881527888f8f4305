// A message body prepared once for all the recipients of a content (a campaign's): the literal HTML
// and text between the per-recipient parts are decorated and quoted-printable-encoded once; per
// message only the variables, the tracked links, the footer and the pixel are encoded and the
// prepared bytes copied around them. The result decodes to exactly what render + decorate + MIME
// give one message at a time (build.ts; test/mail/skeleton.test.ts compares the two).
// Pure: no database, no AppContext (runs in the build worker).
//
// How the decoration is found once: the link scanner (decorate.ts) runs over the template with
// every slot replaced by a placeholder character. Rendered slot values are HTML-escaped (no < > " '),
// so they cannot open or close a tag, a quote or a comment: the links found are the links of every
// rendered message. A template where that does not hold gets no skeleton (its messages are built one
// at a time, as always): {{{raw}}} slots, a slot inside a link's tag outside its href, a slot in an
// unquoted href, a slot right after "<" or "</".
import { documentClose, documentOpen, isFragment, linkSites, linkTags, tailAt, tailHtml, trackableUrl, trackedHref, type DecorationPlan } from "../tracking/decorate";
import { QpChunks, type BodyWriter, type QpChunk } from "./qp";
import { compile, escapeHtml, slotText, type Part, type Slot, type Vars } from "./render";

type Piece =
  | { kind: "lit"; chunk: QpChunk }
  | { kind: "slot"; slot: Slot }
  /** A link whose href has no slot: `url` is what it points at when absolute http(s), else null. */
  | { kind: "link"; prefix: string; url: string | null; original: string }
  /** A link whose href holds slots: decided per message on the rendered value. */
  | { kind: "dynamic-link"; prefix: string; quote: string; value: Part[] }
  /** The footer and the open pixel (in the text part: the text footer). */
  | { kind: "tail" }
  /** Around a fragment: the HTML document's start or end (encoded once), written when the decoration asks for one. */
  | { kind: "document"; chunk: QpChunk };

export interface Skeleton {
  html: Piece[];
  text: Piece[];
  /** The quoted-printable bytes the "lit" pieces point into. */
  bytes: Buffer;
}

/** The per-recipient parts of one message. */
export interface Fill {
  vars: Vars;
  decoration: DecorationPlan | null;
  /** Click tracking: a link becomes `base + key(url)`; null when clicks are not tracked. */
  track: { base: string; key: (url: string) => string } | null;
}

const HOLE = "\uE000";
/** Before a slot, text that would make its value part of a tag's or comment's name. */
const NAME_BEFORE = /<[!/]?[-\w]*$/;

/** The skeleton of an HTML template and its plain-text template; null when the HTML cannot have one (see above). */
export function prepareSkeleton(htmlSource: string, textSource: string): Skeleton | null {
  if (htmlSource.includes(HOLE)) return null;
  let htmlParts: readonly Part[];
  let textParts: readonly Part[];
  try {
    htmlParts = compile(htmlSource).parts;
    textParts = compile(textSource).parts;
  } catch {
    return null;
  }
  const chunks = new QpChunks();
  const html = htmlPieces(htmlParts, chunks);
  if (!html) return null;
  const text = textParts.map((p): Piece => (typeof p === "string" ? { kind: "lit", chunk: chunks.add(p) } : { kind: "slot", slot: p }));
  text.push({ kind: "tail" });
  return { html, text, bytes: chunks.finish() };
}

interface Hole {
  at: number;
  slot: Slot;
}

function htmlPieces(parts: readonly Part[], chunks: QpChunks): Piece[] | null {
  // The markup with a placeholder for each slot.
  let m = "";
  const holes: Hole[] = [];
  for (const p of parts) {
    if (typeof p === "string") m += p;
    else {
      if (p.raw || NAME_BEFORE.test(m.slice(-64))) return null;
      holes.push({ at: m.length, slot: p });
      m += HOLE;
    }
  }
  const holeAt = new Map(holes.map((h) => [h.at, h.slot]));
  const inside = (from: number, to: number) => m.slice(from, to).includes(HOLE);

  interface Event {
    start: number;
    end: number;
    piece: Piece;
  }
  const events: Event[] = [];
  const taken = new Set<number>();
  const sites = linkSites(m);
  const hrefOf = new Map(sites.map((s) => [s.tagStart, s]));
  for (const t of linkTags(m)) {
    // A value in a link's tag outside its href could add attributes to an unquoted one.
    const s = hrefOf.get(t.start);
    if (s ? inside(t.start, s.start) || inside(s.end, t.end) : inside(t.start, t.end)) return null;
  }
  for (const s of sites) {
    const from = s.start + s.prefix.length + s.quote.length;
    const to = s.end - s.quote.length;
    if (!inside(from, to)) {
      events.push({ start: s.start, end: s.end, piece: { kind: "link", prefix: s.prefix, url: trackableUrl(s.value, []), original: m.slice(s.start, s.end) } });
      continue;
    }
    if (!s.quote) return null;
    const value: Part[] = [];
    let text = "";
    for (let i = from; i < to; i++) {
      const slot = holeAt.get(i);
      if (!slot) {
        text += m[i];
        continue;
      }
      if (text) value.push(text), (text = "");
      value.push(slot);
      taken.add(i);
    }
    if (text) value.push(text);
    events.push({ start: s.start, end: s.end, piece: { kind: "dynamic-link", prefix: s.prefix, quote: s.quote, value } });
  }
  for (const h of holes) if (!taken.has(h.at)) events.push({ start: h.at, end: h.at + 1, piece: { kind: "slot", slot: h.slot } });
  const tail = tailAt(m);
  if (events.some((e) => e.start < tail && tail < e.end)) return null;
  events.push({ start: tail, end: tail, piece: { kind: "tail" } });
  events.sort((a, b) => a.start - b.start || (a.piece.kind === "tail" ? -1 : 1));

  const pieces: Piece[] = [];
  let pos = 0;
  for (const e of events) {
    if (e.start > pos) pieces.push({ kind: "lit", chunk: chunks.add(m.slice(pos, e.start)) });
    pieces.push(e.piece);
    pos = e.end;
  }
  if (pos < m.length) pieces.push({ kind: "lit", chunk: chunks.add(m.slice(pos)) });
  if (isFragment(m)) pieces.unshift({ kind: "document", chunk: chunks.add(documentOpen) }), pieces.push({ kind: "document", chunk: chunks.add(documentClose) });
  return pieces;
}

// ---- per message ---------------------------------------------------------------------------------

/** The HTML body, quoted-printable, into `w`. */
export function writeHtml(w: BodyWriter, sk: Skeleton, fill: Fill): void {
  write(w, sk.html, sk.bytes, fill, true);
}

/** The plain-text body, quoted-printable, into `w`. */
export function writeText(w: BodyWriter, sk: Skeleton, fill: Fill): void {
  write(w, sk.text, sk.bytes, fill, false);
}

/** Link keys are base64url: a tracked URL needs escaping in an attribute only when its base does. */
const ATTR_SAFE = /^[^&"<>]*$/;

function tracked(prefix: string, track: NonNullable<Fill["track"]>, url: string, safeBase: boolean): string {
  const href = track.base + track.key(url);
  return safeBase ? prefix + '"' + href + '"' : trackedHref(prefix, href);
}

function write(w: BodyWriter, pieces: Piece[], bytes: Buffer, fill: Fill, html: boolean): void {
  const safeBase = !!fill.track && ATTR_SAFE.test(fill.track.base);
  let col = 0;
  let pending = "";
  for (const p of pieces) {
    if (p.kind === "document" && !fill.decoration?.document) continue;
    if (p.kind !== "lit" && p.kind !== "document") {
      pending += filled(p, fill, html, safeBase);
      continue;
    }
    if (pending) col = w.qpAt(pending, col), (pending = "");
    col = w.qpPiece(bytes, p.chunk, col);
  }
  if (pending) w.qpAt(pending, col);
}

function filled(p: Exclude<Piece, { kind: "lit" } | { kind: "document" }>, fill: Fill, html: boolean, safeBase: boolean): string {
  switch (p.kind) {
    case "slot":
      return slotText(p.slot, fill.vars, html ? escapeHtml : null);
    case "tail":
      if (!fill.decoration) return "";
      return html ? tailHtml(fill.decoration) : (fill.decoration.textFooter ?? "");
    case "link": {
      const skip = fill.decoration?.skipPrefixes ?? [];
      return fill.track && p.url !== null && !skip.some((s) => p.url!.startsWith(s)) ? tracked(p.prefix, fill.track, p.url, safeBase) : p.original;
    }
    case "dynamic-link": {
      let value = "";
      for (const v of p.value) value += typeof v === "string" ? v : slotText(v, fill.vars, escapeHtml);
      const url = fill.track ? trackableUrl(value, fill.decoration?.skipPrefixes ?? []) : null;
      return url !== null ? tracked(p.prefix, fill.track!, url, safeBase) : p.prefix + p.quote + value + p.quote;
    }
  }
}

// DKIM (RFC 6376), rsa-sha256 or ed25519-sha256 (RFC 8463), relaxed/relaxed, over any raw RFC 5322 message.
// Split in two so the expensive RSA operation can run elsewhere (see signer.ts):
//   prepareDkim(message) -> the canonical data to sign + the header without its b= value
//   dkimHeader(prepared, signature) -> the DKIM-Signature header line to put first (toWire)
import { createHash } from "node:crypto";
import type { RawMessage } from "../message/compose";

/** Header fields we sign when present (From always is). */
export const SIGNED_HEADERS = [
  "from",
  "sender",
  "reply-to",
  "subject",
  "date",
  "message-id",
  "to",
  "cc",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "in-reply-to",
  "references",
  "list-id",
  "list-unsubscribe",
  "list-unsubscribe-post",
  "feedback-id",
];

/**
 * Header fields listed once more in h= than they occur (RFC 6376 8.15 "oversigning"): a signed
 * absent instance, so a From, To or Subject added on the way breaks the signature.
 */
export const OVERSIGNED_HEADERS = new Set(["from", "to", "subject", "date", "message-id", "reply-to"]);

export type DkimAlgorithm = "rsa-sha256" | "ed25519-sha256";

export interface DkimSigningParams {
  /** Default rsa-sha256. */
  algorithm?: DkimAlgorithm;
  domain: string;
  selector: string;
  /** Signature timestamp (t=), epoch ms. */
  timeMs: number;
}

export interface PreparedDkim {
  /** The DKIM-Signature header up to and including "b=". */
  headerPrefix: string;
  /** What the private key signs (ASCII). */
  data: string;
}

interface HeaderField {
  name: string; // lower-case
  value: string; // raw, after the colon, possibly folded
}

function parseHeaderBlock(block: string): HeaderField[] {
  const fields: HeaderField[] = [];
  const lines = block.split("\r\n");
  for (const line of lines) {
    if (!line) continue;
    const c = line.charCodeAt(0);
    if ((c === 0x20 || c === 0x09) && fields.length) {
      fields[fields.length - 1]!.value += "\r\n" + line;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    fields.push({ name: line.slice(0, colon).trim().toLowerCase(), value: line.slice(colon + 1) });
  }
  return fields;
}

/** Relaxed header canonicalization of one field (no trailing CRLF). */
export function relaxedHeader(name: string, value: string): string {
  return `${name.toLowerCase()}:${value.replace(/\r\n/g, "").replace(/[ \t]+/g, " ").trim()}`;
}

/** Relaxed body canonicalization of a latin1 "binary" string with CRLF line ends. */
export function relaxedBody(body: string): string {
  let b = body;
  if (b.includes("\t") || b.includes("  ") || b.includes(" \r\n")) {
    b = b.replace(/[ \t]+/g, " ").replace(/ \r\n/g, "\r\n");
    if (b.endsWith(" ")) b = b.slice(0, -1);
  }
  let end = b.length;
  while (end >= 2 && b.charCodeAt(end - 1) === 0x0a && b.charCodeAt(end - 2) === 0x0d) end -= 2;
  if (end === 0) return "";
  return b.slice(0, end) + "\r\n";
}

const CRLF = Buffer.from("\r\n");

/**
 * SHA-256 of the relaxed body. Our composers write CRLF line ends, and our quoted-printable never
 * has runs of whitespace or trailing spaces, so usually the bytes are hashed as they are.
 */
function bodyHash(raw: Buffer, plain = false, start = 0): string {
  const h = createHash("sha256");
  if (!plain && (raw.indexOf("\t", start) >= 0 || raw.indexOf("  ", start) >= 0 || raw.indexOf(" \r\n", start) >= 0 || raw[raw.length - 1] === 0x20)) {
    return h.update(relaxedBody(raw.toString("latin1", start)), "latin1").digest("base64");
  }
  let end = raw.length;
  while (end - 2 >= start && raw[end - 1] === 0x0a && raw[end - 2] === 0x0d) end -= 2;
  if (end > start) h.update(raw.subarray(start, end)).update(CRLF);
  return h.digest("base64");
}

export function prepareDkim(msg: RawMessage, p: DkimSigningParams): PreparedDkim {
  const fields = parseHeaderBlock(msg.head);
  const last = new Map<string, HeaderField>();
  for (const f of fields) last.set(f.name, f); // the bottom-most instance is the one signed
  const names: string[] = [];
  const canon: string[] = [];
  for (const n of SIGNED_HEADERS) {
    const f = last.get(n);
    if (f) {
      names.push(n);
      canon.push(relaxedHeader(n, f.value));
    }
    // The extra h= entry matches no instance and contributes nothing to the signed data (RFC 6376 5.4.2).
    if (OVERSIGNED_HEADERS.has(n)) names.push(n);
  }
  const bh = bodyHash(msg.body, msg.plain);
  const headerPrefix =
    `DKIM-Signature: v=1; a=${p.algorithm ?? "rsa-sha256"}; c=relaxed/relaxed; d=${p.domain}; q=dns/txt;\r\n` +
    ` s=${p.selector}; t=${Math.floor(p.timeMs / 1000)};\r\n` +
    ` h=${foldList(names)};\r\n` +
    ` bh=${bh};\r\n` +
    ` b=`;
  const data = canon.join("\r\n") + "\r\n" + relaxedHeader("dkim-signature", headerPrefix.slice("DKIM-Signature:".length));
  return { headerPrefix, data };
}

/** h= folded so no header line passes 78 columns. */
function foldList(names: string[]): string {
  let out = "";
  let line = 3;
  for (let i = 0; i < names.length; i++) {
    const piece = names[i]! + (i < names.length - 1 ? ":" : "");
    if (line + piece.length > 72) {
      out += "\r\n  ";
      line = 2;
    }
    out += piece;
    line += piece.length;
  }
  return out;
}

/** The complete DKIM-Signature header line (with its CRLF) carrying `signatureB64`. */
export function dkimHeader(prepared: PreparedDkim, signatureB64: string): string {
  const folded = signatureB64.replace(/.{1,72}/g, (m, off: number) => (off === 0 ? m : "\r\n  " + m));
  return prepared.headerPrefix + folded + "\r\n";
}

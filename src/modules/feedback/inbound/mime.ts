// A deliberately small MIME walker for machine-generated reports (RFC 3462/6522 multipart/report).
// mailparser folds message/delivery-status into the text body, so the report parts are read here.
// Tolerant by design: inbound messages may be truncated (we keep only the head of big ones),
// boundaries may be missing, encodings odd. Never throws on bad input.

export interface MimePart {
  headers: Map<string, string>;
  contentType: string;
  params: Record<string, string>;
  /** Decoded body (transfer encoding undone) for leaf parts; raw text for multiparts. */
  body: string;
  parts: MimePart[];
}

const MAX_DEPTH = 6;
const MAX_PARTS = 64;

/** Parses an RFC 5322 header block (unfolding continuation lines). Keys are lower-case; the first occurrence wins. */
export function parseHeaderBlock(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let name: string | null = null;
  let value = "";
  const flush = () => {
    if (name !== null && !out.has(name)) out.set(name, value.trim());
  };
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && name !== null) {
      value += " " + line.trim();
      continue;
    }
    flush();
    const colon = line.indexOf(":");
    if (colon <= 0) {
      name = null;
      continue;
    }
    name = line.slice(0, colon).trim().toLowerCase();
    value = line.slice(colon + 1);
  }
  flush();
  return out;
}

/** Splits `value; a=b; c="d"` into the value (lower-case) and its parameters. */
export function parseParams(header: string | undefined): { value: string; params: Record<string, string> } {
  if (!header) return { value: "", params: {} };
  const params: Record<string, string> = {};
  const semi = header.indexOf(";");
  const value = (semi < 0 ? header : header.slice(0, semi)).trim().toLowerCase();
  const rest = semi < 0 ? "" : header.slice(semi + 1);
  const re = /([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(rest))) params[m[1]!.toLowerCase()] = (m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : m[3]!).trim();
  return { value, params };
}

function splitHead(text: string): { head: string; body: string } {
  const m = /\r?\n\r?\n/.exec(text);
  if (!m) return { head: text, body: "" };
  return { head: text.slice(0, m.index), body: text.slice(m.index + m[0].length) };
}

function decodeBody(body: string, encoding: string | undefined): string {
  const enc = (encoding ?? "").trim().toLowerCase();
  if (enc === "base64") {
    try {
      return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ""), "base64").toString("utf8");
    } catch {
      return body;
    }
  }
  if (enc === "quoted-printable") {
    const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-Fa-f]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, "latin1").toString("utf8");
  }
  return body;
}

/** Parses a whole message (or part) into a tree. */
export function parseMime(input: string | Buffer, depth = 0): MimePart {
  const text = typeof input === "string" ? input : input.toString("latin1");
  const { head, body } = splitHead(text);
  const headers = parseHeaderBlock(head);
  const { value: contentType, params } = parseParams(headers.get("content-type") ?? "text/plain");
  const part: MimePart = { headers, contentType: contentType || "text/plain", params, body: "", parts: [] };
  if (contentType.startsWith("multipart/") && params.boundary && depth < MAX_DEPTH) {
    part.body = body;
    part.parts = splitMultipart(body, params.boundary).map((p) => parseMime(p, depth + 1));
    return part;
  }
  part.body = decodeBody(body, headers.get("content-transfer-encoding"));
  return part;
}

function splitMultipart(body: string, boundary: string): string[] {
  const delim = "--" + boundary;
  const lines = body.split(/\r?\n/);
  const parts: string[] = [];
  let current: string[] | null = null;
  for (const line of lines) {
    if (line.startsWith(delim)) {
      const rest = line.slice(delim.length);
      if (rest.startsWith("--")) {
        if (current) parts.push(current.join("\r\n"));
        current = null;
        break;
      }
      if (rest.trim() === "") {
        if (current) parts.push(current.join("\r\n"));
        if (parts.length >= MAX_PARTS) return parts;
        current = [];
        continue;
      }
    }
    current?.push(line);
  }
  if (current) parts.push(current.join("\r\n")); // truncated message: keep what arrived
  return parts;
}

/** Every part of the tree, depth first. */
export function walk(part: MimePart): MimePart[] {
  return [part, ...part.parts.flatMap(walk)];
}

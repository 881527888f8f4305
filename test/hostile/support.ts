// Hostile-input helpers: HTTP over a raw socket, for what fetch will not send (a path with `..` or
// `%2e%2e` kept as written, a body on a GET, 50 MB uploaded while the answer is read).
import net from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  /** The body as received (de-chunked when the answer was chunked). */
  body: string;
  /** Whether the body arrived whole: as long as its Content-Length, or the chunked terminator seen. */
  complete: boolean;
  /** A socket error seen after the answer (the server closing on an upload it will not read). */
  error?: string;
}

export interface RawRequest {
  method: string;
  /** Sent as written, not normalised. */
  path: string;
  headers?: Record<string, string>;
  /** A small body, sent with its Content-Length. */
  body?: string;
  /** A large body of `bytes` 'a's, declared with Content-Length or sent chunked, written while the answer is read. */
  upload?: { bytes: number; chunked: boolean };
}

/** An HTTP/1.1 answer as received on a socket, checked for completeness. */
export function parseAnswer(buf: Buffer, error?: string): RawAnswer {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: "", complete: false, error };
  const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0]!)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  let raw = buf.subarray(end + 4);
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    const parts: Buffer[] = [];
    let complete = false;
    for (;;) {
      const nl = raw.indexOf("\r\n");
      if (nl < 0) break;
      const size = parseInt(raw.subarray(0, nl).toString(), 16);
      if (!Number.isFinite(size)) break;
      if (size === 0) {
        complete = true;
        break;
      }
      if (raw.length < nl + 2 + size) break;
      parts.push(raw.subarray(nl + 2, nl + 2 + size));
      raw = raw.subarray(nl + 2 + size + 2);
    }
    return { status, headers, body: Buffer.concat(parts).toString("utf8"), complete, error };
  }
  const length = headers["content-length"] === undefined ? -1 : Number(headers["content-length"]);
  return { status, headers, body: raw.toString("utf8"), complete: length < 0 || raw.length === length, error };
}

/** One request on its own connection (`Connection: close`); resolves when the server closes it. */
export function rawHttp(baseUrl: string, req: RawRequest, timeoutMs = 20_000): Promise<RawAnswer> {
  const u = new URL(baseUrl);
  const headers: Record<string, string> = { host: u.host, connection: "close", ...req.headers };
  if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
  if (req.upload) {
    if (req.upload.chunked) headers["transfer-encoding"] = "chunked";
    else headers["content-length"] = String(req.upload.bytes);
  }
  const head = `${req.method} ${req.path} HTTP/1.1\r\n` + Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n";
  return new Promise((resolve) => {
    const sock = net.connect(Number(u.port), u.hostname);
    const got: Buffer[] = [];
    let error: string | undefined;
    let sent = 0;
    const piece = Buffer.alloc(256 * 1024, 0x61);
    const framed = req.upload?.chunked ? Buffer.concat([Buffer.from(piece.length.toString(16) + "\r\n"), piece, Buffer.from("\r\n")]) : piece;
    const pump = (): void => {
      if (!req.upload || sock.destroyed) return;
      while (sent < req.upload.bytes) {
        sent += piece.length;
        if (!sock.write(framed)) {
          sock.once("drain", pump);
          return;
        }
      }
      if (req.upload.chunked) sock.write("0\r\n\r\n");
    };
    sock.on("connect", () => {
      sock.write(head + (req.body ?? ""));
      pump();
    });
    sock.on("data", (d) => got.push(Buffer.from(d)));
    sock.on("error", (e) => (error = String(e)));
    const timer = setTimeout(() => sock.destroy(), timeoutMs);
    sock.on("close", () => {
      clearTimeout(timer);
      resolve(parseAnswer(Buffer.concat(got), error));
    });
  });
}

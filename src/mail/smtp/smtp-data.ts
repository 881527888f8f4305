// A message as the SMTP DATA command carries it (RFC 5321 4.5.2): CRLF line ends only, and a dot
// starting a line doubled. Done where the message is built (the build worker), so the main thread
// writes the bytes to the socket as they are (smtp-client.ts) instead of running them through a
// byte-by-byte stream transform. Our composer writes CRLF and encodes leading dots (qp.ts), so
// the checks find nothing to do for almost every message.
import { acquireBuffer, releaseBuffer } from "../message/buffers";

const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;

/** Whether every CR and LF in `b` is part of a CRLF pair. */
function hasCrlfOnly(b: Buffer): boolean {
  for (let i = b.indexOf(LF); i >= 0; i = b.indexOf(LF, i + 1)) if (i === 0 || b[i - 1] !== CR) return false;
  for (let i = b.indexOf(CR); i >= 0; i = b.indexOf(CR, i + 1)) if (b[i + 1] !== LF) return false;
  return true;
}

/** `b` with every CR, LF and CRLF written as CRLF, and (stuffDots) a dot starting a line doubled. */
function rewrite(b: Buffer, stuffDots: boolean): Buffer {
  const out = acquireBuffer(b.length * 2 + 1);
  let o = 0;
  let lineStart = true;
  for (let i = 0; i < b.length; i++) {
    const c = b[i]!;
    if (c === CR || c === LF) {
      if (c === CR && b[i + 1] === LF) i++;
      out[o++] = CR;
      out[o++] = LF;
      lineStart = true;
      continue;
    }
    if (stuffDots && lineStart && c === DOT) out[o++] = DOT;
    out[o++] = c;
    lineStart = false;
  }
  return out.subarray(0, o);
}

/**
 * `b` with bare CRs and LFs turned into CRLF (`b` itself when there are none). Must run before
 * DKIM hashes the body: nodemailer's MailComposer writes 7bit parts with the text's own line ends.
 */
export function crlfLineEnds(b: Buffer): Buffer {
  return hasCrlfOnly(b) ? b : rewrite(b, false);
}

/** Whether `b` already has CRLF line ends only and no line starting with a dot. */
export function isSmtpReady(b: Buffer): boolean {
  if (b.length && b[0] === DOT) return false;
  for (let i = b.indexOf(LF); i >= 0; i = b.indexOf(LF, i + 1)) {
    if (i === 0 || b[i - 1] !== CR || b[i + 1] === DOT) return false;
  }
  for (let i = b.indexOf(CR); i >= 0; i = b.indexOf(CR, i + 1)) {
    if (b[i + 1] !== LF) return false;
  }
  return true;
}

/**
 * `raw` ready for DATA (the terminating "." line is added by the client). Returns `raw` itself when it
 * already is. `plainBody`: the length of a body known to be ready (RawMessage.plain): only the
 * headers before it are looked at.
 */
export function toSmtpData(raw: Buffer, plainBody = 0): Buffer {
  if (isSmtpReady(plainBody ? raw.subarray(0, raw.length - plainBody) : raw)) return raw;
  const out = rewrite(raw, true);
  releaseBuffer(raw);
  return out;
}

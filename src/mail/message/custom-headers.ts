// Custom headers a sender may add: no CR/LF anywhere (header injection), values at most 998
// characters, names per RFC 5322 (printable ASCII without ':'), and never a header the engine
// owns or that would change who the message is from or to.
import type { FieldError } from "../../http/errors";

export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  "from",
  "sender",
  "to",
  "cc",
  "bcc",
  "reply-to",
  "subject",
  "date",
  "message-id",
  "mime-version",
  "content-type",
  "content-transfer-encoding",
  "content-disposition",
  "content-id",
  "dkim-signature",
  "arc-seal",
  "arc-message-signature",
  "arc-authentication-results",
  "authentication-results",
  "received",
  "received-spf",
  "return-path",
  "delivered-to",
]);

export const MAX_CUSTOM_HEADERS = 50;
export const MAX_HEADER_VALUE = 998;
const NAME = /^[\x21-\x39\x3b-\x7e]{1,76}$/;

export function checkCustomHeaders(headers: unknown, field = "headers"): { headers: Record<string, string>; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const out: Record<string, string> = {};
  if (headers === undefined || headers === null) return { headers: out, errors };
  // An object of strings only: a string or an array is never read as headers named by its indexes.
  if (typeof headers !== "object" || Array.isArray(headers)) {
    errors.push({ field, message: "Expected an object", code: "invalid_type", received: Array.isArray(headers) ? "array" : typeof headers });
    return { headers: out, errors };
  }
  const seen = new Set<string>();
  const entries = Object.entries(headers);
  const notString = entries.filter(([, v]) => typeof v !== "string");
  if (notString.length) {
    for (const [k, v] of notString.slice(0, 20)) errors.push({ field: `${field}.${k}`, message: "Header values must be strings", code: "invalid_type", received: v === null ? "null" : typeof v });
    return { headers: out, errors };
  }
  if (entries.length > MAX_CUSTOM_HEADERS) {
    errors.push({ field, message: `At most ${MAX_CUSTOM_HEADERS} custom headers`, code: "too_big" });
    return { headers: out, errors };
  }
  for (const [name, value] of entries as [string, string][]) {
    const f = `${field}.${name}`;
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) {
      errors.push({ field: f, message: "Header names and values must not contain CR or LF (header injection)", code: "invalid_string" });
      continue;
    }
    if (!NAME.test(name)) {
      errors.push({ field: f, message: "Invalid header name (printable ASCII without ':' or spaces, at most 76 characters)", code: "invalid_string", received: name });
      continue;
    }
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      errors.push({ field: f, message: `The ${name} header is set by the service and cannot be overridden`, code: "reserved_header" });
      continue;
    }
    if (seen.has(lower)) {
      errors.push({ field: f, message: `Duplicate header ${name}`, code: "invalid_string" });
      continue;
    }
    if (value.length > MAX_HEADER_VALUE) {
      errors.push({ field: f, message: `Header values are at most ${MAX_HEADER_VALUE} characters`, code: "too_big" });
      continue;
    }
    if (/[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/.test(value)) {
      errors.push({ field: f, message: "Header values must not contain control characters", code: "invalid_string" });
      continue;
    }
    seen.add(lower);
    out[name] = value;
  }
  return { headers: out, errors };
}

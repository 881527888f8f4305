/**
 * One error hierarchy, mapped to the spec's envelope in one place (errorEnvelope / toErrorResponse).
 * Services throw these; routes never build error bodies by hand.
 */
export interface FieldError {
  field: string;
  message: string;
  code: string;
  received?: unknown;
}

export interface ErrorExtra {
  errors?: FieldError[];
  details?: Record<string, unknown>;
  suggestion?: string;
  headers?: Record<string, string>;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: ErrorExtra = {},
  ) {
    super(message);
  }
}

/** The spec's bare `{ error: "..." }` body, used only where the spec names it. */
export class BareError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export const badRequest = (message: string, extra?: ErrorExtra) => new AppError(400, "BAD_REQUEST", message, extra);
export const unauthorized = (message = "Authentication required") => new AppError(401, "UNAUTHORIZED", message);
export const invalidApiKey = (message = "Invalid API key") =>
  new AppError(401, "INVALID_API_KEY", message, {
    suggestion: "Send 'Authorization: Bearer <key>' with the project's secret key (sk_…); the public key (pk_…) is accepted only by /v1/track.",
  });
export const forbidden = (message = "Forbidden") => new AppError(403, "FORBIDDEN", message);
export const notFound = (what = "Resource") => new AppError(404, "NOT_FOUND", `${what} not found`);
export const conflict = (message: string, details?: Record<string, unknown>) => new AppError(409, "CONFLICT", message, { details });
export const invalidState = (message: string, details?: Record<string, unknown>) =>
  new AppError(409, "INVALID_STATE", message, { details });
export const payloadTooLarge = (message: string) => new AppError(413, "PAYLOAD_TOO_LARGE", message);
export const validationError = (errors: FieldError[], message = "Validation failed") =>
  new AppError(422, "VALIDATION_ERROR", message, { errors });
/** Shorthand for a single-field 422. */
export const invalidField = (field: string, message: string, code = "invalid", received?: unknown) =>
  validationError([{ field, message, code, ...(received !== undefined ? { received } : {}) }]);
/** The spec's odd case: an unverified sender domain is 403 with code INTERNAL_SERVER_ERROR. */
export const senderDomainNotVerified = (domain: string) =>
  new AppError(403, "INTERNAL_SERVER_ERROR", `The sender domain "${domain}" is not verified for this project`, {
    details: { domain },
    suggestion: "Add the domain with POST /domains, publish its DNS records and verify it with GET /domains/:id/verify.",
  });

/** `at`: the service clock's now (epoch ms), so an error's timestamp agrees with every other time the service shows. */
export function errorEnvelope(status: number, code: string, message: string, requestId: string, extra: ErrorExtra = {}, at = Date.now()) {
  const error: Record<string, unknown> = { code, message, statusCode: status, requestId };
  if (extra.errors) error.errors = extra.errors;
  if (extra.details) error.details = extra.details;
  if (extra.suggestion) error.suggestion = extra.suggestion;
  return { success: false as const, error, timestamp: new Date(at).toISOString() };
}

// ---- TypeBox validation errors -> field errors -------------------------------------------------

interface TypeBoxError {
  type: number;
  path: string;
  value: unknown;
  message: string;
  schema?: any;
}

// Numbers of TypeBox 0.34's ValueErrorType.
const CODE_BY_TYPE: Record<number, string> = {
  2: "too_big", // ArrayMaxItems
  4: "too_small", // ArrayMinItems
  6: "invalid_type",
  14: "invalid_type",
  22: "too_big",
  23: "too_small",
  24: "too_big",
  25: "too_small",
  27: "invalid_type",
  32: "invalid_literal",
  35: "invalid_type",
  36: "too_big",
  37: "too_small",
  38: "too_big",
  39: "too_small",
  41: "invalid_type",
  42: "unrecognized_keys",
  43: "too_big",
  44: "too_small",
  45: "invalid_type", // required property missing
  46: "invalid_type",
  50: "invalid_string", // format (email, uuid, date-time…)
  51: "too_big",
  52: "too_small",
  53: "invalid_string",
  54: "invalid_type",
  62: "invalid_union",
};

const SECRET_FIELD = /password|secret|token/i;

function fieldOf(path: string): string {
  const f = path.replace(/^\//, "").split("/").join(".");
  return f || "body";
}

export function fieldErrorsFromTypeBox(all: TypeBoxError[]): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of all) {
    const field = fieldOf(e.path ?? "");
    let code = CODE_BY_TYPE[e.type] ?? "invalid";
    if (e.type === 62 && Array.isArray(e.schema?.anyOf) && e.schema.anyOf.every((s: any) => "const" in s)) {
      code = "invalid_enum_value";
    }
    const key = `${field}:${code}`;
    if (seen.has(key)) continue;
    seen.add(key);
    let message = e.message;
    if (e.type === 45) message = "Required";
    else if (e.type === 50 && e.schema?.format) message = `Invalid ${e.schema.format}`;
    else if (code === "invalid_enum_value") message = `Expected one of: ${e.schema.anyOf.map((s: any) => JSON.stringify(s.const)).join(", ")}`;
    const entry: FieldError = { field, message, code };
    // Never echo secrets back.
    const received = e.type === 45 ? "undefined" : SECRET_FIELD.test(field) ? undefined : describeReceived(e.value);
    if (received !== undefined) entry.received = received;
    out.push(entry);
    if (out.length >= 20) break;
  }
  return out;
}

function describeReceived(v: unknown): unknown {
  if (v === undefined) return "undefined";
  if (v === null) return null;
  if (typeof v === "string") return v.length > 200 ? v.slice(0, 200) + "…" : v;
  if (typeof v === "number" || typeof v === "boolean") return v;
  return Array.isArray(v) ? "array" : typeof v;
}

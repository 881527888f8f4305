import { isForeignKeyViolation, isTransientConflict, isUniqueViolation } from "../db/errors";
import { Elysia } from "elysia";
import { rejectedBodies, unreadBodies } from "./body";
import type { Logger } from "./logger";
import { AppError, BareError, errorEnvelope, fieldErrorsFromTypeBox, type ErrorExtra } from "./errors";

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}) {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
}

/**
 * Requests whose body was not valid JSON (see server.ts onParse). The parser yields an empty object
 * instead of failing, so authentication answers first; the body validation error that follows is a 400.
 */
export const malformedBodies = new WeakSet<Request>();

/**
 * Maps every thrown error to the spec's envelope (or the bare `{ error }` form), with a requestId.
 * Unknown errors are logged with their stack and answered as a plain 500 without details.
 */
export function errorPlugin(log: Logger, now: () => number = Date.now) {
  // Every envelope carries the service clock's time.
  const envelope = (status: number, code: string, message: string, requestId: string, extra?: ErrorExtra) => errorEnvelope(status, code, message, requestId, extra, now());
  return new Elysia({ name: "mailsvc-errors" })
    .onError({ as: "global" }, (c) => {
      // Whatever goes wrong while mapping (a validator error whose details overflow the stack, an
      // unexpected value), the client still gets the envelope: the mapper itself never throws.
      try {
        return mapError(c);
      } catch (err) {
        try {
          log.error("error mapper failed", { error: String((err as Error)?.stack ?? err).slice(0, 2000) });
        } catch {}
        const status = c.code === "VALIDATION" ? 422 : 500;
        const code = status === 422 ? "VALIDATION_ERROR" : "INTERNAL_SERVER_ERROR";
        const requestId = crypto.randomUUID();
        c.set.status = status;
        return jsonResponse(status, envelope(status, code, status === 422 ? "Request validation failed" : "An unexpected error occurred", requestId), {
          "x-request-id": requestId,
        });
      }
    });

  /** Whether the request carries a body (declared or chunked), without touching the body stream. */
  function hasBody(request: Request): boolean {
    const length = request.headers.get("content-length");
    return (length !== null && length !== "0") || request.headers.has("transfer-encoding");
  }

  function mapError({ code, error, set, request }: { code: unknown; error: unknown; set: { status?: unknown; headers?: Record<string, unknown> }; request: Request }) {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        set.status = status;
        return jsonResponse(status, body, headers);
      };
      const requestId = crypto.randomUUID();
      const headers: Record<string, string> = { "x-request-id": requestId };
      // The rest of an unread body (refused, or never read: an unknown route, a failed authentication)
      // is not drained before answering: the connection ends instead.
      if (unreadBodies.has(request) || (hasBody(request) && !request.bodyUsed)) headers.connection = "close";
      for (const [k, v] of Object.entries(set.headers ?? {})) {
        if (typeof v === "string" && /^(ratelimit-|access-control-)/i.test(k)) headers[k] = v;
      }

      // Elysia wraps what a parse hook throws (our 413 / 400 for bodies) in a ParseError: unwrap ours.
      if (code === "PARSE" && (error as { cause?: unknown })?.cause instanceof AppError) error = (error as { cause: AppError }).cause;
      if (error instanceof BareError) return json(error.status, { error: error.message }, headers);
      if (error instanceof AppError) {
        return json(error.status, envelope(error.status, error.code, error.message, requestId, error.extra), {
          ...headers,
          ...error.extra.headers,
        });
      }
      switch (code) {
        case "VALIDATION": {
          const v = error as any;
          const rejected = v.type === "body" ? rejectedBodies.get(request) : undefined;
          if (rejected) {
            return json(rejected.status, envelope(rejected.status, rejected.code, rejected.message, requestId, rejected.extra), headers);
          }
          if (v.type === "body" && malformedBodies.has(request)) {
            return json(400, envelope(400, "BAD_REQUEST", "Malformed request body: expected valid JSON", requestId), headers);
          }
          const errors = validationFieldErrors(v);
          const where = v.type as string;
          if (where === "body") {
            return json(422, envelope(422, "VALIDATION_ERROR", "Request validation failed", requestId, { errors }), headers);
          }
          return json(400, envelope(400, "BAD_REQUEST", `Invalid ${where} parameters`, requestId, { errors }), headers);
        }
        case "PARSE":
          return json(400, envelope(400, "BAD_REQUEST", "Malformed request body: expected valid JSON", requestId), headers);
        case "NOT_FOUND":
          return json(
            404,
            envelope(404, "NOT_FOUND", `No route for ${request.method} ${new URL(request.url).pathname}`, requestId),
            headers,
          );
        case "INVALID_COOKIE_SIGNATURE":
          return json(401, envelope(401, "UNAUTHORIZED", "Invalid session cookie", requestId), headers);
      }
      // A validator (or parser) that recursed into a pathologically nested value: the input's fault.
      if (error instanceof RangeError && /call stack/i.test(error.message)) {
        return json(
          422,
          envelope(422, "VALIDATION_ERROR", "Request validation failed", requestId, {
            errors: [{ field: "body", message: "Value nests too deeply", code: "too_deep" }],
          }),
          headers,
        );
      }
      // Elysia failing while it describes a validation failure (e.g. a value whose `toString` is not a
      // function: "No default value"): the input is what is wrong.
      if (/\bnew ValidationError\b|\bmapValueError\b/.test(String((error as Error)?.stack ?? ""))) {
        return json(
          422,
          envelope(422, "VALIDATION_ERROR", "Request validation failed", requestId, {
            errors: [{ field: "body", message: "Invalid value", code: "invalid" }],
          }),
          headers,
        );
      }
      const status = (error as any)?.status;
      if (typeof status === "number" && status === 413) {
        return json(413, envelope(413, "PAYLOAD_TOO_LARGE", "Request body too large", requestId), headers);
      }
      // A write that lost a race the code did not foresee (a constraint, a deadlock between instances):
      // the client may try again; never a 500 for it.
      if (isUniqueViolation(error) || isForeignKeyViolation(error) || isTransientConflict(error)) {
        log.warn("write lost a race", { requestId, method: request.method, url: request.url, error: String((error as Error)?.message ?? error).slice(0, 500) });
        return json(409, envelope(409, "CONFLICT", "The request collided with a concurrent change; try it again", requestId), headers);
      }
      log.error("unhandled error", {
        requestId,
        method: request.method,
        url: request.url,
        code: String(code),
        error: String((error as Error)?.stack ?? error),
      });
      return json(500, envelope(500, "INTERNAL_SERVER_ERROR", "An unexpected error occurred", requestId), headers);
  }
}

/** Field errors of an Elysia validation error; a validator that fails while describing them gives one generic entry. */
function validationFieldErrors(v: { all?: unknown; type?: string }) {
  try {
    const all = v.all;
    const errors = fieldErrorsFromTypeBox(Array.isArray(all) ? all : []);
    if (errors.length) return errors;
  } catch {
    // e.g. RangeError from a deeply nested value: fall through to the generic entry.
  }
  return [{ field: v.type === "body" ? "body" : String(v.type ?? "request"), message: "Invalid value", code: "invalid" }];
}

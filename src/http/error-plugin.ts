import { Elysia } from "elysia";
import type { Logger } from "./logger";
import { AppError, BareError, errorEnvelope, fieldErrorsFromTypeBox } from "./errors";

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
export function errorPlugin(log: Logger) {
  return new Elysia({ name: "mailsvc-errors" })
    .onError({ as: "global" }, ({ code, error, set, request }) => {
      const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        set.status = status;
        return jsonResponse(status, body, headers);
      };
      const requestId = crypto.randomUUID();
      const headers: Record<string, string> = { "x-request-id": requestId };
      for (const [k, v] of Object.entries(set.headers ?? {})) {
        if (typeof v === "string" && /^(ratelimit-|access-control-)/i.test(k)) headers[k] = v;
      }

      if (error instanceof BareError) return json(error.status, { error: error.message }, headers);
      if (error instanceof AppError) {
        return json(error.status, errorEnvelope(error.status, error.code, error.message, requestId, error.extra), {
          ...headers,
          ...error.extra.headers,
        });
      }
      switch (code) {
        case "VALIDATION": {
          const v = error as any;
          if (v.type === "body" && malformedBodies.has(request)) {
            return json(400, errorEnvelope(400, "BAD_REQUEST", "Malformed request body: expected valid JSON", requestId), headers);
          }
          const errors = fieldErrorsFromTypeBox(v.all ?? []);
          const where = v.type as string;
          if (where === "body") {
            return json(422, errorEnvelope(422, "VALIDATION_ERROR", "Request validation failed", requestId, { errors }), headers);
          }
          return json(400, errorEnvelope(400, "BAD_REQUEST", `Invalid ${where} parameters`, requestId, { errors }), headers);
        }
        case "PARSE":
          return json(400, errorEnvelope(400, "BAD_REQUEST", "Malformed request body: expected valid JSON", requestId), headers);
        case "NOT_FOUND":
          return json(
            404,
            errorEnvelope(404, "NOT_FOUND", `No route for ${request.method} ${new URL(request.url).pathname}`, requestId),
            headers,
          );
        case "INVALID_COOKIE_SIGNATURE":
          return json(401, errorEnvelope(401, "UNAUTHORIZED", "Invalid session cookie", requestId), headers);
      }
      const status = (error as any)?.status;
      if (typeof status === "number" && status === 413) {
        return json(413, errorEnvelope(413, "PAYLOAD_TOO_LARGE", "Request body too large", requestId), headers);
      }
      log.error("unhandled error", {
        requestId,
        method: request.method,
        url: request.url,
        code: String(code),
        error: String((error as Error)?.stack ?? error),
      });
      return json(500, errorEnvelope(500, "INTERNAL_SERVER_ERROR", "An unexpected error occurred", requestId), headers);
    });
}

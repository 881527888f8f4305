import { Elysia } from "elysia";

const ALLOW_HEADERS = "authorization, content-type, idempotency-key, x-project-id";
const ALLOW_METHODS = "GET, POST, PUT, PATCH, DELETE, OPTIONS";
const EXPOSE_HEADERS = "ratelimit-limit, ratelimit-remaining, ratelimit-reset, retry-after, x-request-id";

/**
 * CORS for key-authenticated calls from browsers (the public key on /v1/track is meant for
 * client-side use). Any origin, never with credentials: session cookies are not sent cross-site,
 * so the dashboard endpoints stay same-origin.
 */
export function corsPlugin() {
  return new Elysia({ name: "mailsvc-cors" })
    .onRequest(({ request, set }) => {
      if (!request.headers.get("origin")) return;
      set.headers["access-control-allow-origin"] = "*";
      set.headers["access-control-expose-headers"] = EXPOSE_HEADERS;
      if (request.method === "OPTIONS") {
        return new Response(null, {
          status: 204,
          headers: {
            "access-control-allow-origin": "*",
            "access-control-allow-methods": ALLOW_METHODS,
            "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? ALLOW_HEADERS,
            "access-control-max-age": "86400",
          },
        });
      }
    })
    .as("global");
}

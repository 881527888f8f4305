// The "/openapi" entry point: the package root also re-registers TypeBox string formats (email among
// them) globally as a side effect, which would change how request bodies validate.
import { toOpenAPISchema } from "@elysiajs/openapi/openapi";
import { Elysia } from "elysia";
import type { AppContext } from "../context";
import { VERSION } from "../version";
import { ROUTE_DOCS, TAGS, type DocAuth, type RouteDoc } from "./openapi-docs";
// The renderer's files are embedded in the binary (no CDN: /docs works offline).
// @ts-ignore: a file import (Bun gives its embedded path)
import bundlePath from "swagger-ui-dist/swagger-ui-bundle.js" with { type: "file" };
// @ts-ignore: a file import
import cssPath from "swagger-ui-dist/swagger-ui.css" with { type: "file" };

/**
 * GET /openapi.json: OpenAPI 3.1 generated from the routes' own TypeBox schemas by
 * @elysiajs/openapi's toOpenAPISchema, completed with what the schemas cannot say: summaries and
 * tags (openapi-docs.ts), authentication per route, and the error responses (the envelope, and
 * the spec's bare `{ error }` cases). GET /docs renders it with swagger-ui (embedded assets).
 */

type AnyApp = Elysia<any, any, any, any, any, any, any>;
type Json = Record<string, any>;

export const OPENAPI_VERSION = "3.1.0";

const envelope = {
  type: "object",
  required: ["success", "error", "timestamp"],
  properties: {
    success: { const: false },
    error: {
      type: "object",
      required: ["code", "message", "statusCode", "requestId"],
      properties: {
        code: {
          type: "string",
          examples: ["VALIDATION_ERROR"],
          description:
            "BAD_REQUEST, UNAUTHORIZED, INVALID_API_KEY, FORBIDDEN, PROJECT_DISABLED, NOT_FOUND, CONFLICT, INVALID_STATE, IDEMPOTENCY_KEY_REUSED, PAYLOAD_TOO_LARGE, VALIDATION_ERROR, RATE_LIMIT_EXCEEDED, BILLING_LIMIT_EXCEEDED, INTERNAL_SERVER_ERROR",
        },
        message: { type: "string" },
        statusCode: { type: "integer" },
        requestId: { type: "string" },
        errors: {
          type: "array",
          items: {
            type: "object",
            required: ["field", "message", "code"],
            properties: { field: { type: "string" }, message: { type: "string" }, code: { type: "string" }, received: {} },
          },
        },
        details: { type: "object", additionalProperties: true },
        suggestion: { type: "string" },
      },
    },
    timestamp: { type: "string", format: "date-time" },
  },
};

const errorResponse = (description: string) => ({ description, content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } } });

const COMPONENTS = {
  schemas: {
    ErrorEnvelope: envelope,
    BareError: { type: "object", required: ["error"], properties: { error: { type: "string" } } },
  },
  responses: {
    BadRequest: errorResponse("Malformed JSON or a bad query parameter (BAD_REQUEST)"),
    Unauthorized: errorResponse("Missing or invalid credentials (INVALID_API_KEY or UNAUTHORIZED)"),
    Forbidden: errorResponse("Not allowed (FORBIDDEN), or the project is disabled (PROJECT_DISABLED)"),
    NotFound: errorResponse("No such resource in this project (NOT_FOUND)"),
    Conflict: errorResponse("Uniqueness (CONFLICT) or state (INVALID_STATE) refusal"),
    ValidationError: errorResponse("A body field failed validation (VALIDATION_ERROR, errors[] names each field)"),
    RateLimited: {
      ...errorResponse("Too many requests for this project (RATE_LIMIT_EXCEEDED)"),
      headers: {
        "Retry-After": { schema: { type: "integer" } },
        "RateLimit-Limit": { schema: { type: "string" } },
        "RateLimit-Remaining": { schema: { type: "integer" } },
        "RateLimit-Reset": { schema: { type: "integer" } },
      },
    },
    PayloadTooLarge: errorResponse("The upload is too large (PAYLOAD_TOO_LARGE)"),
    InternalError: errorResponse("Unexpected error (INTERNAL_SERVER_ERROR), never with a stack trace"),
  },
  securitySchemes: {
    secretKey: { type: "http", scheme: "bearer", description: "The project's secret key (sk_…)" },
    publicKey: { type: "http", scheme: "bearer", description: "The project's public key (pk_…): accepted only by /v1/track, /events/track and /v1/key" },
    session: { type: "apiKey", in: "cookie", name: "token", description: "Dashboard session (set by /auth/login and /auth/signup)" },
    projectId: { type: "apiKey", in: "header", name: "X-Project-Id", description: "With a session: the project the request acts on" },
    metricsToken: { type: "http", scheme: "bearer", description: "MAILSVC_METRICS_TOKEN, when configured" },
  },
};

const SECURITY: Record<DocAuth, Json[]> = {
  secret: [{ secretKey: [] }, { session: [], projectId: [] }],
  track: [{ publicKey: [] }, { secretKey: [] }, { session: [], projectId: [] }],
  apiOnly: [{ secretKey: [] }],
  session: [{ session: [] }],
  optionalProject: [{ secretKey: [] }, { session: [] }],
  none: [],
  metrics: [{}, { metricsToken: [] }],
  token: [],
};

const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });

/** "GET /contacts/:id" from an OpenAPI path and method. */
export const routeKey = (method: string, openapiPath: string) => `${method.toUpperCase()} ${openapiPath.replace(/\{([^}]+)\}/g, ":$1")}`;

/** Keeps the content types a route really accepts: JSON, or multipart for file uploads. */
function fixRequestBody(op: Json, route: { hooks?: Json } | undefined): void {
  if (!op.requestBody) return;
  const body = route?.hooks?.body;
  const content = op.requestBody.content ?? {};
  const schema = Object.values(content)[0] ? (Object.values(content)[0] as Json).schema : undefined;
  const multipart = JSON.stringify(body ?? {}).includes('"format":"binary"') || JSON.stringify(schema ?? {}).includes('"format":"binary"');
  op.requestBody = {
    ...(op.requestBody.description ? { description: op.requestBody.description } : {}),
    required: op.requestBody.required ?? true,
    content: { [multipart ? "multipart/form-data" : "application/json"]: { schema: schema ?? {} } },
  };
}

function completeOperation(method: string, path: string, op: Json, doc: RouteDoc | undefined, route: { hooks?: Json } | undefined): void {
  fixRequestBody(op, route);
  if (doc?.fileField && !op.requestBody) {
    op.requestBody = {
      required: true,
      content: { "multipart/form-data": { schema: { type: "object", required: [doc.fileField], properties: { [doc.fileField]: { type: "string", format: "binary" } } } } },
    };
    (op.responses ??= {})["413"] = ref("PayloadTooLarge");
  }
  if (doc) {
    op.summary = doc.summary;
    if (doc.description) op.description = doc.description;
    op.tags = [doc.tag];
    op.security = SECURITY[doc.auth];
  }
  const responses: Json = op.responses ?? {};
  const okStatus = String(doc?.status ?? 200);
  if (!Object.keys(responses).some((s) => s.startsWith("2") || s.startsWith("3"))) {
    responses[okStatus] =
      doc?.status === 204
        ? { description: "No content" }
        : { description: "Success", content: { [doc?.produces ?? "application/json"]: { schema: doc?.produces && doc.produces !== "application/json" ? { type: "string" } : {} } } };
  }
  for (const [s, r] of Object.entries(responses)) {
    if (r && typeof r === "object" && (r as Json).description?.startsWith("Response for status")) (r as Json).description = s.startsWith("2") ? "Success" : `Status ${s}`;
  }
  const auth = doc?.auth ?? "none";
  const badRequest = doc?.bare400
    ? {
        description: `Malformed JSON or bad query parameter (envelope), or the spec's bare { error } when ${doc.bare400}`,
        content: { "application/json": { schema: { oneOf: [{ $ref: "#/components/schemas/ErrorEnvelope" }, { $ref: "#/components/schemas/BareError" }] } } },
      }
    : ref("BadRequest");
  if (op.requestBody || op.parameters?.some((p: Json) => p.in === "query") || doc?.bare400) responses["400"] ??= badRequest;
  if (auth !== "none" && auth !== "token") responses["401"] ??= ref("Unauthorized");
  if (auth === "secret" || auth === "track" || auth === "apiOnly" || auth === "optionalProject" || auth === "session") {
    responses["403"] ??= ref("Forbidden");
    if (auth !== "session") responses["429"] ??= ref("RateLimited");
  }
  if (/\{[^}]+\}/.test(path) && auth !== "token") responses["404"] ??= ref("NotFound");
  if (op.requestBody) responses["422"] ??= ref("ValidationError");
  responses["500"] ??= ref("InternalError");
  op.responses = responses;
  void method;
}

/** Builds the document from the assembled app's own route table. */
export function buildOpenApiDocument(app: AnyApp, ctx?: AppContext): Json {
  const routes = (app as any).getGlobalRoutes() as { method: string; path: string; hooks?: Json }[];
  // The global JSON parser is a function hook, which makes the generator list no body content
  // type: hide it so the body schema is kept (fixRequestBody then keeps the real content type).
  const view = {
    getGlobalRoutes: () => routes.map((r) => ({ ...r, hooks: { ...r.hooks, parse: undefined } })),
    getGlobalDefinitions: () => (app as any).getGlobalDefinitions?.(),
  };
  const generated = toOpenAPISchema(view as any, { staticFile: false, methods: ["options", "head"] }, undefined, undefined, OPENAPI_VERSION as any) as Json;
  const byKey = new Map(routes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r]));
  for (const [path, item] of Object.entries(generated.paths as Json)) {
    for (const [method, op] of Object.entries(item as Json)) {
      const key = routeKey(method, path);
      completeOperation(method, path, op as Json, ROUTE_DOCS[key], byKey.get(key));
    }
  }
  const servers = ctx ? [{ url: ctx.config.publicUrl }] : [];
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: "mailsvc API",
      version: VERSION,
      description:
        "Email delivery and audience service. Errors use the envelope `{ success: false, error: { code, message, statusCode, requestId, errors?, details?, suggestion? }, timestamp }`; three 400s answer a bare `{ error }` (missing email on POST /contacts, missing from on POST /templates, missing condition on a dynamic segment).",
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
    },
    servers,
    tags: TAGS,
    paths: generated.paths,
    components: { ...COMPONENTS, schemas: { ...(generated.components?.schemas ?? {}), ...COMPONENTS.schemas } },
  };
}

const DOCS_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mailsvc API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: "/openapi.json", dom_id: "#ui", deepLinking: true });</script>
</body></html>`;

/** The /openapi.json and /docs routes; `app` is the assembled app (read when first asked). */
export function apiDocsRoutes(ctx: AppContext, app: () => AnyApp) {
  let cached: string | null = null;
  return new Elysia()
    .get("/openapi.json", () => {
      cached ??= JSON.stringify(buildOpenApiDocument(app(), ctx));
      return new Response(cached, { headers: { "content-type": "application/json; charset=utf-8" } });
    })
    // Same origin as the dashboard: never framed (clickjacking), never sniffed.
    .get("/docs", () => new Response(DOCS_HTML, { headers: { "content-type": "text/html; charset=utf-8", "x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'", "x-content-type-options": "nosniff" } }))
    .get("/docs/swagger-ui-bundle.js", () => new Response(Bun.file(bundlePath), { headers: { "content-type": "application/javascript; charset=utf-8", "cache-control": "public, max-age=86400" } }))
    .get("/docs/swagger-ui.css", () => new Response(Bun.file(cssPath), { headers: { "content-type": "text/css; charset=utf-8", "cache-control": "public, max-age=86400" } }));
}

/**
 * The dashboard, served by the binary at `/` (hash routes: `/#/contacts`, so no page path can ever
 * shadow an API path). The UI source lives in ./app; ./assets holds it built (see ./bundle.ts).
 * Session requests from the UI are ordinary API calls with the `token` cookie and `X-Project-Id`;
 * the CSRF origin check for cookie writes is in src/http/auth.ts.
 */
import { Elysia } from "elysia";
import { notFound } from "../http/errors";
import type { ModuleDef } from "../http/module";

interface Served {
  type: string;
  raw: Uint8Array;
  gzip: Uint8Array;
  etag: string;
}

interface Prepared {
  html: Served;
  files: Map<string, Served>;
}

let prepared: Promise<Prepared> | null = null;

function serve(type: string, raw: Uint8Array): Served {
  return { type, raw, gzip: Bun.gzipSync(raw as Uint8Array<ArrayBuffer>), etag: `"${Bun.hash(raw).toString(36)}"` };
}

/** Loads (and from source: builds) the bundle on first use, never at start-up. */
function load(): Promise<Prepared> {
  prepared ??= import("./assets").then(({ dashboard }) => {
    const files = new Map<string, Served>();
    for (const f of dashboard.files) files.set(f.name, serve(f.type, Buffer.from(f.base64, "base64")));
    const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mailsvc</title>
<link rel="icon" href="data:,">
${dashboard.entryCss ? `<link rel="stylesheet" href="/assets/${dashboard.entryCss}">` : ""}
<script type="module" src="/assets/${dashboard.entryJs}"></script>
</head>
<body>
<div id="root"></div>
<noscript>The mailsvc dashboard needs JavaScript. The API works without it: see the README.</noscript>
</body>
</html>
`;
    return { html: serve("text/html; charset=utf-8", new TextEncoder().encode(html)), files };
  });
  return prepared;
}

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // React Flow and charts set style attributes; email previews carry inline styles.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob: http: https:",
  "connect-src 'self'",
  "frame-src 'self' about:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

function respond(request: Request, s: Served, cache: string): Response {
  const headers: Record<string, string> = {
    "content-type": s.type,
    "cache-control": cache,
    etag: s.etag,
    vary: "accept-encoding",
    "x-content-type-options": "nosniff",
  };
  if (s.type.startsWith("text/html")) {
    headers["content-security-policy"] = CSP;
    headers["referrer-policy"] = "same-origin";
    headers["x-frame-options"] = "DENY";
  }
  if (request.headers.get("if-none-match") === s.etag) return new Response(null, { status: 304, headers });
  const gz = /\bgzip\b/.test(request.headers.get("accept-encoding") ?? "");
  if (gz) headers["content-encoding"] = "gzip";
  return new Response((gz ? s.gzip : s.raw) as Uint8Array<ArrayBuffer>, { headers });
}

export function webRoutes() {
  return new Elysia()
    .get("/", async ({ request }) => respond(request, (await load()).html, "no-cache"))
    // Account emails link to these paths (src/modules/users/service.ts): hand the token to the app's page.
    .get("/auth/reset-password", ({ query, redirect }) => redirect(`/?token=${encodeURIComponent(String(query.token ?? ""))}#/reset-password`, 302))
    .get("/auth/verify-email", ({ query, redirect }) => redirect(`/?token=${encodeURIComponent(String(query.token ?? ""))}#/verify-email`, 302))
    .get("/assets/:name", async ({ request, params }) => {
      const f = (await load()).files.get(params.name);
      // The error envelope, as every other unknown path and unknown upload answers.
      if (!f) throw notFound("Asset");
      // Names carry a content hash: cache for a year.
      return respond(request, f, "public, max-age=31536000, immutable");
    });
}

export const webModule: ModuleDef = { name: "web", routes: () => webRoutes() };

import { afterAll, beforeAll, setDefaultTimeout, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROUTE_DOCS } from "../../src/http/openapi-docs";
import { startServer, type TestServer } from "../support/server";

setDefaultTimeout(30_000);

let srv: TestServer;
let doc: any;
beforeAll(async () => {
  srv = await startServer();
  const r = await srv.api("/openapi.json");
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toContain("application/json");
  doc = r.body;
}, 60_000);
afterAll(() => srv.close());

const METHODS = ["get", "post", "put", "patch", "delete"];
const toOpenApiPath = (p: string) => p.replace(/:([^/]+)/g, "{$1}");
/** The router's own table: every route the server registers. */
const routeTable = () =>
  ((srv.app as any).getGlobalRoutes() as { method: string; path: string }[])
    .filter((r) => METHODS.includes(r.method.toLowerCase()))
    .map((r) => ({ method: r.method.toUpperCase(), path: r.path }));

test("the document is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator)", async () => {
  expect(doc.openapi).toBe("3.1.0");
  const res = await new Validator().validate(structuredClone(doc));
  if (!res.valid) console.error(JSON.stringify(res.errors, null, 1).slice(0, 3000));
  expect(res.valid).toBe(true);
});

test("every registered route has a description in src/http/openapi-docs.ts", () => {
  const missing = routeTable()
    .map((r) => `${r.method} ${r.path}`)
    .filter((k) => !ROUTE_DOCS[k]);
  // A route without an entry: add "METHOD /path" to ROUTE_DOCS (summary, tag, auth).
  expect(missing).toEqual([]);
});

test("every registered route is in the document with its summary, tag and auth; and nothing else is", () => {
  const table = routeTable();
  for (const r of table) {
    const op = doc.paths[toOpenApiPath(r.path)]?.[r.method.toLowerCase()];
    expect(op, `${r.method} ${r.path}`).toBeDefined();
    const entry = ROUTE_DOCS[`${r.method} ${r.path}`]!;
    expect(op.summary).toBe(entry.summary);
    expect(op.tags).toEqual([entry.tag]);
    expect(Array.isArray(op.security)).toBe(true);
    expect(op.responses["500"]).toBeDefined();
  }
  const documented = Object.entries(doc.paths).flatMap(([p, item]) => Object.keys(item as object).map((m) => `${m.toUpperCase()} ${p}`));
  expect(documented.sort()).toEqual(table.map((r) => `${r.method} ${toOpenApiPath(r.path)}`).sort());
  expect(Object.keys(ROUTE_DOCS).filter((k) => !table.some((r) => `${r.method} ${r.path}` === k))).toEqual([]);
});

test("auth schemes, parameters, bodies, success and error responses are described", () => {
  const s = doc.components.securitySchemes;
  expect(s.secretKey).toMatchObject({ type: "http", scheme: "bearer" });
  expect(s.session).toMatchObject({ type: "apiKey", in: "cookie", name: "token" });
  expect(s.projectId).toMatchObject({ type: "apiKey", in: "header", name: "X-Project-Id" });

  const create = doc.paths["/webhook-endpoints"].post;
  expect(create.security).toEqual([{ secretKey: [] }, { session: [], projectId: [] }]);
  const body = create.requestBody.content["application/json"].schema;
  expect(body.required.sort()).toEqual(["events", "url"]);
  expect(Object.keys(create.requestBody.content)).toEqual(["application/json"]);
  expect(create.responses["201"].content["application/json"].schema.properties.secret).toBeDefined();
  for (const code of ["400", "401", "403", "422", "429", "500"]) expect(create.responses[code]).toBeDefined();
  expect(create.responses["422"]).toEqual({ $ref: "#/components/responses/ValidationError" });
  expect(doc.components.schemas.ErrorEnvelope.properties.error.required).toEqual(["code", "message", "statusCode", "requestId"]);

  const get = doc.paths["/webhook-endpoints/{id}"].get;
  expect(get.parameters).toContainEqual(expect.objectContaining({ name: "id", in: "path", required: true }));
  expect(get.responses["404"]).toBeDefined();
  const list = doc.paths["/webhook-endpoints/{id}/deliveries"].get;
  expect(list.parameters.map((p: any) => p.name).sort()).toEqual(["cursor", "id", "limit", "status"]);

  // The spec's bare { error } cases.
  for (const [path, method] of [["/contacts", "post"], ["/templates", "post"], ["/segments", "post"]]) {
    const bad = doc.paths[path][method].responses["400"];
    expect(JSON.stringify(bad)).toContain("#/components/schemas/BareError");
  }
  expect(doc.paths["/v1/track"].post.security).toContainEqual({ publicKey: [] });
  expect(doc.paths["/v1/send"].post.security).toEqual([{ secretKey: [] }]);
  expect(doc.paths["/config"].get.security).toEqual([]);
  expect(doc.paths["/contacts/import"].post.requestBody.content["multipart/form-data"]).toBeDefined();
});

test("the curl examples of the README and docs/*.md name documented operations", () => {
  const root = join(import.meta.dir, "../..");
  const readme = ["README.md", ...readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
    .map((f) => readFileSync(join(root, f), "utf8"))
    .join("\n");
  const commands = readme.replace(/\\\n/g, " ").match(/curl [^\n`]*/g) ?? [];
  expect(commands.length).toBeGreaterThan(3);
  const ops = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.keys(item as object).map((m) => ({ m: m.toUpperCase(), re: new RegExp("^" + p.replace(/\{[^}]+\}/g, "[^/]+") + "$") })),
  );
  for (const c of commands) {
    const url = /https?:\/\/localhost:\d+(\/[^\s'"]*)/.exec(c);
    if (!url) continue;
    const path = url[1]!.split("?")[0]!;
    const method = /-X\s+(\w+)/.exec(c)?.[1]?.toUpperCase() ?? (/\s(-d|--data\S*|-F)\s/.test(c) ? "POST" : "GET");
    expect(ops.some((o) => o.m === method && o.re.test(path)), `${method} ${path} (${c.slice(0, 80)})`).toBe(true);
  }
});

test("/docs renders the document with embedded assets (no CDN)", async () => {
  const r = await fetch(srv.url + "/docs");
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toContain("text/html");
  const html = await r.text();
  expect(html).toContain("/openapi.json");
  expect(html).not.toMatch(/https?:\/\//);
  for (const [asset, type] of [["/docs/swagger-ui-bundle.js", "javascript"], ["/docs/swagger-ui.css", "text/css"]]) {
    const a = await fetch(srv.url + asset!);
    expect(a.status).toBe(200);
    expect(a.headers.get("content-type")).toContain(type!);
    expect((await a.arrayBuffer()).byteLength).toBeGreaterThan(10_000);
  }
});

test("the official Plunk SDK's calls (@plunk/node) match documented operations and request schemas", async () => {
  const { default: Ajv2020 } = await import("ajv/dist/2020");
  const { default: addFormats } = await import("ajv-formats");
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
  const { default: Plunk } = await import("@plunk/node");
  const calls: { method: string; path: string; body: unknown; status: number }[] = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = (async (input: any, init?: any) => {
    const res = await realFetch(input, init);
    calls.push({ method: init?.method ?? "GET", path: new URL(String(input)).pathname, body: init?.body ? JSON.parse(init.body) : undefined, status: res.status });
    return res;
  }) as typeof fetch;
  try {
    const acct = await (await import("../support/server")).createAccount(srv.api, "sdk");
    const pub = new Plunk(acct.publicKey, { baseUrl: srv.url + "/v1/" });
    await pub.events.track({ event: "signed-up", email: "sdk@example.com", data: { plan: "pro" }, subscribed: true });
    const sec = new Plunk(acct.secretKey, { baseUrl: srv.url + "/v1/" });
    // No verified sender domain here: the call's shape is what is checked (the API answers 403 for the domain).
    await sec.emails.send({ to: "sdk@example.com", subject: "Hi", body: "<p>Hi</p>", from: "hello@unverified.example", name: "SDK" }).catch(() => {});
  } finally {
    globalThis.fetch = realFetch;
  }
  const sdkCalls = calls.filter((c) => c.path.startsWith("/v1/"));
  expect(sdkCalls.map((c) => `${c.method} ${c.path}`)).toEqual(["POST /v1/track", "POST /v1/send"]);
  expect(sdkCalls[0]!.status).toBe(200);
  expect(sdkCalls[1]!.status).toBe(403);
  for (const c of sdkCalls) {
    const op = doc.paths[c.path]?.[c.method.toLowerCase()];
    expect(op, `${c.method} ${c.path}`).toBeDefined();
    const schema = op.requestBody.content["application/json"].schema;
    const validate = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')));
    const ok = validate(c.body);
    if (!ok) console.error(c.path, validate.errors);
    expect(ok).toBe(true);
  }
});

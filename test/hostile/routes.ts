// Shared by the fuzz test and scripts/fuzz-hostile.ts: hostile requests against every route.
import fc from "fast-check";

export interface RouteInfo {
  method: string;
  path: string;
}

/** Routes whose success would destroy the account under test (never given a valid target). */
const DESTRUCTIVE = /regenerate-keys|\/reset$|^\/users\/@me\/projects\/:id$|\/members/;

export function fuzzableRoutes(routes: { method: string; path: string }[]): RouteInfo[] {
  const seen = new Set<string>();
  const out: RouteInfo[] = [];
  for (const r of routes) {
    const method = r.method.toUpperCase();
    if (!["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method)) continue;
    const key = `${method} ${r.path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ method, path: r.path });
  }
  return out;
}

export const isDestructive = (r: RouteInfo) => DESTRUCTIVE.test(r.path);

const hugeNumbers = ["99999999999999999999999", "9223372036854775807", "8640000000000001", "-1", "0", "1e308", "NaN", "-0", "1.5", "0x10"];
const weird = ["", " ", "%00", "%FF", "a".repeat(600), "../..", "null", "[]", "{}", "true", "2024-13-45", "😀", "\u0000"];

export const paramValue = fc.oneof(fc.constantFrom(...weird, ...hugeNumbers, "00000000-0000-4000-8000-000000000000"), fc.string({ maxLength: 40 }));

export const queryString = fc
  .dictionary(
    fc.constantFrom("page", "pageSize", "limit", "cursor", "since", "from", "to", "minutes", "days", "search", "status", "sort", "dir", "interval", "metric", "subscribed", "splice"),
    fc.oneof(fc.constantFrom(...hugeNumbers, ...weird), fc.string({ maxLength: 30 })),
    { maxKeys: 4 },
  )
  .map((q) => Object.entries(q).map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&"));

const deep = fc.tuple(fc.integer({ min: 20, max: 12_000 }), fc.boolean()).map(([n, arr]) => (arr ? "[".repeat(n) + "]".repeat(n) : '{"a":'.repeat(n) + "0" + "}".repeat(n)));
const anyJson = fc.jsonValue({ maxDepth: 6 });
const fieldish = fc
  .record(
    {
      email: fc.oneof(fc.emailAddress(), anyJson),
      to: fc.oneof(fc.emailAddress(), anyJson),
      from: fc.oneof(fc.emailAddress(), anyJson),
      subject: fc.oneof(fc.string(), anyJson),
      body: fc.oneof(fc.string(), anyJson),
      name: fc.oneof(fc.string(), anyJson),
      event: fc.oneof(fc.string(), anyJson),
      data: fc.oneof(fc.dictionary(fc.string({ maxLength: 20 }), anyJson, { maxKeys: 8 }), anyJson),
      contactIds: fc.oneof(fc.array(fc.uuid(), { maxLength: 5 }), anyJson),
      emails: fc.oneof(fc.array(fc.emailAddress(), { maxLength: 5 }), anyJson),
      condition: anyJson,
      domain: fc.oneof(fc.domain(), anyJson),
      projectId: fc.oneof(fc.uuid(), anyJson),
      password: fc.string(),
      transactional: anyJson,
      file: anyJson,
    },
    { requiredKeys: [] },
  )
  .map((o) => JSON.stringify(o));

export const bodyText = fc.oneof(
  { weight: 4, arbitrary: fieldish },
  { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: deep },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.constantFrom('{"a":', "{", "[1,]", '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', "\u0000", '"str"', "123", "null") },
);

export const contentType = fc.constantFrom(
  "application/json",
  "application/json; charset=utf-8",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=zzz",
  "application/octet-stream",
  "",
);

export const authChoice = fc.constantFrom("secret", "public", "none", "garbage", "session") as fc.Arbitrary<"secret" | "public" | "none" | "garbage" | "session">;

export function fillPath(path: string, values: string[]): string {
  let i = 0;
  return path.replace(/:[A-Za-z]+|\*/g, () => encodeURIComponent(values[i++ % values.length] ?? "x").replace(/%25/g, "%"));
}

// ---- Every operation of the OpenAPI document, attacked systematically (fuzz.test.ts, scripts/fuzz-hostile.ts) ----

type Schema = Record<string, any>;

export interface Operation {
  method: string;
  /** As the document writes it: `/templates/{id}`. */
  path: string;
  params: string[];
  /** Alternatives of the operation's `security` (scheme names), `[]` for none. */
  security: string[][];
  /** Media types its request body accepts (none: it reads no body). */
  bodyTypes: string[];
  /** The JSON body's schema, when it takes one. */
  jsonSchema?: Schema;
}

/** The operations of a generated OpenAPI document (GET /openapi.json), in document order. */
export function operationsOf(doc: { paths: Record<string, Record<string, any>>; security?: any[] }): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!["get", "post", "put", "patch", "delete"].includes(method)) continue;
      const content = (op.requestBody?.content ?? {}) as Record<string, { schema?: Schema }>;
      out.push({
        method: method.toUpperCase(),
        path,
        params: [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!),
        security: ((op.security ?? doc.security ?? []) as Record<string, unknown>[]).map((alt) => Object.keys(alt)),
        bodyTypes: Object.keys(content),
        jsonSchema: content["application/json"]?.schema,
      });
    }
  }
  return out;
}

/** An Elysia route pattern as the document writes it (`/a/:id` -> `/a/{id}`). */
export const openapiPath = (route: string) => route.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

/** Operations whose success would destroy the account under test: never given its project id. */
export const isDestructiveOp = (op: Operation) => DESTRUCTIVE.test(op.path.replace(/\{([^}]+)\}/g, ":$1")) || op.path === "/auth/logout";

export interface Credentials {
  secretKey: string;
  publicKey: string;
  cookie: string;
  projectId: string;
}

/** Headers that pass the operation's authentication (the first alternative we hold), so the input is what is judged. */
export function authFor(op: Operation, c: Credentials): Record<string, string> {
  if (op.path === "/auth/logout") return {}; // never end the session the other requests use
  for (const alt of op.security) {
    if (alt.includes("secretKey")) return { authorization: `Bearer ${c.secretKey}` };
    if (alt.includes("session")) return alt.includes("projectId") ? { cookie: c.cookie, "x-project-id": c.projectId } : { cookie: c.cookie };
    if (alt.includes("publicKey")) return { authorization: `Bearer ${c.publicKey}` };
  }
  return {};
}

/** Path segments that are not ids: dot segments as sent and encoded, separators, bytes, length. */
export const PATH_ATTACKS = [
  "..",
  "%2e%2e",
  "%2E%2e",
  ".",
  "%2e",
  "..%2f..%2fetc%2fpasswd",
  "%2f",
  "%5c..%5c",
  "%00",
  "%ff%fe",
  "%F0%9F%98%80",
  "a".repeat(5000),
  "99999999999999999999999",
  "-1",
];

/** The path with every parameter `value`, except `keep` (a parameter given its plausible value). */
export function attackPath(op: Operation, value: string, attacked: string, plausible: (param: string) => string): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, p: string) => (p === attacked ? value : plausible(p)));
}

/** A minimal value of a schema: required properties only, the first enum member, the minimum. */
export function sampleOf(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || typeof schema !== "object" || depth > 6) return "x";
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.anyOf)) return sampleOf(schema.anyOf[0], depth + 1);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== "null") : schema.type;
  switch (type) {
    case "object": {
      const o: Record<string, unknown> = {};
      for (const k of schema.required ?? []) o[k] = sampleOf(schema.properties?.[k], depth + 1);
      return o;
    }
    case "array":
      return schema.minItems ? [sampleOf(schema.items, depth + 1)] : [];
    case "string":
      if (schema.format === "email") return "fuzz@example.com";
      if (schema.format === "uuid") return "00000000-0000-4000-8000-000000000000";
      if (schema.format === "date-time") return "2024-01-01T00:00:00.000Z";
      if (typeof schema.pattern === "string" && schema.pattern.startsWith("^https?:")) return "https://example.com/";
      return "x".repeat(Math.max(1, schema.minLength ?? 1));
    case "integer":
    case "number":
      return schema.minimum ?? 1;
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return "x";
  }
}

/** Values of every JSON type, and a long string: each sent where the schema wants another type. */
export const WRONG_VALUES: unknown[] = ["str", 12345, -1.5, true, null, [1, "a", { b: null }], { a: { b: [1] } }, "x".repeat(20_000)];

const jsonType = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v);

/** Whether the schema (by its declared `type`) accepts a value of this JSON type; a schema without one accepts anything. */
function typeAccepts(schema: Schema | undefined, v: unknown): boolean {
  if (!schema || schema.type === undefined) return !!schema && Object.keys(schema).length === 0;
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  const t = jsonType(v);
  return types.includes(t) || (t === "integer" && types.includes("number"));
}

/**
 * Bodies with one field of the wrong JSON type each (top-level fields and the fields of nested
 * objects), the rest minimal and valid; and the whole body as every other JSON type.
 * `[field, body]`, field "" for the whole body.
 */
export function wrongTypeBodies(schema: Schema): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const v of ["str", 12345, true, null, [], [{}]]) if (!typeAccepts(schema, v)) out.push(["", v]);
  const base = sampleOf(schema);
  if (!base || typeof base !== "object" || Array.isArray(base)) return out;
  const visit = (props: Record<string, Schema> | undefined, path: string[], make: (v: unknown, at: string[]) => unknown) => {
    for (const [k, s] of Object.entries(props ?? {})) {
      const at = [...path, k];
      for (const v of WRONG_VALUES) if (!typeAccepts(s, v)) out.push([at.join("."), make(v, at)]);
      const nested = s?.properties ? s : Array.isArray(s?.anyOf) ? s.anyOf.find((x: Schema) => x?.properties) : undefined;
      if (nested && path.length === 0) {
        visit(nested.properties, at, (v, where) => {
          const b = structuredClone(base) as Record<string, any>;
          b[where[0]!] = { ...(sampleOf(nested) as object), [where[1]!]: v };
          return b;
        });
      }
    }
  };
  visit(schema.properties, [], (v, at) => ({ ...(base as object), [at[0]!]: v }));
  return out;
}

/** Content types a route may be sent; each route gets those it does not expect. */
export const CONTENT_TYPES = [
  "application/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=zzz",
  "multipart/form-data",
  "application/octet-stream",
  "application/xml",
  "text/html; charset=utf-8",
  "application/json; charset=utf-16",
  "image/png",
  "",
];

const baseType = (t: string) => t.split(";")[0]!.trim().toLowerCase();

export function unexpectedContentTypes(op: Operation): string[] {
  const expected = new Set(op.bodyTypes.map(baseType));
  return CONTENT_TYPES.filter((t) => !(expected.has(baseType(t)) && !t.includes("utf-16")));
}

/** Bodies sent under an unexpected content type: the route's own JSON, and one that fits the label. */
export function bodiesFor(op: Operation, type: string): string[] {
  const json = JSON.stringify(sampleOf(op.jsonSchema ?? { type: "object" }));
  const t = baseType(type);
  if (t === "application/x-www-form-urlencoded" || t === "text/plain" || t === "") return [json, "a=1&b=%ff&email=x%40example.com&__proto__=1"];
  if (t === "multipart/form-data") return [json, '--zzz\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\nContent-Type: text/csv\r\n\r\nemail\r\na@example.com\r\n--zzz--\r\n'];
  if (t === "application/json") return [json];
  return [json, "\u0000\u00ff\ufffd<?xml version='1.0'?><a/>"];
}

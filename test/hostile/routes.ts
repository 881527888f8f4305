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

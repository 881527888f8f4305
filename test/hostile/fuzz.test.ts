// Fuzzing the real HTTP server. Two parts:
// - systematic: every operation of the generated OpenAPI document (read from GET /openapi.json, so a new
//   route is covered without being listed here) gets path-segment attacks (`..` and encoded dots as sent,
//   very long ids), every content type it does not expect, and a value of the wrong JSON type at every
//   field of its body;
// - random (fast-check, fixed seed): malformed bodies, params, query strings and headers on every route.
// Never a 5xx, every answer complete, the envelope on every JSON 4xx, no partial write on a refusal.
// A short run here; scripts/fuzz-hostile.ts is the long one (50 MB bodies, concurrency, peak RSS).
import { rawGet } from "../../src/db/raw";
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import fc from "fast-check";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import {
  attackPath,
  authChoice,
  authFor,
  bodiesFor,
  bodyText,
  contentType,
  fillPath,
  fuzzableRoutes,
  isDestructive,
  isDestructiveOp,
  openapiPath,
  operationsOf,
  PATH_ATTACKS,
  paramValue,
  queryString,
  sampleOf,
  unexpectedContentTypes,
  wrongTypeBodies,
  type Operation,
  type RouteInfo,
} from "./routes";
import { rawHttp } from "./support";

setDefaultTimeout(120_000);

let srv: TestServer;
let acc: Account;
let routes: RouteInfo[];
let ops: Operation[];
/** Real ids for path parameters, so that handlers past the lookup see the hostile input too. */
const ids: Record<string, string> = {};
beforeAll(async () => {
  // The rate limit would answer most of these 429 before looking at them.
  srv = await startServer({ config: { rateLimit: 100_000_000 } });
  acc = await createAccount(srv.api);
  routes = fuzzableRoutes((srv.app as unknown as { routes: { method: string; path: string }[] }).routes);
  ops = operationsOf((await srv.api("/openapi.json")).body);
  const key = acc.secretKey;
  ids.contact = (await srv.api("/contacts", { key, body: { email: "fuzz-fixture@example.com", data: { plan: "pro" } } })).body.id;
  ids.segment = (await srv.api("/segments", { key, body: { name: "fuzz", type: "STATIC" } })).body.id;
  ids.workflow = (await srv.api("/workflows", { key, body: { name: "fuzz" } })).body.id;
  ids.step = (await srv.api(`/workflows/${ids.workflow}/steps`, { key, body: { type: "EXIT" } })).body.id;
  ids.endpoint = (await srv.api("/webhook-endpoints", { key, body: { url: "https://hooks.example.com/fuzz", events: ["email.*"] } })).body.id;
});
afterAll(() => srv.close());

const NO_SUCH = "00000000-0000-4000-8000-000000000000";

/** Query strings every operation gets (whether it reads a query or not). */
const HOSTILE_QUERIES = [
  "page=-1&pageSize=99999999999999999999&limit=NaN&cursor=%00",
  "since=2024-13-45&from=8640000000000001&to=-0&days=1e308&minutes=0x10",
  `search=${"a".repeat(5000)}&status=%FF&sort=__proto__&dir=constructor`,
  "subscribed=maybe&interval=%F0%9F%98%80&metric=&splice=[]&token=..",
  "a=1&a=2&a[b]=3&__proto__[x]=1",
];

/** A plausible value for a path parameter: a fixture's id where the operation reads one (never for DELETE or a destructive operation). */
function plausible(op: Operation, param: string): string {
  if (op.method === "DELETE" || isDestructiveOp(op)) return param === "id" && op.path.includes("/projects/") ? "x" : NO_SUCH;
  const p = op.path;
  if (param === "stepId") return ids.step!;
  if (param === "id" && p.startsWith("/workflows/")) return ids.workflow!;
  if (param === "id" && p.startsWith("/segments/")) return ids.segment!;
  if (param === "id" && p.startsWith("/contacts/")) return ids.contact!;
  if (param === "contactId") return ids.contact!;
  if (param === "id" && p.startsWith("/webhook-endpoints/")) return ids.endpoint!;
  if ((param === "id" && p.includes("/projects/")) || param === "projectId") return acc.projectId;
  if (param === "field") return "plan";
  if (param === "eventName") return "signup";
  return NO_SUCH;
}

const COUNTED = ["contacts", "events", "templates", "uploads", "domains", "emails", "email_contents", "billing_limits", "idempotency_keys"];

async function counts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of COUNTED) out[t] = (await rawGet<{ n: number }>(srv.ctx.db, srv.ctx.store.engine, `SELECT count(*) AS n FROM "${t}"`))!.n;
  return out;
}

// Public HTML pages answer HTML, not the API envelope.
const PAGES = /^\/(t\/|unsubscribe\/|subscribe\/|manage\/|confirm\/)/;

/** What is wrong with one answer ("" when nothing): a 5xx, an incomplete body, a JSON 4xx without the envelope. */
function judge(status: number, type: string, text: string, complete: boolean, pathname: string): string {
  if (status >= 500) return `${status} ${text.slice(0, 200)}`;
  if (!complete) return `incomplete answer (${status})`;
  if (status >= 400) {
    if (type.includes("application/json")) {
      let b: any;
      try {
        b = JSON.parse(text);
      } catch {
        return `unparseable JSON ${status}`;
      }
      const bare = status === 400 && typeof b.error === "string" && Object.keys(b).length === 1;
      if (bare) return "";
      if (b.success !== false || b.error?.statusCode !== status || typeof b.error?.code !== "string" || typeof b.error?.message !== "string" || typeof b.error?.requestId !== "string" || typeof b.timestamp !== "string") {
        return `not the envelope ${status} ${text.slice(0, 200)}`;
      }
    } else if (!PAGES.test(pathname)) {
      return `non-JSON ${status} ${type}`;
    }
  }
  return "";
}

/** Runs `jobs` a few at a time (the server is in this process: more would only queue). */
async function pool<T>(items: T[], width: number, run: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await run(items[next++]!);
  }));
}

test("every Elysia route is an operation of /openapi.json (the systematic fuzz below covers them all)", () => {
  const documented = new Set(ops.map((o) => `${o.method} ${o.path}`));
  expect(routes.map((r) => `${r.method} ${openapiPath(r.path)}`).filter((r) => !documented.has(r))).toEqual([]);
  expect(ops.length).toBe(routes.length);
});

test("systematic: every operation, path-segment attacks, unexpected content types, a wrong JSON type at every field; never a 5xx", async () => {
  type Case = { op: Operation; what: string; path: string; raw: boolean; type?: string; body?: string; chunked?: boolean; status?: number };
  const cases: Case[] = [];
  for (const op of ops) {
    const hasBody = op.method !== "GET";
    const sample = hasBody ? JSON.stringify(sampleOf(op.jsonSchema ?? { type: "object" })) : undefined;
    const path = attackPath(op, "", "", (p) => plausible(op, p));
    // The operation as the document describes it (minimal body), then with hostile query values.
    cases.push({ op, what: "sample", path, raw: false, type: hasBody ? "application/json" : undefined, body: sample });
    for (const q of HOSTILE_QUERIES) cases.push({ op, what: `query ${q.slice(0, 40)}`, path: `${path}?${q}`, raw: false, type: hasBody ? "application/json" : undefined, body: sample });
    // A GET with a body, declared or chunked: 413 before anything else.
    if (!hasBody) {
      cases.push({ op, what: "GET with a small body", path, raw: true, type: "application/json", body: '{"a":1}', status: 413 });
      cases.push({ op, what: "GET with a chunked body", path, raw: true, chunked: true, status: 413 });
    }
    // Path-segment attacks, one parameter at a time, over a raw socket: sent as written.
    for (const param of op.params) {
      for (const v of PATH_ATTACKS) cases.push({ op, what: `path ${param}=${v.slice(0, 20)}`, path: attackPath(op, v, param, (p) => plausible(op, p)), raw: true, type: hasBody ? "application/json" : undefined, body: sample });
    }
    if (!hasBody) continue;
    for (const type of unexpectedContentTypes(op)) for (const body of bodiesFor(op, type)) cases.push({ op, what: `content-type ${type || "(none)"}`, path, raw: false, type, body });
    if (op.jsonSchema) for (const [field, body] of wrongTypeBodies(op.jsonSchema)) cases.push({ op, what: `field ${field || "(body)"}=${JSON.stringify(field ? field.split(".").reduce((o: any, k) => o?.[k], body) : body)?.slice(0, 30)}`, path, raw: false, type: "application/json", body: JSON.stringify(body) });
  }
  const failures: string[] = [];
  const seen = new Set<string>();
  const hist: Record<number, number> = {};
  const t0 = performance.now();
  const slow: [number, string][] = [];
  await pool(cases, 4, async (c) => {
    const c0 = performance.now();
    seen.add(`${c.op.method} ${c.op.path}`);
    const headers: Record<string, string> = { ...authFor(c.op, acc) };
    if (c.type) headers["content-type"] = c.type;
    let status: number, type: string, text: string, complete: boolean;
    if (c.raw) {
      const r = await rawHttp(srv.url, { method: c.op.method, path: c.path, headers, body: c.body, upload: c.chunked ? { bytes: 64 * 1024, chunked: true } : undefined });
      [status, type, text, complete] = [r.status, r.headers["content-type"] ?? "", r.body, r.complete];
    } else {
      const res = await fetch(srv.url + c.path, { method: c.op.method, headers, body: c.body, redirect: "manual" });
      [status, type] = [res.status, res.headers.get("content-type") ?? ""];
      text = await res.text();
      complete = true;
    }
    hist[status] = (hist[status] ?? 0) + 1;
    const wrong = c.status !== undefined && status !== c.status ? `${status}, not ${c.status}` : judge(status, type, text, complete, c.path.split("?")[0]!);
    if (wrong) failures.push(`${c.op.method} ${c.op.path} ${c.what} -> ${wrong}`);
    slow.push([performance.now() - c0, `${c.op.method} ${c.path.slice(0, 80)} ${c.what} ${status}`]);
  });
  if (process.env.FUZZ_VERBOSE) console.log(slow.sort((a, b) => b[0] - a[0]).slice(0, 15).map(([ms, w]) => `${ms.toFixed(0)} ms ${w}`).join("\n"));
  if (process.env.FUZZ_VERBOSE) console.log(`${cases.length} cases in ${((performance.now() - t0) / 1000).toFixed(1)} s; statuses ${JSON.stringify(hist)}`);
  expect(failures).toEqual([]);
  // Every operation was sent something.
  expect(seen.size).toBe(ops.length);
  expect(cases.length).toBeGreaterThan(2000);
});

test("random: every route answers hostile input without a 5xx, with the envelope, and without a partial write", async () => {
  expect(routes.length).toBeGreaterThan(40);
  const seen = new Set<string>();
  const failures: string[] = [];
  const hist: Record<number, number> = {};
  await fc.assert(
    fc.asyncProperty(
      fc.nat({ max: routes.length - 1 }),
      fc.array(paramValue, { minLength: 1, maxLength: 3 }),
      queryString,
      bodyText,
      contentType,
      authChoice,
      async (ri, params, query, body, type, auth) => {
        const route = routes[ri]!;
        seen.add(`${route.method} ${route.path}`);
        const path = fillPath(route.path, isDestructive(route) ? params.map((p) => (p === acc.projectId ? "x" : p)) : params);
        const headers: Record<string, string> = {};
        if (type) headers["content-type"] = type;
        if (auth === "secret") headers.authorization = `Bearer ${acc.secretKey}`;
        else if (auth === "public") headers.authorization = `Bearer ${acc.publicKey}`;
        else if (auth === "garbage") headers.authorization = "Bearer sk_\u00ff" + "x".repeat(50);
        else if (auth === "session") {
          headers.cookie = acc.cookie;
          headers["x-project-id"] = acc.projectId;
        }
        await srv.drainJobs();
        const before = await counts();
        let res: Response;
        try {
          res = await fetch(`${srv.url}${path}${query ? "?" + query : ""}`, {
            method: route.method,
            headers,
            body: route.method === "GET" || route.method === "DELETE" ? undefined : body,
            redirect: "manual",
          });
        } catch (e) {
          // A header value fetch itself refuses to send is not the server's answer.
          if (String(e).includes("header")) return;
          throw e;
        }
        const text = await res.text();
        hist[res.status] = (hist[res.status] ?? 0) + 1;
        const where = `${route.method} ${path}?${query} [${type}] ${auth} body=${body.slice(0, 120)} -> ${res.status} ${text.slice(0, 200)}`;
        if (res.status >= 500) failures.push(where);
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) {
          const ct = res.headers.get("content-type") ?? "";
          if (ct.includes("application/json")) {
            const b = JSON.parse(text);
            const bare = res.status === 400 && typeof b.error === "string" && Object.keys(b).length === 1;
            if (!bare) {
              expect(b.success).toBe(false);
              expect(b.error.statusCode).toBe(res.status);
              expect(typeof b.error.code).toBe("string");
              expect(typeof b.error.message).toBe("string");
              expect(typeof b.error.requestId).toBe("string");
              expect(typeof b.timestamp).toBe("string");
            }
          } else {
            // Only the public HTML pages (tracking, subscription) answer something else.
            if (!PAGES.test(new URL(`${srv.url}${path}`).pathname)) failures.push(`non-JSON ${where}`);
          }
          await srv.drainJobs();
          const after = await counts();
          if (JSON.stringify(after) !== JSON.stringify(before)) failures.push(`write on refusal: ${where} ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
        }
      },
    ),
    // A fixed seed: the same requests on every run (FUZZ_SEED / FUZZ_RUNS explore further).
    { numRuns: Number(process.env.FUZZ_RUNS ?? 200), seed: Number(process.env.FUZZ_SEED ?? 37) },
  );
  if (process.env.FUZZ_VERBOSE) console.log("statuses", JSON.stringify(hist), "routes", seen.size, "of", routes.length);
  expect(failures).toEqual([]);
  expect(seen.size).toBeGreaterThan(routes.length / 3);
  expect(process.memoryUsage().rss).toBeLessThan(1024 * 1024 * 1024);
});

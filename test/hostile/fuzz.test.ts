// Property-based fuzzing of the real HTTP server: every route, malformed bodies, params,
// query strings and headers. No 5xx, the envelope on every JSON 4xx, no partial write on a refusal,
// bounded memory. A short run (here); scripts/fuzz-hostile.ts is the long one.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import fc from "fast-check";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { authChoice, bodyText, contentType, fillPath, fuzzableRoutes, isDestructive, paramValue, queryString, type RouteInfo } from "./routes";

setDefaultTimeout(120_000);

let srv: TestServer;
let acc: Account;
let routes: RouteInfo[];
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
  routes = fuzzableRoutes((srv.app as unknown as { routes: { method: string; path: string }[] }).routes);
});
afterAll(() => srv.close());

const COUNTED = ["contacts", "events", "templates", "uploads", "domains", "emails", "email_contents", "billing_limits", "idempotency_keys"];

function counts(): Record<string, number> {
  const sqlite = srv.ctx.store.sqlite;
  const tables = new Set(sqlite.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => r.name));
  const out: Record<string, number> = {};
  for (const t of COUNTED) if (tables.has(t)) out[t] = sqlite.query<{ n: number }, []>(`SELECT count(*) AS n FROM "${t}"`).get()!.n;
  return out;
}

// Public HTML pages and the dashboard's static assets answer HTML/text, not the API envelope.
const PAGES = /^\/(t\/|unsubscribe\/|subscribe\/|manage\/|confirm\/|assets\/)/;

test("fuzz: every route answers hostile input without a 5xx, with the envelope, and without a partial write", async () => {
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
        const before = counts();
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
          const after = counts();
          if (JSON.stringify(after) !== JSON.stringify(before)) failures.push(`write on refusal: ${where} ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
        }
      },
    ),
    { numRuns: Number(process.env.FUZZ_RUNS ?? 250), seed: process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined },
  );
  if (process.env.FUZZ_VERBOSE) console.log("statuses", JSON.stringify(hist), "routes", seen.size, "of", routes.length);
  expect(failures).toEqual([]);
  expect(seen.size).toBeGreaterThan(routes.length / 3);
  expect(process.memoryUsage().rss).toBeLessThan(1024 * 1024 * 1024);
});

// Hostile input: deep JSON, out-of-range query values and oversized contact data are refused before they reach
// the JSON parser's stack, Date or SQLite; request bodies are bounded before they are read.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { MAX_JSON_DEPTH } from "../../src/http/body";
import { expectEnvelope } from "../blackbox/support";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

setDefaultTimeout(30_000);

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
});
afterAll(() => srv.close());

const deepArray = (n: number) => "[".repeat(n) + "]".repeat(n);
const deepObject = (n: number) => '{"a":'.repeat(n) + "1" + "}".repeat(n);
const raw = (path: string, body: string, opts: { key?: string; method?: string; headers?: Record<string, string> } = {}) =>
  srv.api(path, { method: opts.method ?? "POST", key: opts.key, raw: body, headers: { "content-type": "application/json", ...opts.headers } });

describe("deeply nested JSON in any validated field is 422 (never a stack overflow 500)", () => {
  const routes: [string, string, (v: string) => string, "secret" | "public" | "none"][] = [
    ["POST", "/v1/track", (v) => `{"email":"a@example.com","event":"x","data":{"k":${v}}}`, "public"],
    ["POST", "/v1/verify", (v) => `{"email":${v}}`, "secret"],
    ["POST", "/v1/send", (v) => `{"to":${v},"subject":"s","body":"b","from":"a@example.com"}`, "secret"],
    ["POST", "/contacts/lookup", (v) => `{"emails":${v}}`, "secret"],
    ["POST", "/contacts/bulk-delete", (v) => `{"contactIds":${v}}`, "secret"],
    ["POST", "/templates", (v) => `{"name":${v},"subject":"s","body":"b","from":"a@example.com"}`, "secret"],
    ["POST", "/domains", (v) => `{"projectId":"x","domain":${v}}`, "secret"],
    ["POST", "/auth/signup", (v) => `{"email":${v},"password":"12345678"}`, "none"],
    ["POST", "/auth/login", (v) => `{"email":${v},"password":"12345678"}`, "none"],
    ["POST", "/contacts", (v) => `{"email":"deep@example.com","data":${v}}`, "secret"],
  ];
  for (const [method, path, make, auth] of routes) {
    test(`${method} ${path}: 5,000 and 10,000 levels answer 422 at once`, async () => {
      const key = auth === "secret" ? acc.secretKey : auth === "public" ? acc.publicKey : undefined;
      for (const depth of [5_000, 10_000]) {
        for (const v of [deepArray(depth), deepObject(depth)]) {
          const t0 = performance.now();
          const err = expectEnvelope(await raw(path, make(v), { key, method }), 422, "VALIDATION_ERROR");
          expect(err.errors!.length).toBeGreaterThan(0);
          expect(performance.now() - t0).toBeLessThan(2_000);
        }
      }
    });
  }

  test("authentication still answers first: a deep body without a key is 401", async () => {
    expectEnvelope(await raw("/contacts", `{"email":"x@example.com","data":${deepArray(5_000)}}`), 401);
  });

  test(`the limit is ${MAX_JSON_DEPTH} levels: ${MAX_JSON_DEPTH} is accepted, ${MAX_JSON_DEPTH + 1} is not`, async () => {
    // {"email":..,"data":{"k": <n-2 levels>}} has depth n.
    const at = (n: number) => `{"email":"depth${n}@example.com","data":{"k":${deepArray(n - 2)}}}`;
    // At the limit the body parses; the contact data rule (README: at most 16 levels inside `data`) refuses the field.
    const atLimit = expectEnvelope(await raw("/contacts", at(MAX_JSON_DEPTH), { key: acc.secretKey }), 422, "VALIDATION_ERROR");
    expect(atLimit.errors!.map((e) => [e.field, e.code])).toEqual([["data", "too_deep"]]);
    // One level more and the body itself is refused before any field is looked at.
    const over = expectEnvelope(await raw("/contacts", at(MAX_JSON_DEPTH + 1), { key: acc.secretKey }), 422, "VALIDATION_ERROR");
    expect(over.errors!.map((e) => [e.field, e.code])).toEqual([["body", "too_deep"]]);
    const look = await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [`depth${MAX_JSON_DEPTH}@example.com`, `depth${MAX_JSON_DEPTH + 1}@example.com`] } });
    expect(look.body.found).toEqual([]);
  });
});

describe("query values are checked before they reach Date or SQLite", () => {
  test("GET /activity/recent-count?since= past the Date range is 400", async () => {
    for (const since of ["99999999999999999999999", "8640000000000001", "-1", "1e400", "not-a-date"]) {
      expectEnvelope(await srv.api(`/activity/recent-count?since=${since}`, { key: acc.secretKey }), 400, "BAD_REQUEST");
    }
    expectEnvelope(await srv.api(`/activity/recent-count?minutes=1e308`, { key: acc.secretKey }), 400, "BAD_REQUEST");
    expect((await srv.api(`/activity/recent-count?since=${Date.now() - 1000}`, { key: acc.secretKey })).status).toBe(200);
  });

  test("GET /events/stats?to= past the Date range is 400", async () => {
    for (const v of ["99999999999999999999999", "8640000000000001", "253402300800000"]) {
      expectEnvelope(await srv.api(`/events/stats?to=${v}`, { key: acc.secretKey }), 400, "BAD_REQUEST");
      expectEnvelope(await srv.api(`/events/stats?from=${v}`, { key: acc.secretKey }), 400, "BAD_REQUEST");
    }
    expect((await srv.api(`/events/stats?to=2030-01-01T00:00:00Z`, { key: acc.secretKey })).status).toBe(200);
  });

  test("GET /templates?page= huge is clamped (an empty page), never a SQLite datatype error", async () => {
    for (const page of ["99999999999999999999999", "9223372036854775807", "1000001"]) {
      const r = await srv.api(`/templates?page=${page}`, { key: acc.secretKey });
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual([]);
    }
    for (const page of ["0", "-5", "1.5", "abc", "1e3"]) expectEnvelope(await srv.api(`/templates?page=${page}`, { key: acc.secretKey }), 400, "BAD_REQUEST");
    const big = await srv.api(`/templates?pageSize=99999999999999999999`, { key: acc.secretKey });
    expect(big.status).toBe(200);
  });
});

describe("contact data that could break SQLite's JSON functions is never stored", () => {
  test("data nested past the data limit or with too many keys is 422 on every write path; field reads keep working", async () => {
    const deep = JSON.parse(deepObject(25));
    const wide = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, i]));
    for (const data of [deep, wide]) {
      expectEnvelope(await srv.api("/contacts", { key: acc.secretKey, body: { email: "d@example.com", data } }), 422, "VALIDATION_ERROR");
      expectEnvelope(await srv.api("/v1/track", { key: acc.publicKey, body: { email: "d@example.com", event: "e", data } }), 422, "VALIDATION_ERROR");
    }
    const c = await srv.api("/contacts", { key: acc.secretKey, body: { email: "ok@example.com", data: { plan: "pro", nested: { a: { b: [1, 2] } } } } });
    expect(c.status).toBe(201);
    expectEnvelope(await srv.api(`/contacts/${c.body.id}`, { method: "PATCH", key: acc.secretKey, body: { data: deep } }), 422, "VALIDATION_ERROR");
    expect((await srv.api("/contacts/fields", { key: acc.secretKey })).status).toBe(200);
    expect((await srv.api("/contacts/fields/plan/values", { key: acc.secretKey })).status).toBe(200);
    const stored = await srv.ctx.db.selectFrom("contacts").select("email").where("project_id", "=", acc.projectId).execute();
    expect(stored.map((r) => r.email)).not.toContain("d@example.com");
  });
});

describe("request bodies are bounded before they are read", () => {
  test("a 2 MB JSON body on a 1 MB route is 413 PAYLOAD_TOO_LARGE in the envelope (declared length)", async () => {
    const body = JSON.stringify({ email: "big@example.com", data: { blob: "x".repeat(2 * 1024 * 1024) } });
    expectEnvelope(await raw("/contacts", body, { key: acc.secretKey }), 413, "PAYLOAD_TOO_LARGE");
    expectEnvelope(await raw("/v1/verify", body, { key: acc.secretKey }), 413, "PAYLOAD_TOO_LARGE");
    // Even before authentication: the body is never read.
    expectEnvelope(await raw("/v1/track", body), 413, "PAYLOAD_TOO_LARGE");
  });

  test("an answer given without reading the body ends the connection (the rest is not drained first)", async () => {
    const body = JSON.stringify({ email: "big@example.com", data: { blob: "x".repeat(2 * 1024 * 1024) } });
    const big = await fetch(`${srv.url}/contacts`, { method: "POST", headers: { authorization: `Bearer ${acc.secretKey}`, "content-type": "application/json" }, body });
    expect(big.status).toBe(413);
    expect(big.headers.get("connection")).toBe("close");
    // An ordinary refusal of a body that was read keeps the connection.
    const small = await fetch(`${srv.url}/contacts`, { method: "POST", headers: { authorization: `Bearer ${acc.secretKey}`, "content-type": "application/json" }, body: "{" });
    expect(small.status).toBe(400);
    expect(small.headers.get("connection")).not.toBe("close");
  });

  test("a chunked body (no Content-Length) is cut off at the limit", async () => {
    // JSON-shaped (a string that never ends), so only the size limit can stop it.
    const head = new TextEncoder().encode('{"email":"a@example.com","data":{"note":"');
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent === 0) c.enqueue(head);
        if (sent > 50 * 1024 * 1024) return c.close();
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const res = await fetch(`${srv.url}/contacts`, {
      method: "POST",
      headers: { authorization: `Bearer ${acc.secretKey}`, "content-type": "application/json" },
      body: stream,
      // @ts-expect-error Bun streams request bodies
      duplex: "half",
    });
    const b = (await res.json()) as any;
    expect(res.status).toBe(413);
    expect(b.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(sent).toBeLessThan(50 * 1024 * 1024);
  });

  test("a value whose toString is not a function (Elysia cannot describe it) is a 422 envelope, not a 500", async () => {
    for (const [path, body] of [
      ["/campaigns", { name: { apply: null, toString: "." }, subject: "s" }],
      ["/contacts", { email: { toString: "." } }],
      ["/segments", { name: { toString: "." }, type: "STATIC" }],
    ] as const) {
      const res = await fetch(`${srv.url}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${acc.secretKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const b = (await res.json()) as any;
      expect({ path, status: res.status, b }).toMatchObject({ path, status: 422 });
      expect(b.error.code).toBe("VALIDATION_ERROR");
    }
  });

  test("the subscription pages and the SNS webhook read their own bodies through a limit too (413, not 50 MB read)", async () => {
    for (const path of ["/unsubscribe/not-a-token", "/manage/not-a-token", "/webhooks/sns"]) {
      const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent > 50 * 1024 * 1024) return c.close();
          sent += chunk.byteLength;
          c.enqueue(chunk);
        },
      });
      const res = await fetch(`${srv.url}${path}`, {
        method: "POST",
        headers: { "content-type": path.includes("sns") ? "text/plain" : "application/x-www-form-urlencoded" },
        body: stream,
        // @ts-expect-error Bun streams request bodies
        duplex: "half",
      });
      expect({ path, status: res.status }).toEqual({ path, status: 413 });
      expect(sent).toBeLessThan(10 * 1024 * 1024);
    }
  });

  test("a chunked body that cannot be JSON is refused at its first byte, not read to the end (400)", async () => {
    const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent > 50 * 1024 * 1024) return c.close();
        sent += chunk.byteLength;
        c.enqueue(chunk);
      },
    });
    const before = await srv.ctx.db.selectFrom("emails").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    const res = await fetch(`${srv.url}/v1/send`, {
      method: "POST",
      headers: { authorization: `Bearer ${acc.secretKey}`, "content-type": "application/json" },
      body: stream,
      // @ts-expect-error Bun streams request bodies
      duplex: "half",
    });
    const b = (await res.json()) as any;
    expect(res.status).toBe(400);
    expect(b.error.code).toBe("BAD_REQUEST");
    // /v1/send accepts 60 MB: without the first-byte check all 50 MB would have been read.
    expect(sent).toBeLessThan(10 * 1024 * 1024);
    const after = await srv.ctx.db.selectFrom("emails").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
  });

  test("/v1/send keeps its larger limit: a 3 MB message body is accepted by the size check", async () => {
    const r = await srv.api("/v1/send", { key: acc.secretKey, body: { to: "a@example.com", from: "a@unverified.example", subject: "s", body: "x".repeat(3 * 1024 * 1024) } });
    expect(r.status).not.toBe(413);
    expect(r.status).toBeLessThan(500);
  });

  test("a large /v1/send body without a valid secret key is 401 before it is read", async () => {
    const big = "x".repeat(5 * 1024 * 1024);
    expectEnvelope(await raw("/v1/send", big), 401, "INVALID_API_KEY");
    expectEnvelope(await raw("/v1/send", big, { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await raw("/v1/send", big, { key: "sk_" + "a".repeat(40) }), 401, "INVALID_API_KEY");
    // With the key it is read (and refused as malformed JSON).
    expectEnvelope(await raw("/v1/send", big, { key: acc.secretKey }), 400, "BAD_REQUEST");
  });

  test("malformed JSON is still 400, multipart and form bodies still parse", async () => {
    expectEnvelope(await raw("/contacts", '{"email":', { key: acc.secretKey }), 400, "BAD_REQUEST");
    const f = new FormData();
    f.append("file", new File(["email\nform@example.com\n"], "c.csv", { type: "text/csv" }));
    expect((await srv.api("/contacts/import", { method: "POST", key: acc.secretKey, raw: f })).status).toBe(202);
  });
});

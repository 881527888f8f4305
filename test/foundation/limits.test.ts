import { afterAll, beforeAll, expect, test } from "bun:test";
import { withIdempotency } from "../../src/http/idempotency";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer({ config: { rateLimit: 5 } });
  acc = await createAccount(srv.api);
});
afterAll(() => srv.close());

test("the per-project rate limit answers 429 with Retry-After and RateLimit-* headers, then resets", async () => {
  const path = `/projects/${acc.projectId}/members`;
  for (let i = 0; i < 5; i++) {
    const r = await srv.api(path, { key: acc.secretKey });
    expect(r.status).toBe(200);
    expect(r.headers.get("ratelimit-limit")).toBe("5");
    expect(r.headers.get("ratelimit-remaining")).toBe(String(4 - i));
  }
  const limited = await srv.api(path, { key: acc.secretKey });
  expect(limited.status).toBe(429);
  expect(limited.body.error.code).toBe("RATE_LIMIT_EXCEEDED");
  expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(limited.headers.get("ratelimit-remaining")).toBe("0");
  // The session of the same project shares the window.
  const viaSession = await srv.api(path, { cookie: acc.cookie, headers: { "x-project-id": acc.projectId } });
  expect(viaSession.status).toBe(429);
  // Another project is unaffected.
  const other = await createAccount(srv.api, "other");
  expect((await srv.api(`/projects/${other.projectId}/members`, { key: other.secretKey })).status).toBe(200);
  srv.clock.advance(61_000);
  expect((await srv.api(path, { key: acc.secretKey })).status).toBe(200);
});

test("idempotency: two simultaneous requests with one key perform the work once; reuse is 409 with details", async () => {
  let performed = 0;
  const work = async () => {
    performed++;
    await Bun.sleep(30);
    return "done";
  };
  const req = { method: "POST", path: "/v1/send" };
  const results = await Promise.allSettled([
    withIdempotency(srv.ctx, acc.projectId, "key-1", req, work),
    withIdempotency(srv.ctx, acc.projectId, "key-1", req, work),
    withIdempotency(srv.ctx, acc.projectId, "key-1", req, work),
  ]);
  expect(performed).toBe(1);
  expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
  const rejected = results.filter((r) => r.status === "rejected") as PromiseRejectedResult[];
  expect(rejected).toHaveLength(2);
  expect(rejected[0]!.reason.status).toBe(409);
  expect(rejected[0]!.reason.code).toBe("IDEMPOTENCY_KEY_REUSED");

  const again = await withIdempotency(srv.ctx, acc.projectId, "key-1", req, work).catch((e) => e);
  expect(again.status).toBe(409);
  expect(again.extra.details).toMatchObject({ key: "key-1", originalRequest: "POST /v1/send", originalStatusCode: 200 });
  expect(new Date(again.extra.details.originalRequestAt).getTime()).toBeGreaterThan(0);

  // Keys are per project.
  const other = await createAccount(srv.api, "idem-other");
  expect(await withIdempotency(srv.ctx, other.projectId, "key-1", req, work)).toBe("done");
  // A failed request releases its key.
  await expect(withIdempotency(srv.ctx, acc.projectId, "key-2", req, async () => { throw new Error("boom"); })).rejects.toThrow("boom");
  expect(await withIdempotency(srv.ctx, acc.projectId, "key-2", req, work)).toBe("done");
  // After the TTL the key can be used again.
  srv.clock.advance(24 * 3_600_000 + 1000);
  expect(await withIdempotency(srv.ctx, acc.projectId, "key-1", req, work)).toBe("done");
  // Invalid keys are refused.
  const bad = await withIdempotency(srv.ctx, acc.projectId, "bad\nkey", req, work).catch((e) => e);
  expect(bad.status).toBe(422);
  const long = await withIdempotency(srv.ctx, acc.projectId, "x".repeat(256), req, work).catch((e) => e);
  expect(long.status).toBe(422);
});

// Black-box: "API requests: N per minute per project; excess gives 429" with MAILSVC_RATE_LIMIT set low.
// decisions.md: 429 carries Retry-After and RateLimit-Limit/Remaining/Reset.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectEnvelope } from "./support";

const LIMIT = 5;
let srv: TestServer;

beforeAll(async () => {
  srv = await startServer({ config: { rateLimit: LIMIT } });
});
afterAll(() => srv.close());

const intHeader = (h: Headers, name: string) => {
  const v = h.get(name);
  expect(v).not.toBeNull();
  expect(v!).toMatch(/^\d+$/);
  return Number(v);
};

describe("rate limit per project", () => {
  let a: Account;
  let b: Account;
  beforeAll(async () => {
    a = await createAccount(srv.api, "RL A");
    b = await createAccount(srv.api, "RL B");
  });

  test("LIMIT requests pass with RateLimit-* headers counting down; the next is 429 with Retry-After", async () => {
    const remaining: number[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const res = await srv.api("/templates", { key: a.secretKey });
      expect(res.status).toBe(200);
      expect(intHeader(res.headers, "ratelimit-limit")).toBe(LIMIT);
      remaining.push(intHeader(res.headers, "ratelimit-remaining"));
      const reset = intHeader(res.headers, "ratelimit-reset");
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);

    const res = await srv.api("/templates", { key: a.secretKey });
    const err = expectEnvelope(res, 429, "RATE_LIMIT_EXCEEDED");
    expect(err.message.length).toBeGreaterThan(0);
    const retryAfter = intHeader(res.headers, "retry-after");
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(intHeader(res.headers, "ratelimit-limit")).toBe(LIMIT);
    expect(intHeader(res.headers, "ratelimit-remaining")).toBe(0);
    expect(intHeader(res.headers, "ratelimit-reset")).toBeGreaterThan(0);
  });

  test("every endpoint of the exhausted project is limited, writes included, and nothing is performed", async () => {
    expectEnvelope(await srv.api("/v1/verify", { key: a.secretKey, body: { email: "x@y.example" } }), 429, "RATE_LIMIT_EXCEEDED");
    expectEnvelope(
      await srv.api("/templates", { key: a.secretKey, body: { name: "n", subject: "s", body: "b", from: "a@b.example" } }),
      429,
      "RATE_LIMIT_EXCEEDED",
    );
    expectEnvelope(await srv.api("/domains", { key: a.secretKey, body: { projectId: a.projectId, domain: "rl.example" } }), 429);
    expectEnvelope(await srv.api(`/domains/project/${a.projectId}`, { key: a.secretKey }), 429);
  });

  test("the limit is per project: the dashboard session of the same project is limited too", async () => {
    const res = await srv.api("/templates", { cookie: a.cookie, headers: { "x-project-id": a.projectId } });
    expectEnvelope(res, 429, "RATE_LIMIT_EXCEEDED");
  });

  test("public-key calls to /v1/track count against the same per-project budget", async () => {
    const c = await createAccount(srv.api, "RL C");
    for (let i = 0; i < LIMIT; i++) {
      const r = await srv.api("/v1/track", { key: c.publicKey, body: { email: `rl${i}@rl.example`, event: "hit" } });
      expect(r.status).toBe(200);
    }
    expectEnvelope(await srv.api("/v1/track", { key: c.publicKey, body: { email: "over@rl.example", event: "hit" } }), 429, "RATE_LIMIT_EXCEEDED");
    expectEnvelope(await srv.api("/templates", { key: c.secretKey }), 429, "RATE_LIMIT_EXCEEDED");
  });

  test("another project is not affected", async () => {
    const res = await srv.api("/templates", { key: b.secretKey });
    expect(res.status).toBe(200);
    expect(intHeader(res.headers, "ratelimit-remaining")).toBe(LIMIT - 1);
  });

  test("unauthenticated endpoints are not limited (GET /config)", async () => {
    for (let i = 0; i < LIMIT + 2; i++) expect((await srv.api("/config")).status).toBe(200);
  });

  test("after a minute the project may call again", async () => {
    srv.clock.advance(61_000);
    const res = await srv.api("/templates", { key: a.secretKey });
    expect(res.status).toBe(200);
    expect(intHeader(res.headers, "ratelimit-remaining")).toBe(LIMIT - 1);
    // Nothing rejected while limited was created.
    expect(res.body.total).toBe(0);
    const domains = await srv.api(`/domains/project/${a.projectId}`, { key: a.secretKey });
    expect(domains.body).toEqual([]);
  });
});

// The error mapper never throws: whatever a validator or a handler throws, the client gets the envelope.
import { expect, test } from "bun:test";
import { Elysia, t, ValidationError } from "elysia";
import { errorPlugin } from "../../src/http/error-plugin";
import { createLogger } from "../../src/http/logger";

function explodingValidationError() {
  const e = new ValidationError("body", t.Object({ a: t.String() }), { a: 1 });
  Object.defineProperty(e, "all", {
    get() {
      throw new RangeError("Maximum call stack size exceeded");
    },
  });
  return e;
}

const logs: string[] = [];
const app = new Elysia()
  .use(errorPlugin(createLogger({ write: (s) => logs.push(s) })))
  .post("/validated", ({ body }) => body, { body: t.Object({ a: t.String() }) })
  .get("/exploding-validation", () => {
    throw explodingValidationError();
  })
  .get("/weird-throw", () => {
    throw Object.create(null);
  })
  .get("/string-throw", () => {
    throw "nope";
  });

const envelope = async (res: Response, status: number) => {
  expect(res.status).toBe(status);
  const b = (await res.json()) as any;
  expect(b.success).toBe(false);
  expect(b.error.statusCode).toBe(status);
  expect(typeof b.error.requestId).toBe("string");
  return b;
};

test("a validator whose error details overflow the stack still yields a 422 envelope", async () => {
  const b = await envelope(await app.handle(new Request("http://localhost/exploding-validation")), 422);
  expect(b.error.code).toBe("VALIDATION_ERROR");
  expect(b.error.errors[0]).toMatchObject({ field: "body", code: "invalid" });
});

test("a deeply nested value in a validated field is a 422 envelope (even without the body depth limit in front)", async () => {
  let v: unknown = "x";
  for (let i = 0; i < 5_000; i++) v = [v];
  const res = await app.handle(new Request("http://localhost/validated", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ a: v }) }));
  expect((await envelope(res, 422)).error.code).toBe("VALIDATION_ERROR");
});

test("non-Error throwables are a 500 envelope, never a crash or a stack trace", async () => {
  for (const path of ["/weird-throw", "/string-throw"]) {
    const res = await app.handle(new Request(`http://localhost${path}`));
    const b = await envelope(res, 500);
    expect(b.error.code).toBe("INTERNAL_SERVER_ERROR");
    expect(JSON.stringify(b)).not.toContain("at ");
  }
});

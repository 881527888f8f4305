// U+0000 in a JSON body: refused with the field named (422), on both engines alike (PostgreSQL cannot
// store it in text or jsonb; no address, header or message carries it), and nothing is written.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
});
afterAll(() => srv.close());

describe("the NUL character in a body", () => {
  test("in a data value, an event name, a data key and a list item: 422 naming the field; nothing stored", async () => {
    const cases: [string, { key: string; body: unknown }, string][] = [
      ["/contacts", { key: acc.secretKey, body: { email: "n1@nul.test", data: { note: "a\u0000b" } } }, "data.note"],
      ["/v1/track", { key: acc.publicKey, body: { email: "n2@nul.test", event: "e\u0000v" } }, "event"],
      ["/v1/track", { key: acc.publicKey, body: { email: "n3@nul.test", event: "ev", data: { "k\u0000": 1 } } }, "data.k\u0000"],
      ["/contacts", { key: acc.secretKey, body: { email: "n4@nul.test", data: { tags: ["ok", "x\u0000"] } } }, "data.tags[1]"],
    ];
    for (const [path, opts, field] of cases) {
      const r = await srv.api(path, opts);
      expect({ path, status: r.status, code: r.body?.error?.code }).toEqual({ path, status: 422, code: "VALIDATION_ERROR" });
      expect(r.body.error.errors).toEqual([{ field, message: "Must not contain the NUL character (U+0000)", code: "invalid_string" }]);
    }
    const list = await srv.api("/contacts", { key: acc.secretKey });
    expect(list.body.data.filter((c: { email: string }) => c.email.endsWith("@nul.test"))).toEqual([]);
  });

  test("the escaped text \\\\u0000 (a backslash, then u0000) is ordinary text", async () => {
    const r = await srv.api("/contacts", { key: acc.secretKey, body: { email: "ok@nul.test", data: { note: "\\u0000" } } });
    expect(r.status).toBe(201);
    expect(r.body.data).toEqual({ note: "\\u0000" });
  });

  test("without a valid key the answer is 401 whatever the body", async () => {
    const r = await srv.api("/contacts", { key: "sk_wrong", body: { email: "n5@nul.test", data: { note: "\u0000" } } });
    expect(r.status).toBe(401);
  });
});

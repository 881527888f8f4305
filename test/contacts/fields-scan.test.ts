import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type TestServer } from "../support/server";
import { uploadCsv } from "../audience/support";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

test("fields and values stay exact when the scan runs in several chunks (25,000 contacts)", async () => {
  const acc = await createAccount(srv.api);
  const lines = ["email,plan,half"];
  for (let i = 0; i < 25_000; i++) lines.push(`row${i}@example.com,p${i % 3},${i % 2 ? "x" : ""}`);
  expect((await uploadCsv(srv.api, acc.secretKey, lines.join("\n"))).status).toBe(202);
  await srv.drainJobs();
  const f = await srv.api("/contacts/fields", { key: acc.secretKey });
  expect(f.body.custom).toEqual([
    { name: "plan", path: "data.plan", type: "string", coverage: 100 },
    { name: "half", path: "data.half", type: "string", coverage: 50 },
  ]);
  const v = await srv.api("/contacts/fields/plan/values?limit=2", { key: acc.secretKey });
  expect(v.body).toEqual({ field: "plan", values: [{ value: "p0", count: 8334 }, { value: "p1", count: 8333 }] });
});

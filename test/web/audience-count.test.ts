// POST /audience/count: the live recipient count behind the dashboard's condition builder.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let acc: Account;
let other: Account;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
  other = await createAccount(srv.api);
  for (const [email, plan, subscribed] of [["a@x.example", "pro", true], ["b@x.example", "pro", false], ["c@x.example", "free", true]] as const) {
    expect((await srv.api("/contacts", { key: acc.secretKey, body: { email, subscribed, data: { plan } } })).status).toBe(201);
  }
  await srv.api("/contacts", { key: other.secretKey, body: { email: "z@x.example", data: { plan: "pro" } } });
});
afterAll(() => srv.close());

const count = (body: unknown, key = acc.secretKey) => srv.api("/audience/count", { key, body });
const pro = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };

test("counts the project's contacts matching a tree, optionally subscribed only", async () => {
  expect((await count({ condition: pro })).body).toEqual({ count: 2 });
  expect((await count({ condition: pro, subscribedOnly: true })).body).toEqual({ count: 1 });
  expect((await count({ condition: { logic: "AND", groups: [] } })).body).toEqual({ count: 3 });
  expect((await count({ condition: pro }, other.secretKey)).body).toEqual({ count: 1 });
});

test("works with the dashboard session and X-Project-Id", async () => {
  const r = await srv.api("/audience/count", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId }, body: { condition: pro } });
  expect(r.body).toEqual({ count: 2 });
});

test("an invalid tree is 422 naming the filter; no key is 401", async () => {
  const r = await count({ condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "bogus", value: 1 }] }] } });
  expect(r.status).toBe(422);
  expect(r.body.error.code).toBe("VALIDATION_ERROR");
  expect(r.body.error.errors[0].field).toBe("condition.groups[0].filters[0].operator");
  expect((await srv.api("/audience/count", { body: { condition: pro } })).status).toBe(401);
});

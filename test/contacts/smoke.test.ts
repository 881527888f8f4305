import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type TestServer } from "../support/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

test("smoke", async () => {
  const acc = await createAccount(srv.api);
  const key = acc.secretKey;
  let r = await srv.api("/contacts", { key, body: { email: "A@Example.com", data: { plan: "pro" } } });
  console.log(r.status, r.body);
  r = await srv.api("/v1/track", { key: acc.publicKey, body: { email: "a@example.com", event: "signup", data: { plan: "team", x: { value: 1, persistent: false } } } });
  console.log(r.status, r.body);
  r = await srv.api("/contacts", { key });
  console.log(r.status, JSON.stringify(r.body));
  r = await srv.api("/events", { key });
  console.log(r.status, JSON.stringify(r.body));
  r = await srv.api("/contacts/fields", { key });
  console.log(r.status, JSON.stringify(r.body));
  r = await srv.api("/events/stats", { key });
  console.log(r.status, JSON.stringify(r.body));
  r = await srv.api("/events/names", { key });
  console.log(r.status, JSON.stringify(r.body));
  const fd = new FormData();
  fd.append("file", new File(["email,firstName,subscribed\nb@example.com,Bob,no\nbad,X,\na@example.com,,yes\n"], "x.csv"));
  r = await srv.api("/contacts/import", { key, raw: fd, method: "POST" });
  console.log(r.status, JSON.stringify(r.body));
  await srv.drainJobs();
  r = await srv.api(`/contacts/import/${r.body.jobId}`, { key });
  console.log(r.status, JSON.stringify(r.body));
  expect(1).toBe(1);
});

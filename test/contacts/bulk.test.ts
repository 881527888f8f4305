import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

async function seed(acc: Account, n: number, subscribed = true): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await srv.api("/contacts", { key: acc.secretKey, body: { email: `b${i}@example.com`, subscribed } })).body.id);
  return ids;
}

const run = async (acc: Account, action: string, contactIds: string[]) => {
  const r = await srv.api(`/contacts/${action}`, { key: acc.secretKey, body: { contactIds } });
  expect(r.status).toBe(202);
  expect(Object.keys(r.body)).toEqual(["jobId"]);
  const waiting = (await srv.api(`/contacts/bulk/${r.body.jobId}`, { key: acc.secretKey })).body;
  expect(["waiting", "active", "completed"]).toContain(waiting.state);
  await srv.drainJobs();
  return (await srv.api(`/contacts/bulk/${r.body.jobId}`, { key: acc.secretKey })).body;
};

test("bulk-unsubscribe and bulk-subscribe flip only what changes, record events, report unknown ids", async () => {
  const acc = await createAccount(srv.api);
  const other = await createAccount(srv.api);
  const ids = await seed(acc, 4);
  const foreign = (await srv.api("/contacts", { key: other.secretKey, body: { email: "f@example.com" } })).body.id;
  await srv.api(`/contacts/${ids[3]}`, { key: acc.secretKey, method: "PATCH", body: { subscribed: false } });

  const unsub = await run(acc, "bulk-unsubscribe", [ids[0]!, ids[1]!, ids[3]!, "missing", foreign]);
  expect(unsub).toMatchObject({ type: "bulk-unsubscribe", state: "completed", progress: 100 });
  expect(unsub.result).toEqual({
    total: 5,
    succeeded: 3,
    created: 0,
    updated: 2,
    failed: 2,
    errors: [
      { row: 4, email: null, contactId: "missing", error: "Contact not found" },
      { row: 5, email: null, contactId: foreign, error: "Contact not found" },
    ],
  });
  const subs = (await srv.api("/contacts?subscribed=true", { key: acc.secretKey })).body.data.map((c: any) => c.id);
  expect(subs).toEqual([ids[2]]);
  // The other project's contact is untouched.
  expect((await srv.api(`/contacts/${foreign}`, { key: other.secretKey })).body.subscribed).toBe(true);
  const unsubEvents = await srv.api("/events?name=contact.unsubscribed&limit=100", { key: acc.secretKey });
  expect(unsubEvents.body.total).toBe(3); // one from the PATCH, two from the bulk job
  expect(unsubEvents.body.data.filter((e: any) => e.data.source === "bulk")).toHaveLength(2);

  const sub = await run(acc, "bulk-subscribe", ids);
  expect(sub.result).toMatchObject({ total: 4, succeeded: 4, updated: 3, failed: 0 });
  expect((await srv.api("/contacts?subscribed=true", { key: acc.secretKey })).body.total).toBe(4);
  expect((await srv.api("/events?name=contact.subscribed", { key: acc.secretKey })).body.total).toBe(3);
});

test("bulk-delete removes the contacts and their events", async () => {
  const acc = await createAccount(srv.api);
  const ids = await seed(acc, 3);
  await srv.api("/v1/track", { key: acc.publicKey, body: { email: "b0@example.com", event: "x" } });
  const del = await run(acc, "bulk-delete", [ids[0]!, ids[1]!, "nope"]);
  expect(del.result).toMatchObject({ total: 3, succeeded: 2, failed: 1 });
  const left = await srv.api("/contacts", { key: acc.secretKey });
  expect(left.body.data.map((c: any) => c.id)).toEqual([ids[2]]);
  expect(left.body.total).toBe(1);
  expect((await srv.api("/events", { key: acc.secretKey })).body.total).toBe(0);
});

test("bulk bodies: 1 to 1,000 ids, else 422; job status of another project is 404", async () => {
  const acc = await createAccount(srv.api);
  const other = await createAccount(srv.api);
  for (const body of [{}, { contactIds: [] }, { contactIds: "x" }, { contactIds: Array.from({ length: 1001 }, (_, i) => `id${i}`) }]) {
    const r = await srv.api("/contacts/bulk-subscribe", { key: acc.secretKey, body });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
  }
  const ok = await srv.api("/contacts/bulk-delete", { key: acc.secretKey, body: { contactIds: Array.from({ length: 1000 }, (_, i) => `id${i}`) } });
  expect(ok.status).toBe(202);
  await srv.drainJobs();
  expect((await srv.api(`/contacts/bulk/${ok.body.jobId}`, { key: acc.secretKey })).body.result).toMatchObject({ total: 1000, failed: 1000 });
  expect((await srv.api(`/contacts/bulk/${ok.body.jobId}`, { key: other.secretKey })).status).toBe(404);
  expect((await srv.api(`/contacts/import/${ok.body.jobId}`, { key: acc.secretKey })).status).toBe(404);
});

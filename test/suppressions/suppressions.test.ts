// The suppression list users manage (decisions.md "Suppressions"): a real hard bounce lands on it with
// its reply and source email, manual entries and CSV imports add to it, a lift makes the next send go
// out again (the sink receives it), another project sees and lifts nothing, and every addition and
// lift reaches a subscribed webhook endpoint signed.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { createAccount, type Account } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import { startReceiver, verify, type Receiver } from "../webhooks/support";

setDefaultTimeout(30_000);

let env: DeliveryEnv;
let rx: Receiver;
let key: string;
let endpointSecret: string;
let other: Account;

beforeAll(async () => {
  env = await sendEnv({ config: { allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000] } });
  rx = startReceiver();
  key = env.acct.secretKey;
  const ep = await env.srv.api("/webhook-endpoints", { key, body: { url: rx.url + "/sup", events: ["suppression.*"] } });
  expect(ep.status).toBe(201);
  endpointSecret = ep.body.secret;
  other = await createAccount(env.srv.api, "Other project");
}, 60_000);
afterAll(async () => {
  rx.close();
  await env.close();
});

const send = async (to: string) => {
  const r = await env.srv.api("/v1/send", { key, body: { to, from: `hello@${SENDER}`, subject: "Hi", body: "<p>Hi</p>" } });
  expect(r.status).toBe(200);
  return r.body.data.emails[0].email as string;
};
const hooks = (type: string, email: string) => rx.waitFor(1, (x) => x.path === "/sup" && x.json?.type === type && x.json?.data?.email === email);

describe("suppressions", () => {
  test("a hard bounce is listed with its reply and source email, and announced signed", async () => {
    const to = `gone@${RCPT}`;
    env.sink.onRcpt = (rcpt) => (rcpt === to ? { code: 550, message: "5.1.1 No such mailbox" } : undefined);
    const before = env.srv.clock.now();
    const emailId = await send(to);
    await waitForView(env.srv, key, emailId, "BOUNCED");
    env.sink.onRcpt = () => undefined;
    const list = await env.srv.api(`/suppressions?email=gone@`, { key });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(1);
    expect(list.body.hasMore).toBe(false);
    const s = list.body.data[0];
    expect(s).toMatchObject({ email: to, reason: "HARD_BOUNCE", source: { type: "EMAIL", emailId, jobId: null } });
    expect(s.detail).toContain("550");
    expect(s.detail).toContain("No such mailbox");
    expectTimeBetween(Date.parse(s.createdAt), before, env.srv.clock.now());
    const [hook] = await hooks("suppression.created", to);
    expect(verify(endpointSecret, hook!)).toEqual({ type: "suppression.created", timestamp: s.createdAt, data: s });
    // GET /suppressions/:id answers the same record.
    expect((await env.srv.api(`/suppressions/${s.id}`, { key })).body).toEqual(s);
  });

  test("a manual entry: 201 with the record, 409 when present, 422 for a bad address; the send is SUPPRESSED, not attempted", async () => {
    const to = `blocked@${RCPT}`;
    const r = await env.srv.api("/suppressions", { key, body: { email: "Blocked@" + RCPT, detail: "asked by phone" } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.any(String),
      email: to,
      reason: "MANUAL",
      detail: "asked by phone",
      source: { type: "API", emailId: null, jobId: null },
      createdAt: expect.any(String),
    });
    const dup = await env.srv.api("/suppressions", { key, body: { email: to } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe("CONFLICT");
    const bad = await env.srv.api("/suppressions", { key, body: { email: "not-an-address" } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe("email");
    const badReason = await env.srv.api("/suppressions", { key, body: { email: `x@${RCPT}`, reason: "HARD_BOUNCE" } });
    expect(badReason.status).toBe(422);
    const emailId = await send(to);
    const v = await waitForView(env.srv, key, emailId, "SUPPRESSED");
    expect(v.attempts).toBe(0);
    expect(env.sink.byRecipient(to)).toHaveLength(0);
    await hooks("suppression.created", to);
  });

  test("lifting: 200 with the record, suppression.deleted signed, the next send reaches the sink, the contact's subscription is unchanged", async () => {
    const to = `gone@${RCPT}`;
    const s = (await env.srv.api(`/suppressions?email=${encodeURIComponent(to)}`, { key })).body.data[0];
    const contactBefore = (await env.srv.api(`/contacts?search=gone@`, { key })).body.data[0];
    expect(contactBefore.subscribed).toBe(false); // the bounce unsubscribed it
    const del = await env.srv.api(`/suppressions/${s.id}`, { key, method: "DELETE" });
    expect(del.status).toBe(200);
    expect(del.body).toEqual(s);
    expect((await env.srv.api(`/suppressions/${s.id}`, { key })).status).toBe(404);
    expect((await env.srv.api(`/suppressions/${s.id}`, { key, method: "DELETE" })).status).toBe(404);
    const [hook] = await hooks("suppression.deleted", to);
    expect(verify(endpointSecret, hook!)).toMatchObject({ type: "suppression.deleted", data: s });
    const emailId = await send(to);
    await waitForView(env.srv, key, emailId, "DELIVERED");
    expect(env.sink.byRecipient(to)).toHaveLength(1);
    const contactAfter = (await env.srv.api(`/contacts/${contactBefore.id}`, { key })).body;
    expect(contactAfter.subscribed).toBe(false);
  });

  test("filters (reason, email substring), cursor pages, and session auth", async () => {
    for (const e of ["p1@list.test", "p2@list.test", "p3@list.test"]) expect((await env.srv.api("/suppressions", { key, body: { email: e } })).status).toBe(201);
    const manual = await env.srv.api("/suppressions?reason=MANUAL&email=LIST.TEST", { key });
    expect(manual.body.data.map((s: any) => s.email)).toEqual(["p3@list.test", "p2@list.test", "p1@list.test"]);
    expect(manual.body.total).toBe(3);
    expect((await env.srv.api("/suppressions?reason=COMPLAINT", { key })).body).toEqual({ data: [], cursor: null, hasMore: false, total: 0 });
    expect((await env.srv.api("/suppressions?reason=nope", { key })).status).toBe(400);
    // "%" and "_" are literal in the substring filter.
    expect((await env.srv.api(`/suppressions?email=${encodeURIComponent("%")}`, { key })).body.total).toBe(0);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page: any = await env.srv.api(`/suppressions?limit=2&email=list.test${cursor ? "&cursor=" + encodeURIComponent(cursor) : ""}`, { key });
      seen.push(...page.body.data.map((s: any) => s.email));
      if (!page.body.hasMore) break;
      expect(page.body.data).toHaveLength(2);
      cursor = page.body.cursor;
    }
    expect(seen).toEqual(["p3@list.test", "p2@list.test", "p1@list.test"]);
    const viaSession = await env.srv.api("/suppressions?email=list.test", { cookie: env.acct.cookie, headers: { "x-project-id": env.acct.projectId } });
    expect(viaSession.status).toBe(200);
    expect(viaSession.body.total).toBe(3);
    expect((await env.srv.api("/suppressions", { key: env.acct.publicKey })).status).toBe(401);
  });

  test("tenant isolation: another project's key lists none, reads and lifts nothing", async () => {
    const s = (await env.srv.api("/suppressions?email=blocked@", { key })).body.data[0];
    const list = await env.srv.api("/suppressions", { key: other.secretKey });
    expect(list.body).toEqual({ data: [], cursor: null, hasMore: false, total: 0 });
    expect((await env.srv.api(`/suppressions/${s.id}`, { key: other.secretKey })).status).toBe(404);
    const del = await env.srv.api(`/suppressions/${s.id}`, { key: other.secretKey, method: "DELETE" });
    expect(del.status).toBe(404);
    expect((await env.srv.api(`/suppressions/${s.id}`, { key })).status).toBe(200);
    // The same address may be suppressed in the other project on its own.
    expect((await env.srv.api("/suppressions", { key: other.secretKey, body: { email: s.email } })).status).toBe(201);
  });

  test("CSV import: valid rows become MANUAL suppressions from the job, present ones are left, bad rows reported", async () => {
    const fd = new FormData();
    const csv = "name,email\nA,imp1@csv.test\nB,not-an-address\nC,blocked@" + RCPT + "\nD,IMP2@csv.test\nE,\n";
    fd.append("file", new File([csv], "sup.csv", { type: "text/csv" }));
    const up = await env.srv.api("/suppressions/import", { key, method: "POST", raw: fd });
    expect(up.status).toBe(202);
    const jobId = up.body.jobId;
    const job = await waitFor(async () => (await env.srv.api(`/suppressions/import/${jobId}`, { key })).body, { until: (j) => j.state === "completed", what: "import job" });
    expect(job.result).toEqual({
      total: 5,
      succeeded: 3,
      created: 2,
      updated: 1,
      failed: 2,
      errors: [
        { row: 3, email: "not-an-address", error: "Invalid email" },
        { row: 6, email: null, error: "Missing email" },
      ],
    });
    const list = await env.srv.api("/suppressions?email=csv.test", { key });
    expect(list.body.data.map((s: any) => [s.email, s.reason, s.source])).toEqual([
      ["imp2@csv.test", "MANUAL", { type: "IMPORT", emailId: null, jobId }],
      ["imp1@csv.test", "MANUAL", { type: "IMPORT", emailId: null, jobId }],
    ]);
    await hooks("suppression.created", "imp2@csv.test");
    // No email column: 422; another project's key cannot read the job.
    const fd2 = new FormData();
    fd2.append("file", new File(["name\nA\n"], "x.csv", { type: "text/csv" }));
    const bad = await env.srv.api("/suppressions/import", { key, method: "POST", raw: fd2 });
    expect(bad.status).toBe(422);
    expect((await env.srv.api(`/suppressions/import/${jobId}`, { key: other.secretKey })).status).toBe(404);
  });

  test("the routes are described in /openapi.json", async () => {
    const doc = (await env.srv.api("/openapi.json")).body;
    expect(Object.keys(doc.paths["/suppressions"]).sort()).toEqual(["get", "post"]);
    expect(Object.keys(doc.paths["/suppressions/{id}"]).sort()).toEqual(["delete", "get"]);
    expect(doc.paths["/suppressions/import"].post).toBeDefined();
    expect(doc.paths["/suppressions"].post.requestBody.content["application/json"].schema.properties.email).toBeDefined();
  });
});

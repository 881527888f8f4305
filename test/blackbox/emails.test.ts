// Black-box: the per-message log GET /emails (cursor list) and GET /emails/:id (decisions.md "Beyond the spec").
// Here the list shape, filters and errors of an empty log; send.test.ts reads sent messages back through it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectCursorPage, expectEnvelope, NO_SUCH_ID } from "./support";

let srv: TestServer;
let acc: Account;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB emails");
});
afterAll(() => srv.close());

const q = (qs: string, key = acc.secretKey) => srv.api(`/emails${qs}`, { key });

describe("GET /emails", () => {
  test("an empty project: { data: [], cursor, hasMore: false, total: 0 }", async () => {
    const res = await q("");
    expectCursorPage(res);
    expect(res.body.data).toEqual([]);
    expect(res.body.hasMore).toBe(false);
    expect(res.body.total).toBe(0);
  });

  test("every documented filter is accepted: contactId, campaignId, status, to", async () => {
    for (const qs of [`?contactId=${NO_SUCH_ID}`, `?campaignId=${NO_SUCH_ID}`, "?to=a%40b.example", "?limit=5"]) expectCursorPage(await q(qs));
    for (const s of ["PENDING", "SENDING", "SENT", "DELIVERED", "DEFERRED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED", "SUPPRESSED", "CANCELLED"]) {
      expectCursorPage(await q(`?status=${s}`));
    }
  });

  test("limit above 100 is clamped, not refused", async () => {
    expectCursorPage(await q("?limit=1000"));
  });

  test("limit below 1, a non-numeric limit and an unknown status are 400", async () => {
    expectEnvelope(await q("?limit=0"), 400);
    expectEnvelope(await q("?limit=ten"), 400);
    expectEnvelope(await q("?status=LOST"), 400);
  });

  test("a cursor that was never issued is 400", async () => {
    expectEnvelope(await q("?cursor=%%%not-a-cursor"), 400);
  });

  test("pk is 401 INVALID_API_KEY; a member's session with X-Project-Id works", async () => {
    expectEnvelope(await q("", acc.publicKey), 401, "INVALID_API_KEY");
    const res = await srv.api("/emails", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId } });
    expectCursorPage(res);
  });
});

describe("GET /emails/:id", () => {
  test("an unknown id is 404 NOT_FOUND", async () => {
    expectEnvelope(await srv.api(`/emails/${NO_SUCH_ID}`, { key: acc.secretKey }), 404, "NOT_FOUND");
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createAccount, startServer, type TestServer } from "../support/server";
import { listAll, uploadCsv } from "../audience/support";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

const status = async (key: string, jobId: string) => (await srv.api(`/contacts/import/${jobId}`, { key })).body;

describe("POST /contacts/import", () => {
  test("imports good rows, reports bad rows, maps columns and the subscribed column, records flips", async () => {
    const acc = await createAccount(srv.api);
    const key = acc.secretKey;
    // An existing contact that the file unsubscribes and updates.
    const existing = (await srv.api("/contacts", { key, body: { email: "old@example.com", data: { plan: "pro", city: "Oslo" } } })).body;
    const csv = [
      "Email,First Name,plan,Subscribed,id",
      "ada@example.com,Ada,pro,yes,hack",
      "not-an-email,Bad,free,,",
      "bob@example.com,\"Bob, Jr.\",free,0,",
      ",NoEmail,free,,",
      "OLD@example.com,Olga,,no,",
      "cy@example.com,Cy,team,maybe,",
      "dee@example.com,Dee,,,",
      "",
    ].join("\r\n");
    const up = await uploadCsv(srv.api, key, csv);
    expect(up.status).toBe(202);
    expect(typeof up.body.jobId).toBe("string");
    await srv.drainJobs();
    const s = await status(key, up.body.jobId);
    expect(s).toMatchObject({ id: up.body.jobId, type: "import", state: "completed", progress: 100 });
    expect(s.result).toEqual({
      total: 7,
      succeeded: 4,
      created: 3,
      updated: 1,
      failed: 3,
      errors: [
        { row: 3, email: "not-an-email", error: "Invalid email" },
        { row: 5, email: null, error: "Missing email" },
        { row: 7, email: "cy@example.com", error: expect.stringContaining("Invalid subscribed value") },
      ],
    });
    const all = Object.fromEntries((await listAll(srv.api, key, "")).map((c) => [c.email, c]));
    expect(Object.keys(all).sort()).toEqual(["ada@example.com", "bob@example.com", "dee@example.com", "old@example.com"]);
    expect(all["ada@example.com"]).toMatchObject({ subscribed: true, data: { "First Name": "Ada", plan: "pro" } });
    expect(all["bob@example.com"]).toMatchObject({ subscribed: false, data: { "First Name": "Bob, Jr.", plan: "free" } });
    expect(all["dee@example.com"]).toMatchObject({ subscribed: true, data: { "First Name": "Dee" } });
    // Empty cells do not overwrite; the subscribed column flips the existing contact.
    expect(all["old@example.com"]).toMatchObject({ id: existing.id, subscribed: false, data: { plan: "pro", city: "Oslo", "First Name": "Olga" } });
    const flips = (await srv.api(`/events?contactId=${existing.id}`, { key })).body.data;
    expect(flips).toEqual([expect.objectContaining({ name: "contact.unsubscribed", data: { source: "import" } })]);
    // A new contact imported unsubscribed records no flip.
    expect((await srv.api(`/events?name=contact.unsubscribed`, { key })).body.total).toBe(1);
  });

  test("upload errors: missing file, no email column, empty file 422; over 5 MB 413", async () => {
    const acc = await createAccount(srv.api);
    const key = acc.secretKey;
    const noFile = await srv.api("/contacts/import", { key, method: "POST", raw: new FormData() });
    expect(noFile.status).toBe(422);
    expect(noFile.body.error.errors[0].field).toBe("file");
    const json = await srv.api("/contacts/import", { key, body: { file: "email\na@b.co" } });
    expect(json.status).toBe(422);
    const noEmail = await uploadCsv(srv.api, key, "name,plan\nAda,pro\n");
    expect(noEmail.status).toBe(422);
    expect(noEmail.body.error.errors[0]).toMatchObject({ field: "file", code: "missing_email_column" });
    expect((await uploadCsv(srv.api, key, "")).status).toBe(422);
    expect((await uploadCsv(srv.api, key, 'email,"bad""name"\na@b.co,x\n')).status).toBe(422);
    const big = "email,pad\n" + `a@example.com,${"x".repeat(1000)}\n`.repeat(5300);
    expect(big.length).toBeGreaterThan(5 * 1024 * 1024);
    const tooBig = await uploadCsv(srv.api, key, big);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    expect((await srv.api("/contacts", { key })).body.total).toBe(0);
    // The pk cannot import.
    expect((await uploadCsv(srv.api, acc.publicKey, "email\na@b.co\n")).status).toBe(401);
  });

  test("job status is 404 for another project's job, a bulk job id and unknown ids", async () => {
    const a = await createAccount(srv.api);
    const b = await createAccount(srv.api);
    const up = await uploadCsv(srv.api, a.secretKey, "email\nq@example.com\n");
    await srv.drainJobs();
    expect((await srv.api(`/contacts/import/${up.body.jobId}`, { key: b.secretKey })).status).toBe(404);
    expect((await srv.api(`/contacts/bulk/${up.body.jobId}`, { key: a.secretKey })).status).toBe(404);
    expect((await srv.api(`/contacts/import/nope`, { key: a.secretKey })).status).toBe(404);
  });

  test("a quoted field with a newline, a BOM and extra/missing cells are read correctly", async () => {
    const acc = await createAccount(srv.api);
    const csv = '\uFEFFemail,note\n"multi@example.com","line one\nline two"\nshort@example.com\nextra@example.com,n,unexpected\n';
    const up = await uploadCsv(srv.api, acc.secretKey, csv);
    expect(up.status).toBe(202);
    await srv.drainJobs();
    const s = await status(acc.secretKey, up.body.jobId);
    expect(s.result).toMatchObject({ total: 3, created: 3, failed: 0 });
    const m = (await srv.api("/contacts?search=multi", { key: acc.secretKey })).body.data[0];
    expect(m.data).toEqual({ note: "line one\nline two" });
  });
});

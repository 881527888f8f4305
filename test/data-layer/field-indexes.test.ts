// A segment's `equals` filters get the index each engine can answer a count from: SQLite an
// expression index per field set; PostgreSQL also a partial index of the values (its expression
// indexes cannot give an index-only count: the planner wants the data column itself).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rawAll } from "../../src/db/raw";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
});
afterAll(() => srv.close());

test("a segment on data.plan equals pro and data.country equals it creates its indexes", async () => {
  const condition = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }, { field: "data.country", operator: "equals", value: "it" }] }] };
  expect((await srv.api("/segments", { key: acc.secretKey, body: { name: "Pro in Italy", condition } })).status).toBe(201);
  const hex = (k: string) => Buffer.from(k).toString("hex");
  const composite = `contacts_data_${hex("country")}_${hex("plan")}`;
  const { db, store } = srv.ctx;
  if (store.engine === "sqlite") {
    const names = (await rawAll<{ name: string }>(db, "sqlite", "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'contacts_data_%'")).map((r) => r.name);
    expect(names).toEqual([composite]);
  } else {
    const defs = (await rawAll<{ name: string; def: string }>(db, "postgres", "SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE indexname LIKE 'contacts_data_%' ORDER BY indexname")).map((r) => r.def);
    expect(defs).toEqual([
      `CREATE INDEX ${composite} ON public.contacts USING btree (project_id, ((data ->> 'country'::text)), ((data ->> 'plan'::text)))`,
      expect.stringMatching(new RegExp(`^CREATE INDEX ${composite}_v[0-9a-f]{10} ON public.contacts USING btree \\(project_id, created_at, id\\) WHERE \\(\\(\\(data ->> 'country'::text\\) = 'it'::text\\) AND \\(\\(data ->> 'plan'::text\\) = 'pro'::text\\)\\)$`)),
    ]);
  }
  // The count still answers (through whichever index the planner picks).
  expect((await srv.api("/contacts", { key: acc.secretKey, body: { email: "p@it.test", data: { plan: "pro", country: "it" } } })).status).toBe(201);
  const segs = (await srv.api("/segments", { key: acc.secretKey })).body;
  const id = (segs.data ?? segs)[0].id;
  expect((await srv.api(`/segments/${id}/refresh`, { method: "POST", key: acc.secretKey })).body).toMatchObject({ memberCount: 1 });
});

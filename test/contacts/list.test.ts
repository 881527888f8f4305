import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { listAll, uploadCsv } from "../audience/support";

let srv: TestServer;
let acc: Account;
const N = 250;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
  // 150 contacts share one createdAt (one import chunk): the id tie-breaker must keep the walk exact.
  const rows = ["email,subscribed"];
  for (let i = 0; i < 150; i++) rows.push(`imported${String(i).padStart(3, "0")}@Example.com,${i % 3 === 0 ? "no" : "yes"}`);
  const up = await uploadCsv(srv.api, acc.secretKey, rows.join("\n"));
  expect(up.status).toBe(202);
  await srv.drainJobs();
  for (let i = 0; i < N - 150; i++) {
    srv.clock.advance(1000);
    const r = await srv.api("/contacts", { key: acc.secretKey, body: { email: `posted${String(i).padStart(3, "0")}@test.org`, subscribed: i % 2 === 0 } });
    expect(r.status).toBe(201);
  }
});
afterAll(() => srv.close());

const cmpCreated = (a: any, b: any) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const cmpEmail = (a: any, b: any) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0);

for (const sort of ["createdAt", "email"] as const) {
  for (const dir of ["asc", "desc"] as const) {
    for (const limit of [7, 100]) {
      test(`walk of ${N} contacts sorted by ${sort} ${dir} (limit ${limit}) sees each exactly once, in order`, async () => {
        const all = await listAll(srv.api, acc.secretKey, `sort=${sort}&dir=${dir}`, limit);
        expect(all).toHaveLength(N);
        expect(new Set(all.map((c) => c.id)).size).toBe(N);
        const cmp = sort === "email" ? cmpEmail : cmpCreated;
        const expected = [...all].sort((a, b) => (dir === "asc" ? cmp(a, b) : cmp(b, a)));
        expect(all.map((c) => c.id)).toEqual(expected.map((c) => c.id));
      });
    }
  }
}

test("defaults: createdAt desc, limit 20; unknown sort and dir fall back to the defaults", async () => {
  const def = await srv.api("/contacts", { key: acc.secretKey });
  expect(def.body.data).toHaveLength(20);
  expect(def.body.data[0].email).toBe("posted099@test.org");
  const odd = await srv.api("/contacts?sort=shoeSize&dir=sideways", { key: acc.secretKey });
  expect(odd.status).toBe(200);
  expect(odd.body.data.map((c: any) => c.id)).toEqual(def.body.data.map((c: any) => c.id));
  const emailOdd = await srv.api("/contacts?sort=email&dir=up", { key: acc.secretKey });
  const emailDesc = await srv.api("/contacts?sort=email&dir=desc", { key: acc.secretKey });
  expect(emailOdd.body.data.map((c: any) => c.id)).toEqual(emailDesc.body.data.map((c: any) => c.id));
  const createdAsc = await srv.api("/contacts?sort=bogus&dir=asc", { key: acc.secretKey });
  expect(createdAsc.body.data[0].email).toMatch(/^imported/);
});

test("limit is clamped to 100; invalid limits are 400; total only on the first page", async () => {
  const big = await srv.api("/contacts?limit=1000", { key: acc.secretKey });
  expect(big.status).toBe(200);
  expect(big.body.data).toHaveLength(100);
  expect(big.body).toMatchObject({ hasMore: true, total: N });
  expect(typeof big.body.cursor).toBe("string");
  const next = await srv.api(`/contacts?limit=100&cursor=${encodeURIComponent(big.body.cursor)}`, { key: acc.secretKey });
  expect(next.body.total).toBe(0);
  expect(next.body.data).toHaveLength(100);
  const last = await srv.api(`/contacts?limit=100&cursor=${encodeURIComponent(next.body.cursor)}`, { key: acc.secretKey });
  expect(last.body).toMatchObject({ hasMore: false, cursor: null, total: 0 });
  expect(last.body.data).toHaveLength(50);
  for (const bad of ["0", "-1", "abc", "1.5"]) expect((await srv.api(`/contacts?limit=${bad}`, { key: acc.secretKey })).status).toBe(400);
  expect((await srv.api(`/contacts?cursor=garbage`, { key: acc.secretKey })).status).toBe(400);
});

test("search is a case-insensitive email substring; subscribed filters; totals are the filtered counts", async () => {
  const s = await srv.api("/contacts?search=EXAMPLE.COM&limit=5", { key: acc.secretKey });
  expect(s.body.total).toBe(150);
  expect(s.body.data.every((c: any) => c.email.endsWith("@example.com"))).toBe(true);
  const one = await srv.api("/contacts?search=ted042", { key: acc.secretKey });
  expect(one.body.total).toBe(2); // imported042 and posted042
  const unsub = await listAll(srv.api, acc.secretKey, "subscribed=false", 100);
  expect(unsub.every((c) => c.subscribed === false)).toBe(true);
  expect(unsub).toHaveLength(50 + 50);
  expect((await srv.api("/contacts?subscribed=false", { key: acc.secretKey })).body.total).toBe(100);
  expect((await srv.api("/contacts?subscribed=true", { key: acc.secretKey })).body.total).toBe(150);
  const both = await srv.api("/contacts?subscribed=true&search=test.org", { key: acc.secretKey });
  expect(both.body.total).toBe(50);
  expect((await srv.api("/contacts?subscribed=maybe", { key: acc.secretKey })).status).toBe(400);
  const nothing = await srv.api("/contacts?search=zzz-none", { key: acc.secretKey });
  expect(nothing.body).toEqual({ data: [], cursor: null, hasMore: false, total: 0 });
  const walk = await listAll(srv.api, acc.secretKey, "search=posted&sort=email&dir=asc", 30);
  expect(walk).toHaveLength(100);
});

test("another project sees none of these contacts", async () => {
  const other = await createAccount(srv.api);
  const r = await srv.api("/contacts?search=example", { key: other.secretKey });
  expect(r.body).toEqual({ data: [], cursor: null, hasMore: false, total: 0 });
  expect((await srv.api("/contacts", { key: other.secretKey })).body.total).toBe(0);
});

test("a search with more matches than the in-memory candidate cap pages through the index: exact walk and total", async () => {
  const big = await createAccount(srv.api);
  const rows = ["email"];
  for (let i = 0; i < 5200; i++) rows.push(`member${i}@crowd.io`);
  for (let i = 0; i < 30; i++) rows.push(`outsider${i}@else.io`);
  await uploadCsv(srv.api, big.secretKey, rows.join("\n"));
  await srv.drainJobs();
  const first = await srv.api("/contacts?search=CROWD&limit=100", { key: big.secretKey });
  expect(first.body.total).toBe(5200);
  for (const sort of ["email", "createdAt"]) {
    const all = await listAll(srv.api, big.secretKey, `search=crowd&sort=${sort}&dir=asc`, 100);
    expect(all).toHaveLength(5200);
    expect(new Set(all.map((c) => c.id)).size).toBe(5200);
  }
  const rare = await listAll(srv.api, big.secretKey, "search=outsider1&sort=email&dir=desc", 3);
  const expected = ["outsider1@else.io", ...Array.from({ length: 10 }, (_, i) => `outsider1${i}@else.io`)].sort().reverse();
  expect(rare.map((c) => c.email)).toEqual(expected);
});

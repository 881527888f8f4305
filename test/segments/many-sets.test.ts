// A condition may hold up to 200 filters (MAX_FILTERS). Event and static-segment filters are contact-set
// subqueries; on PostgreSQL more than joinedSetLimit (16) of them are planned as subplans of their own,
// not joins (200 joins took 50 s to plan). Same answers either way, on both engines.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { track } from "../audience/support";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
  // all@ has events e0..e199; most@ all but e150; none@ has none.
  const tracks: Promise<unknown>[] = [];
  for (let i = 0; i < 200; i++) {
    tracks.push(track(srv.api, acc.publicKey, { email: "all@sets.example", event: `e${i}` }));
    if (i !== 150) tracks.push(track(srv.api, acc.publicKey, { email: "most@sets.example", event: `e${i}` }));
  }
  tracks.push(track(srv.api, acc.publicKey, { email: "none@sets.example", event: "other" }));
  for (const r of (await Promise.all(tracks)) as { status: number }[]) expect(r.status).toBe(200);
});
afterAll(() => srv.close());

const events = (n: number, operator = "triggered") => Array.from({ length: n }, (_, i) => ({ field: `event.e${i}`, operator }));

async function count(filters: unknown[], logic = "AND"): Promise<number> {
  const r = await srv.api("/segments", { key: acc.secretKey, body: { name: `n${Math.random()}`, condition: { logic, groups: [{ filters }] } } });
  expect(r.status).toBe(201);
  return r.body.memberCount;
}

describe("conditions with many event filters", () => {
  test("16 (joined) and 17, 40 and 200 (own subplans) event filters count the same contacts", async () => {
    expect(await count(events(16))).toBe(2);
    expect(await count(events(17))).toBe(2);
    expect(await count(events(40))).toBe(2);
    expect(await count(events(200))).toBe(1);
  });

  test("negated and OR-ed sets past the limit: notTriggered x 200 matches only the contact without events", async () => {
    expect(await count(events(200, "notTriggered"))).toBe(1);
    // OR of 200 sets inside one group's filters is AND-ed by the group; as groups they are OR-ed.
    const r = await srv.api("/segments", {
      key: acc.secretKey,
      body: { name: "or", condition: { logic: "OR", groups: events(200).map((f) => ({ filters: [f] })) } },
    });
    expect(r.status).toBe(201);
    expect(r.body.memberCount).toBe(2);
  });
});

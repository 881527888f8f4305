import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { EventFeed, type FeedEvent } from "../../src/jobs/event-feed";
import { track } from "../audience/support";
import { createAccount, startServer, type TestServer } from "../support/server";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

/** A feed of its own over the server's database, with consumers that record what they are handed. */
function feedOf(srv: TestServer) {
  return new EventFeed(srv.ctx.db, srv.ctx.clock, srv.ctx.log, { batchSize: 3, pollMs: 50 });
}

async function cursor(name: string): Promise<number> {
  const r = await srv.ctx.db.selectFrom("event_cursors").select("last_seq").where("consumer", "=", name).executeTakeFirst();
  return Number(r?.last_seq);
}

describe("event feed", () => {
  test("a new consumer starts at the end of the log, then sees every later event once, in order", async () => {
    const acc = await createAccount(srv.api);
    await track(srv.api, acc.publicKey, { email: "old@example.com", event: "before" });
    const seen: FeedEvent[] = [];
    const feed = feedOf(srv);
    feed.subscribe("t-order", async (_trx, evs) => void seen.push(...evs));
    await feed.start();
    for (let i = 0; i < 7; i++) await track(srv.api, acc.publicKey, { email: `u${i}@example.com`, event: `e${i}`, data: { i } });
    await feed.drain();
    await feed.stop();
    expect(seen.map((e) => e.name)).toEqual(["e0", "e1", "e2", "e3", "e4", "e5", "e6"]);
    expect(seen.map((e) => e.data)).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => ({ i })));
    expect(seen.every((e) => e.projectId === acc.projectId && typeof e.contactId === "string")).toBe(true);
    expect(seen.map((e) => e.seq)).toEqual([...seen.map((e) => e.seq)].sort((a, b) => a - b));
    expect(await cursor("t-order")).toBe(seen.at(-1)!.seq);
  });

  test("the handler's writes and the cursor commit together; a restarted feed resumes from the cursor", async () => {
    const acc = await createAccount(srv.api);
    const names: string[] = [];
    let feed = feedOf(srv);
    feed.subscribe("t-resume", async (_trx, evs) => void names.push(...evs.map((e) => e.name)));
    await feed.start();
    await track(srv.api, acc.publicKey, { email: "a@example.com", event: "one" });
    await feed.drain();
    await feed.stop();
    // Events committed while nobody follows the log are handed over on the next start.
    await track(srv.api, acc.publicKey, { email: "a@example.com", event: "two" });
    await track(srv.api, acc.publicKey, { email: "a@example.com", event: "three" });
    feed = feedOf(srv);
    feed.subscribe("t-resume", async (_trx, evs) => void names.push(...evs.map((e) => e.name)));
    await feed.start();
    await feed.drain();
    await feed.stop();
    expect(names).toEqual(["one", "two", "three"]);
  });

  test("a handler that throws rolls its batch back; a poisoned event is skipped alone", async () => {
    const acc = await createAccount(srv.api);
    const handled: string[] = [];
    const feed = feedOf(srv);
    feed.subscribe(
      "t-poison",
      async (trx, evs) => {
        for (const e of evs) {
          if (e.name === "bad") throw new Error("poison");
          // A write inside the feed's transaction: rolled back with the batch that failed.
          await trx.insertInto("settings").values({ key: `feed-test-${e.id}`, value: e.name }).execute();
          handled.push(e.name);
        }
      },
      { names: (n) => n !== "ignored" },
    );
    await feed.start();
    for (const name of ["ok1", "bad", "ignored", "ok2"]) await track(srv.api, acc.publicKey, { email: "p@example.com", event: name });
    await feed.drain();
    await feed.stop();
    const rows = await srv.ctx.db.selectFrom("settings").select("value").where("key", "like", "feed-test-%").execute();
    expect(rows.map((r) => r.value).sort()).toEqual(["ok1", "ok2"]);
    expect(handled.filter((n) => n === "ok1").length).toBeGreaterThanOrEqual(1);
    expect(handled).not.toContain("ignored");
  });

  test("several consumers: each gets every event once; one that fails or joins late never holds the others back", async () => {
    const acc = await createAccount(srv.api);
    const seen: Record<string, string[]> = { a: [], b: [], late: [] };
    const record = (who: string) => async (trx: Parameters<Parameters<EventFeed["subscribe"]>[1]>[0], evs: FeedEvent[]) => {
      for (const e of evs) {
        if (who === "b" && e.name === "poison") throw new Error("b cannot take this one");
        await trx.insertInto("settings").values({ key: `feed-multi-${who}-${e.id}`, value: e.name }).execute();
        seen[who]!.push(e.name);
      }
    };
    let feed = feedOf(srv);
    feed.subscribe("t-multi-a", record("a"));
    feed.subscribe("t-multi-b", record("b"));
    await feed.start();
    for (const name of ["m1", "m2", "poison", "m3", "m4"]) await track(srv.api, acc.publicKey, { email: "m@example.com", event: name });
    await feed.drain();
    await feed.stop();
    // A third consumer joins (its cursor starts at the end): the cursors differ, then agree again.
    feed = feedOf(srv);
    feed.subscribe("t-multi-a", record("a"));
    feed.subscribe("t-multi-b", record("b"));
    feed.subscribe("t-multi-late", record("late"));
    await feed.start();
    for (const name of ["n1", "n2", "n3", "n4"]) await track(srv.api, acc.publicKey, { email: "m@example.com", event: name });
    await feed.drain();
    await feed.stop();
    const committed = async (who: string) =>
      (await srv.ctx.db.selectFrom("settings").select("value").where("key", "like", `feed-multi-${who}-%`).execute()).map((r) => r.value).sort();
    expect(await committed("a")).toEqual(["m1", "m2", "m3", "m4", "n1", "n2", "n3", "n4", "poison"]);
    expect(await committed("b")).toEqual(["m1", "m2", "m3", "m4", "n1", "n2", "n3", "n4"]);
    expect(await committed("late")).toEqual(["n1", "n2", "n3", "n4"]);
    const last = Math.max(await cursor("t-multi-a"), await cursor("t-multi-b"), await cursor("t-multi-late"));
    expect([await cursor("t-multi-a"), await cursor("t-multi-b"), await cursor("t-multi-late")]).toEqual([last, last, last]);
  });

  test("sequence numbers are never reused after the newest events are deleted", async () => {
    const acc = await createAccount(srv.api);
    const a = await track(srv.api, acc.publicKey, { email: "d@example.com", event: "gone" });
    const first = await srv.ctx.db.selectFrom("events").select("seq").where("id", "=", a.body.data.event).executeTakeFirstOrThrow();
    expect((await srv.api(`/events/gone`, { method: "DELETE", key: acc.secretKey })).status).toBe(200);
    const b = await track(srv.api, acc.publicKey, { email: "d@example.com", event: "next" });
    const second = await srv.ctx.db.selectFrom("events").select("seq").where("id", "=", b.body.data.event).executeTakeFirstOrThrow();
    expect(second.seq).toBeGreaterThan(first.seq);
  });
});

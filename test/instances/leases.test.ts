// Leases across instances (issue 32): two instances (two contexts in this process, each with its own
// MAILSVC_INSTANCE_ID) over one database. On PostgreSQL several instances share a database: start-up
// takes back only what is its own or whose lease ended. On SQLite (one instance per file) start-up
// still takes back every claim a dead run left.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Config } from "../../src/config";
import { outboxStore } from "../../src/mail/outbox/outbox-store";
import { TEST_ENGINE } from "../support/postgres";
import { startServer, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";

let env: DeliveryEnv;
let key: string;
beforeAll(async () => {
  env = await sendEnv({ config: { instanceId: "instance-a" } });
  key = env.acct.secretKey;
});
afterAll(() => env.close());

/** A second instance on the first one's database. */
function peer(instanceId: string, more: Partial<Config> = {}): Promise<TestServer> {
  // The same dbPath names the same database on either engine (the same PostgreSQL database too).
  const { dnsServers, mxPort } = env.srv.ctx.config;
  return startServer({ dbPath: env.srv.dbPath, clock: env.srv.clock, config: { dnsServers, mxPort, instanceId, ...more } });
}

async function sentEmails(n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await env.srv.api("/v1/send", { key, body: { to: `lease${i}@${RCPT}`, from: `hello@${SENDER}`, subject: "Lease", body: "<p>hi</p>" } });
    expect(r.status).toBe(200);
    ids.push(r.body.data.emails[0].email);
  }
  for (const id of ids) await waitForView(env.srv, key, id, "DELIVERED");
  return ids;
}

/** Puts an email back in SENDING as a claim of `by` until `until` (what a killed instance leaves). */
async function leaseAs(id: string, by: string, until: number) {
  await env.srv.ctx.db.updateTable("emails").set({ status: "SENDING", locked_by: by, lease_until: until }).where("id", "=", id).execute();
}

test("a claim records the instance and its lease", async () => {
  const [id] = await sentEmails(1);
  // The claim's columns are cleared by the outcome; the claim itself is seen through a row claimed now.
  await env.srv.ctx.db.updateTable("emails").set({ status: "PENDING", next_attempt_at: env.srv.clock.now() + 3_600_000 }).where("id", "=", id!).execute();
  const now = env.srv.clock.now() + 3_600_001;
  const store = outboxStore(env.srv.ctx);
  const claimed = await store.claim(now, now + 1234, 10, (rows) => rows.filter((r) => r.id === id).map((r) => r.id));
  expect(claimed.map((r) => r.id)).toEqual([id!]);
  const row = await env.srv.ctx.db.selectFrom("emails").select(["status", "locked_by", "lease_until"]).where("id", "=", id!).executeTakeFirstOrThrow();
  expect(row).toEqual({ status: "SENDING", locked_by: "instance-a", lease_until: now + 1234 });
  // Put back by its holder (shutdown): only its own claims move.
  expect(await store.requeue(now, [id!])).toBe(1);
  await env.srv.ctx.db.updateTable("emails").set({ status: "DELIVERED", next_attempt_at: null }).where("id", "=", id!).execute();
});

test("a settled email keeps no claim: delivered or deferred, locked_by and lease_until are cleared", async () => {
  const [id] = await sentEmails(1);
  const claim = async () => env.srv.ctx.db.selectFrom("emails").select(["status", "locked_by", "lease_until"]).where("id", "=", id!).executeTakeFirstOrThrow();
  expect(await claim()).toEqual({ status: "DELIVERED", locked_by: null, lease_until: null });
  // A deferral too (the MX answers 451): the row waits for its retry unclaimed.
  const to = `lease-defer@${RCPT}`;
  env.sink.onRcpt = (rcpt) => (rcpt === to ? { code: 451 } : undefined);
  try {
    const r = await env.srv.api("/v1/send", { key, body: { to, from: `hello@${SENDER}`, subject: "Lease", body: "<p>hi</p>" } });
    expect(r.status).toBe(200);
    const deferred = r.body.data.emails[0].email as string;
    await waitForView(env.srv, key, deferred, "DEFERRED");
    const row = await env.srv.ctx.db.selectFrom("emails").select(["status", "locked_by", "lease_until"]).where("id", "=", deferred).executeTakeFirstOrThrow();
    expect(row).toEqual({ status: "DEFERRED", locked_by: null, lease_until: null });
  } finally {
    env.sink.onRcpt = () => undefined;
  }
});

test("start-up takes back its own and expired claims, never a live peer's SENDING emails (PostgreSQL); every claim on SQLite", async () => {
  const [live, expired, own] = await sentEmails(3);
  const now = env.srv.clock.now();
  await leaseAs(live!, "instance-a", now + 600_000);
  await leaseAs(expired!, "instance-a", now - 1);
  await leaseAs(own!, "instance-b", now + 600_000);
  const b = await peer("instance-b");
  try {
    b.ctx.log.flush();
    const line = b.logs.flatMap((chunk) => chunk.trim().split("\n")).map((l) => JSON.parse(l)).find((l) => l.msg === "outbox: requeued emails left in SENDING by the previous run");
    expect(line?.count).toBe(TEST_ENGINE === "postgres" ? 2 : 3);
    const status = async (id: string) => (await env.srv.ctx.db.selectFrom("emails").select(["status", "locked_by"]).where("id", "=", id).executeTakeFirstOrThrow());
    if (TEST_ENGINE === "postgres") expect(await status(live!)).toEqual({ status: "SENDING", locked_by: "instance-a" });
    else expect((await status(live!)).status).not.toBe("SENDING");
    // What was taken back is sent again by the instance that took it.
    for (const id of TEST_ENGINE === "postgres" ? [expired!, own!] : [live!, expired!, own!]) {
      await waitFor(() => status(id), { until: (s) => s.status === "DELIVERED", what: `email ${id} delivered again` });
    }
  } finally {
    await b.close();
    await env.srv.ctx.db.updateTable("emails").set({ status: "DELIVERED", locked_by: null, lease_until: null }).where("id", "=", live!).execute();
  }
});

test("an email whose lease ended is requeued exactly once when two instances sweep at the same moment", async () => {
  const [id] = await sentEmails(1);
  const now = env.srv.clock.now();
  await leaseAs(id!, "instance-gone", now - 1);
  const b = await peer("instance-b");
  try {
    // b's start-up may take it back first (an expired lease); then both sweeps find nothing.
    await env.srv.ctx.db.updateTable("emails").set({ status: "SENDING", locked_by: "instance-gone", lease_until: now - 1, next_attempt_at: now + 3_600_000 }).where("id", "=", id!).execute();
    const [x, y] = await Promise.all([outboxStore(env.srv.ctx).requeue(now, [id!], "expired"), outboxStore(b.ctx).requeue(now, [id!], "expired")]);
    expect(x + y).toBe(1);
    // A lease renewed meanwhile (lease_until in the future) is not taken.
    await env.srv.ctx.db.updateTable("emails").set({ status: "SENDING", locked_by: "instance-b", lease_until: now + 60_000 }).where("id", "=", id!).execute();
    expect(await outboxStore(env.srv.ctx).requeue(now, [id!], "expired")).toBe(0);
  } finally {
    await b.close();
    await env.srv.ctx.db.updateTable("emails").set({ status: "DELIVERED", locked_by: null, lease_until: null, next_attempt_at: null }).where("id", "=", id!).execute();
  }
});

test("start-up leaves a live peer's active job alone (PostgreSQL) and takes back its own or an expired one", async () => {
  const jobs = env.srv.ctx.jobs;
  const now = env.srv.clock.now();
  const ids = [];
  for (const [by, until] of [["instance-a", now + 600_000], ["instance-a", now - 1], ["instance-b", now + 600_000]] as const) {
    const id = await jobs.enqueue("test.lease", {}, { runAt: now + 3_600_000 });
    await env.srv.ctx.db.updateTable("jobs").set({ state: "active", locked_by: by, lease_until: until }).where("id", "=", id).execute();
    ids.push(id);
  }
  const b = await peer("instance-b");
  try {
    const states = await Promise.all(ids.map(async (id) => (await b.ctx.jobs.get(id))!.state));
    expect(states).toEqual(TEST_ENGINE === "postgres" ? ["active", "waiting", "waiting"] : ["waiting", "waiting", "waiting"]);
  } finally {
    await b.close();
    await env.srv.ctx.db.deleteFrom("jobs").where("type", "=", "test.lease").execute();
  }
});

test("a job claimed by an instance carries its id while it runs", async () => {
  let seen: unknown;
  env.srv.ctx.jobs.register("test.holder", async (job) => {
    seen = (await env.srv.ctx.db.selectFrom("jobs").select(["locked_by", "state"]).where("id", "=", job.id).executeTakeFirst());
  });
  const id = await env.srv.ctx.jobs.enqueue("test.holder", {});
  await env.srv.drainJobs();
  expect(seen).toEqual({ locked_by: "instance-a", state: "active" });
  expect(await env.srv.ctx.db.selectFrom("jobs").select(["state", "locked_by"]).where("id", "=", id).executeTakeFirst()).toEqual({ state: "completed", locked_by: null });
});

test("a periodic task runs once per due time with two instances", async () => {
  const b = await peer("instance-b");
  const runs: { by: string; second: number }[] = [];
  try {
    for (const s of [env.srv, b]) {
      s.ctx.schedules.cron("test.every-second", "* * * * * *", () => {
        runs.push({ by: s.ctx.config.instanceId, second: Math.round(Date.now() / 1000) });
      });
    }
    await waitFor(async () => runs.length, { until: (n) => n >= 3, timeoutMs: 10_000, what: "three runs" });
  } finally {
    await b.close();
  }
  const seconds = runs.map((r) => r.second);
  expect(new Set(seconds).size).toBe(seconds.length);
  const row = await env.srv.ctx.db.selectFrom("periodic_tasks").selectAll().where("name", "=", "test.every-second").executeTakeFirstOrThrow();
  expect(["instance-a", "instance-b"]).toContain(row.run_by!);
  expect(row.due_at).toBeGreaterThan(row.run_at!);
});

// SQLite: one instance per file, whose own token bucket holds the rate at claim time (campaigns/schedule.test.ts).
test.skipIf(TEST_ENGINE !== "postgres")("the send rate is shared by instances on PostgreSQL: a budget per project and second, taken as messages leave", async () => {
  const b = await peer("instance-b");
  try {
    const project = env.acct.projectId;
    const window = Math.floor(Date.now() / 1000) * 1000 + 3_600_000; // a second nobody else uses
    // Two instances take from the same second at once, with a rate of 3 a second.
    const [x, y] = await Promise.all([outboxStore(env.srv.ctx).takeSendBudget(project, window, 2, 3), outboxStore(b.ctx).takeSendBudget(project, window, 2, 3)]);
    expect([x, y].sort()).toEqual([1, 2]);
    // The same second has nothing left; the next one has 3 again.
    expect(await outboxStore(b.ctx).takeSendBudget(project, window, 2, 3)).toBe(0);
    expect(await outboxStore(env.srv.ctx).takeSendBudget(project, window + 1000, 5, 3)).toBe(3);
  } finally {
    await b.close();
  }
});

test("a live instance renews the lease of a long job (every third of MAILSVC_LEASE)", async () => {
  const b = await peer("instance-b", { leaseMs: 3_000 });
  try {
    const leases: number[] = [];
    const read = async (id: string) => Number((await b.ctx.db.selectFrom("jobs").select("lease_until").where("id", "=", id).executeTakeFirstOrThrow()).lease_until);
    b.ctx.jobs.register("test.long", async (job) => {
      leases.push(await read(job.id));
      await Bun.sleep(1_500);
      leases.push(await read(job.id));
    });
    await b.ctx.jobs.enqueue("test.long", {});
    await waitFor(() => leases.length, { until: (n) => n === 2, what: "the long job to finish" });
    expect(leases[1]!).toBeGreaterThan(leases[0]!);
  } finally {
    await b.close();
  }
});

test("an instance takes over a peer's expired email claims within a lease of their end when MAILSVC_LEASE is under a minute", async () => {
  const [id] = await sentEmails(1);
  const b = await peer("instance-b", { leaseMs: 3_000 });
  try {
    await Bun.sleep(700); // b's first outbox round (its first lease sweep) has run
    const now = env.srv.clock.now();
    // A peer that died holding the email: its lease ends in 1 s.
    await leaseAs(id!, "instance-gone", now + 1_000);
    env.srv.clock.advance(4_000); // past the lease and past b's sweep period (its lease), well under a minute
    const status = async () => (await env.srv.ctx.db.selectFrom("emails").select(["status", "locked_by"]).where("id", "=", id!).executeTakeFirstOrThrow());
    await waitFor(status, { until: (s) => s.status === "DELIVERED", timeoutMs: 5_000, what: `email ${id} delivered again` });
    b.ctx.log.flush();
    const line = b.logs.flatMap((chunk) => chunk.trim().split("\n")).map((l) => JSON.parse(l)).find((l) => l.msg === "outbox: requeued emails whose lease expired");
    expect(line?.count).toBe(1);
  } finally {
    await b.close();
  }
});

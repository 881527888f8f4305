// Caches, wake-ups and idempotency keys across instances (issue 32): two instances (two contexts in this
// process, each with its own MAILSVC_INSTANCE_ID and its own caches) over one database. A change made
// through A is seen by B within the documented bound (docs/operations.md "Several instances": the
// NOTIFY latency; the tests allow BOUND_MS). B's cache is always read first, so what is checked is the
// invalidation, not a cold read. A's outbox is stopped and B's poll is a minute long: mail enqueued
// through A is sent by B only because A's wake-up reached it.
//
// On SQLite one file is one instance (decisions.md): there is no peer channel, so the tests of what a
// peer's cache sees are skipped there (`peerTest`); session revocation and idempotency keys, which live in
// the database, run on both engines.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Config } from "../../src/config";
import { dropPeerListeners } from "../../src/db/peers";
import { enforceReputation } from "../../src/mail/deliverability/reputation";
import { insertContent, insertEmails } from "../../src/mail/outbox/enqueue";
import { addVerifiedDomain, publishRecords } from "../domains/support";
import { RCPT, SENDER, sendEnv, verifyDkim, waitForView } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";
import { TEST_ENGINE } from "../support/postgres";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";

setDefaultTimeout(30_000);

/** How soon B must see A's change (NOTIFY is milliseconds; this leaves room for a loaded machine). */
const BOUND_MS = 2_000;
const onPostgres = TEST_ENGINE === "postgres";
/** Needs PostgreSQL: on SQLite there is one instance per file, so no peer whose cache could be stale. */
const peerTest = test.skipIf(!onPostgres);

let env: DeliveryEnv;
let a: TestServer;
let b: TestServer;
let acct: Account;
let key: string;

/** Another instance on A's database (the same dbPath names the same database on either engine). */
function peer(instanceId: string, more: Partial<Config> = {}): Promise<TestServer> {
  const { dnsServers, mxPort } = env.srv.ctx.config;
  return startServer({ dbPath: env.srv.dbPath, clock: env.srv.clock, config: { dnsServers, mxPort, instanceId, ...more } });
}

/** Polls `read` until `ok`, at most BOUND_MS. */
const within = <T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string) => waitFor(read, { until: ok, timeoutMs: BOUND_MS, intervalMs: 10, what });

const send = (srv: TestServer, body: Record<string, unknown>, k = key, headers?: Record<string, string>) =>
  srv.api("/v1/send", { key: k, headers, body: { to: `x@${RCPT}`, from: `hello@${SENDER}`, subject: "Peers", body: "<p>hi</p>", ...body } });

beforeAll(async () => {
  env = await sendEnv({ config: { instanceId: "instance-a" } });
  a = env.srv;
  acct = env.acct;
  key = acct.secretKey;
  b = await peer("instance-b");
  if (onPostgres) {
    // A sends nothing; B looks for due mail once a minute: only a wake-up starts B's outbox.
    await a.ctx.services.outbox.stop();
    b.ctx.services.outbox.opts.pollMs = 60_000;
    await Bun.sleep(b.ctx.services.outbox.opts.pollMs > 0 ? 600 : 0); // the round scheduled with the old poll passes
    await waitFor(async () => a.ctx.services.peers.listening && b.ctx.services.peers.listening, { until: Boolean, what: "both instances listening" });
  }
}, 60_000);
afterAll(async () => {
  await b?.close();
  await env?.close();
});

describe("caches: a change through A is seen by B", () => {
  peerTest("a rotated secret key: the old key is 401 on B right after, the new one works on B", async () => {
    expect((await b.api("/emails", { key })).status).toBe(200); // B caches the key
    const rot = await a.api(`/users/@me/projects/${acct.projectId}/regenerate-keys`, { method: "POST", cookie: acct.cookie });
    expect(rot.status).toBe(200);
    const old = key;
    acct = { ...acct, secretKey: rot.body.secret, publicKey: rot.body.public };
    key = acct.secretKey;
    expect(key).not.toBe(old);
    const r = await within(() => b.api("/emails", { key: old }), (r) => r.status === 401, "the old key refused on B");
    expect(r.body.error.code).toBe("INVALID_API_KEY");
    expect((await b.api("/emails", { key })).status).toBe(200);
  });

  peerTest("a project disabled through A (sending reputation) answers 403 PROJECT_DISABLED on B", async () => {
    const other = await createAccount(a.api, "Bouncy");
    expect((await b.api("/emails", { key: other.secretKey })).status).toBe(200); // B caches it enabled
    // 100 sends, 20 hard bounces in the window (written as the outbox would leave them), then A's check.
    const now = a.clock.now();
    await a.ctx.db.transaction().execute(async (trx) => {
      const contentId = await insertContent(trx, now, { projectId: other.projectId, subject: "s", html: "<p>b</p>", fromEmail: `news@${SENDER}` });
      const ids = await insertEmails(
        trx,
        now,
        a.ctx.config.hostname,
        Array.from({ length: 100 }, (_, i) => ({ projectId: other.projectId, contentId, contactId: null, toEmail: `r${i}@${RCPT}`, vars: {}, sourceType: "TRANSACTIONAL" as const })),
      );
      await trx.updateTable("emails").set({ status: "DELIVERED", sent_at: now, next_attempt_at: null }).where("id", "in", ids).execute();
      await trx.updateTable("emails").set({ status: "BOUNCED", bounced_at: now }).where("id", "in", ids.slice(0, 20)).execute();
    });
    expect(await enforceReputation(a.ctx, other.projectId)).toBe(true);
    const r = await within(() => b.api("/emails", { key: other.secretKey }), (r) => r.status === 403, "the project disabled on B");
    expect(r.body.error.code).toBe("PROJECT_DISABLED");
  });

  peerTest("a domain deleted through A: B refuses to send from it", async () => {
    const d = await addVerifiedDomain(a.api, env.dns, acct, "gone.example");
    const ok = await send(b, { from: `hi@gone.example` }); // B caches the project's verified domains
    expect(ok.status).toBe(200);
    expect((await a.api(`/domains/${d.id}`, { method: "DELETE", key })).status).toBe(200);
    const refused = await within(() => send(b, { from: `hi@gone.example` }), (r) => r.status !== 200, "the deleted domain refused on B");
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain("gone.example");
    await waitForView(b, key, ok.body.data.emails[0].email, "DELIVERED");
  });

  peerTest("sandbox switched on through A: B accepts an unverified sender and captures the mail; off again: B refuses", async () => {
    const patch = (sandbox: boolean) => a.api(`/users/@me/projects/${acct.projectId}`, { method: "PATCH", cookie: acct.cookie, body: { sandbox } });
    const before = await send(b, { from: `hi@unverified.example` }); // B caches "not a sandbox"
    expect(before.status).toBe(403);
    expect((await patch(true)).status).toBe(200);
    const r = await within(() => send(b, { from: `hi@unverified.example`, to: `sbx@${RCPT}` }), (r) => r.status === 200, "B accepts the sandbox send");
    const view = await waitForView(b, key, r.body.data.emails[0].email, "DELIVERED");
    expect(view.sandbox).toBe(true);
    expect(env.sink.byRecipient(`sbx@${RCPT}`)).toEqual([]); // captured, never sent
    expect((await patch(false)).status).toBe(200);
    expect((await within(() => send(b, { from: `hi@unverified.example` }), (r) => r.status === 403, "B refuses again")).status).toBe(403);
  });

  peerTest("a DKIM rotation finished through A: B signs with the new key at once", async () => {
    const d = await addVerifiedDomain(a.api, env.dns, acct, "rot.example");
    const sendFromRot = async (to: string) => {
      const r = await send(b, { from: `hi@rot.example`, to });
      expect(r.status).toBe(200);
      await waitForView(b, key, r.body.data.emails[0].email, "DELIVERED");
      return env.sink.byRecipient(to).at(-1)!;
    };
    const first = await sendFromRot(`k1@${RCPT}`); // B caches the signing key
    expect((await verifyDkim(env, first.raw))[0]).toMatchObject({ status: { result: "pass" } });
    const rot = await a.api(`/domains/${d.id}/rotate-dkim`, { method: "POST", key });
    expect(rot.status).toBe(200);
    publishRecords(env.dns, rot.body);
    const switched = (await a.api(`/domains/${d.id}/verify`, { key })).body;
    expect(switched.selector).toBe(rot.body.nextSelector);
    await Bun.sleep(50);
    const after = await sendFromRot(`k2@${RCPT}`);
    const sig = after.raw.toString().match(/DKIM-Signature:[^]*?\bs=([^;\s]+)/i)?.[1];
    expect(sig).toBe(switched.selector);
    expect((await verifyDkim(env, after.raw))[0]).toMatchObject({ status: { result: "pass" } });
  });

  peerTest("a tracked segment edited through A: tracks on B follow the new condition", async () => {
    const cond = (value: string) => ({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value }] }] });
    const seg = await a.api("/segments", { key, body: { name: "Plan", condition: cond("pro"), trackMembership: true } });
    expect(seg.status).toBe(201);
    // Stored membership moves by entry events (GET /segments/:id/contacts is evaluated live, so it would not tell).
    const entered = async () => {
      const evs = (await b.api(`/events?name=segment.plan.entry&limit=100`, { key })).body.data as { contactId: string }[];
      const ids = new Set(evs.map((e) => e.contactId));
      const all = (await b.api(`/contacts?search=${encodeURIComponent("@seg.example")}`, { key })).body.data as { id: string; email: string }[];
      return all.filter((c) => ids.has(c.id)).map((c) => c.email).sort();
    };
    // /v1/track follows tracked segments with the cached plan (B may hold the project's plan from earlier
    // tests). Within the bound after a change through A, a track on B follows it: a new contact is tracked
    // until one enters (a track made before B's cache was cleared rightly followed the old plan).
    const track = (email: string, plan: string) => b.api("/v1/track", { key: acct.publicKey, body: { email, event: "plan", data: { plan } } });
    const trackUntilEntered = async (prefix: string, plan: string): Promise<string[]> => {
      let n = 0;
      return waitFor(
        async () => {
          expect((await track(`${prefix}${++n}@seg.example`, plan)).status).toBe(200);
          return entered();
        },
        { until: (m) => m.some((e) => e.startsWith(prefix)), timeoutMs: BOUND_MS, intervalMs: 25, what: `a ${prefix} contact entered through B` },
      );
    };
    const pro = await trackUntilEntered("pro", "pro");
    const edit = await a.api(`/segments/${seg.body.id}`, { method: "PATCH", key, body: { condition: cond("gold") } });
    expect(edit.status).toBe(200);
    const after = await trackUntilEntered("gold", "gold");
    // The pro members stay (an edit does not re-evaluate stored members until a recount); the gold contact entered.
    expect(after.filter((e) => e.startsWith("pro"))).toEqual(pro.filter((e) => e.startsWith("pro")));
    expect(after.some((e) => e.startsWith("gold"))).toBe(true);
  });

  peerTest("double opt-in switched on through A: B holds the next public subscribe", async () => {
    const track = (email: string) => b.api("/v1/track", { key: acct.publicKey, body: { email, event: "signup", subscribed: true } });
    const state = async (email: string) => {
      const c = (await b.api(`/contacts?search=${encodeURIComponent(email)}`, { key })).body.data[0];
      return { subscribed: c.subscribed, pending: c.pendingConfirmation ?? false };
    };
    expect((await track(`doi1@${RCPT}`)).status).toBe(200); // B caches "off" (for 5 s without a message)
    expect(await state(`doi1@${RCPT}`)).toEqual({ subscribed: true, pending: false });
    const on = await a.api(`/users/@me/projects/${acct.projectId}`, { method: "PATCH", cookie: acct.cookie, body: { doubleOptIn: { enabled: true } } });
    expect(on.status).toBe(200);
    await Bun.sleep(50);
    expect((await track(`doi2@${RCPT}`)).status).toBe(200);
    expect(await state(`doi2@${RCPT}`)).toEqual({ subscribed: false, pending: true });
    await a.api(`/users/@me/projects/${acct.projectId}`, { method: "PATCH", cookie: acct.cookie, body: { doubleOptIn: { enabled: false } } });
  });

  // Sessions are checked against the database on every request (revoked_sessions, sessions_valid_after):
  // nothing is cached, so this holds on both engines.
  test("a session logged out through A is 401 on B", async () => {
    const login = await a.api("/auth/login", { body: { email: acct.email, password: "correct horse battery" } });
    expect(login.status).toBe(200);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0]!;
    expect((await b.api("/users/@me", { cookie })).status).toBe(200);
    expect((await a.api("/auth/logout", { cookie })).status).toBeLessThan(400);
    const r = await b.api("/users/@me", { cookie });
    expect(r.status).toBe(401);
  });
});

describe("wake-ups reach peers", () => {
  peerTest("a /v1/send through A (its outbox stopped) is delivered by B at once, not at B's next poll", async () => {
    const t0 = performance.now();
    const r = await send(a, { to: `wake@${RCPT}` });
    expect(r.status).toBe(200);
    await waitForView(a, key, r.body.data.emails[0].email, "DELIVERED", 5_000);
    expect(performance.now() - t0).toBeLessThan(5_000); // B's poll is a minute
    expect(env.sink.byRecipient(`wake@${RCPT}`).length).toBe(1);
    expect(b.ctx.services.peers.received.get("wake.outbox") ?? 0).toBeGreaterThan(0);
  });

  peerTest("wake-ups are throttled: a burst through A sends at most one per 50 ms per topic", async () => {
    const before = b.ctx.services.peers.received.get("wake.outbox") ?? 0;
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) a.ctx.services.peers.wakePeers("wake.outbox");
    const elapsed = performance.now() - t0;
    await Bun.sleep(300);
    const got = (b.ctx.services.peers.received.get("wake.outbox") ?? 0) - before;
    expect(got).toBeGreaterThanOrEqual(1);
    expect(got).toBeLessThanOrEqual(Math.ceil(elapsed / 50) + 2);
  });

  peerTest("events committed through A wake B's event feed", async () => {
    const before = b.ctx.services.peers.received.get("wake.feed") ?? 0;
    expect((await a.api("/v1/track", { key: acct.publicKey, body: { email: `feed@${RCPT}`, event: "login" } })).status).toBe(200);
    await within(async () => b.ctx.services.peers.received.get("wake.feed") ?? 0, (n) => n > before, "B's feed woken");
  });

  peerTest("the listener reconnects after its connection drops, clearing every cache meanwhile", async () => {
    const clears = b.ctx.services.peers.fullClears;
    expect((await b.api("/emails", { key })).status).toBe(200); // cached on B
    expect(await dropPeerListeners(a.ctx.store)).toBeGreaterThanOrEqual(2);
    await waitFor(async () => b.ctx.services.peers.fullClears, { until: (n) => n >= clears + 2, what: "B cleared when down and when back" });
    await waitFor(async () => a.ctx.services.peers.listening && b.ctx.services.peers.listening, { until: Boolean, what: "both listening again" });
    // Messages flow again: a rotation through A reaches B.
    const rot = await a.api(`/users/@me/projects/${acct.projectId}/regenerate-keys`, { method: "POST", cookie: acct.cookie });
    const old = key;
    acct = { ...acct, secretKey: rot.body.secret, publicKey: rot.body.public };
    key = acct.secretKey;
    await within(() => b.api("/emails", { key: old }), (r) => r.status === 401, "the old key refused on B after the reconnect");
  });
});

describe("idempotency keys across instances", () => {
  test("start-up releases its own and a dead instance's unfinished keys, never a live peer's in-flight key (PostgreSQL); every unfinished key on SQLite", async () => {
    const now = a.clock.now();
    const lease = a.ctx.config.leaseMs;
    const row = (k: string, by: string, at: number) => ({ project_id: acct.projectId, key: k, method: "POST", path: "/v1/send", status_code: null, created_at: at, locked_by: by });
    await a.ctx.db
      .insertInto("idempotency_keys")
      .values([row("live-a", "instance-a", now), row("own-c", "instance-c", now), row("dead", "instance-gone", now - lease - 1), row("young-peer", "instance-gone", now - lease + 1_000)])
      .execute();
    const c = await peer("instance-c");
    try {
      const left = (await a.ctx.db.selectFrom("idempotency_keys").select("key").where("project_id", "=", acct.projectId).where("status_code", "is", null).execute()).map((r) => r.key).sort();
      expect(left).toEqual(onPostgres ? ["live-a", "young-peer"] : []);
      // A's in-flight key still answers 409 on C; the dead instance's key runs again.
      const again = await send(c, { to: `idem@${RCPT}` }, key, { "idempotency-key": "live-a" });
      expect(again.status).toBe(onPostgres ? 409 : 200);
      if (onPostgres) expect(again.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
      expect((await send(c, { to: `idem@${RCPT}` }, key, { "idempotency-key": "dead" })).status).toBe(200);
    } finally {
      await c.close();
      await a.ctx.db.deleteFrom("idempotency_keys").where("project_id", "=", acct.projectId).execute();
    }
  });

  test("the same key sent to two instances at once: exactly one request runs, the other gets 409", async () => {
    for (let i = 0; i < 5; i++) {
      const k = `both-${i}`;
      const [x, y] = await Promise.all([send(a, { to: `both${i}@${RCPT}` }, key, { "idempotency-key": k }), send(b, { to: `both${i}@${RCPT}` }, key, { "idempotency-key": k })]);
      expect([x.status, y.status].sort()).toEqual([200, 409]);
      const loser = x.status === 409 ? x : y;
      expect(loser.body.error.code).toBe("IDEMPOTENCY_KEY_REUSED");
      const n = await a.ctx.db.selectFrom("emails").select((eb) => eb.fn.countAll<number>().as("n")).where("to_email", "=", `both${i}@${RCPT}`).executeTakeFirstOrThrow();
      expect(Number(n.n)).toBe(1);
    }
  });

  test("a key row records the instance that ran the request", async () => {
    const r = await send(b, { to: `who@${RCPT}` }, key, { "idempotency-key": "who" });
    expect(r.status).toBe(200);
    const row = await a.ctx.db.selectFrom("idempotency_keys").select(["locked_by", "status_code"]).where("project_id", "=", acct.projectId).where("key", "=", "who").executeTakeFirstOrThrow();
    expect(row).toEqual({ locked_by: "instance-b", status_code: 200 });
  });
});

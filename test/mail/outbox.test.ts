import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startServer } from "../support/server";
import { startSmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { deliveryEnv, emailRow, enqueueDirect, waitForStatus, type DeliveryEnv } from "../support/delivery";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await deliveryEnv();
  for (const d of ["rcpt.test", "retry.test", "fail.test", "bounce.test", "many.test", "example.com"]) env.dns.mailDomain(d);
});
afterAll(() => env.close());

const content = { subject: "Hi {{name}}", html: "<p>Hello <b>{{name}}</b></p>", fromEmail: "news@sender.test", fromName: "Sender" };

async function moveClock(ms: number) {
  env.srv.clock.advance(ms);
  // the outbox polls on real time; nudge it so the test does not wait for the poll
  const { wakeOutbox } = await import("../../src/mail/outbox/outbox");
  wakeOutbox(env.srv.ctx);
}

describe("outbox", () => {
  test("delivers a queued email to the recipient's MX over STARTTLS", async () => {
    const queuedAt = env.srv.clock.now();
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "ann@rcpt.test", vars: { name: "Ann" } }]);
    const row = await waitForStatus(env.srv, id!, "DELIVERED");
    expect(row.attempts).toBe(1);
    expect(row.last_reply).toContain("250");
    expect(row.mx_host).toBe("mx.rcpt.test");
    expectTimeBetween(row.sent_at, queuedAt, env.srv.clock.now());
    expectTimeBetween(row.delivered_at, row.sent_at!, env.srv.clock.now());
    const [msg] = env.sink.byRecipient("ann@rcpt.test");
    expect(msg!.from).toBe(`bounces+${id}@bounces.sender.test`);
    const parsed = await msg!.parse();
    expect(parsed.subject).toBe("Hi Ann");
    expect(parsed.html).toContain("Hello <b>Ann</b>");
    expect(parsed.text).toContain("Hello Ann");
    expect(parsed.messageId).toBe(`<${id}@mailsvc.test>`);
    expect(msg!.secure).toBe(true);
  });

  test("a 4xx is retried on the schedule and then delivered", async () => {
    env.sink.onRcpt = (rcpt, attempt) => (rcpt === "bob@retry.test" && attempt === 1 ? { code: 451, message: "greylisted, try later" } : undefined);
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "bob@retry.test" }]);
    const deferred = await waitForStatus(env.srv, id!, "DEFERRED");
    expect(deferred.attempts).toBe(1);
    expect(deferred.last_reply).toContain("451");
    expect(deferred.next_attempt_at).toBeGreaterThan(env.srv.clock.now() + 500);
    await moveClock(1100);
    const row = await waitForStatus(env.srv, id!, "DELIVERED");
    expect(row.attempts).toBe(2);
    expect(env.sink.byRecipient("bob@retry.test")).toHaveLength(1);
    env.sink.onRcpt = () => undefined;
  });

  test("deferrals past the last retry end FAILED", async () => {
    env.sink.onRcpt = (rcpt) => (rcpt === "cat@fail.test" ? { code: 452, message: "mailbox full" } : undefined);
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "cat@fail.test" }]);
    await waitForStatus(env.srv, id!, "DEFERRED");
    await moveClock(1100);
    await waitFor(() => emailRow(env.srv, id!), { until: (r) => r.status === "DEFERRED" && r.attempts === 2, what: "the second deferral" });
    const lastAttemptFrom = env.srv.clock.now();
    await moveClock(2100);
    const row = await waitForStatus(env.srv, id!, "FAILED");
    expect(row.attempts).toBe(3);
    expectTimeBetween(row.failed_at, lastAttemptFrom, env.srv.clock.now());
    expect(row.last_reply).toContain("452");
    env.sink.onRcpt = () => undefined;
  });

  test("a 5xx bounces and suppresses the address for later sends", async () => {
    env.sink.onRcpt = (rcpt) => (rcpt === "gone@bounce.test" ? { code: 550, message: "5.1.1 no such user" } : undefined);
    const queuedAt = env.srv.clock.now();
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "gone@bounce.test" }]);
    const row = await waitForStatus(env.srv, id!, "BOUNCED");
    expect(row.last_reply).toContain("550");
    expectTimeBetween(row.bounced_at, queuedAt, env.srv.clock.now());
    const sup = await env.srv.ctx.db.selectFrom("suppressions").selectAll().where("project_id", "=", env.acct.projectId).execute();
    expect(sup.map((s) => s.email)).toContain("gone@bounce.test");
    env.sink.onRcpt = () => undefined;
    const [again] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "gone@bounce.test" }]);
    const r2 = await waitForStatus(env.srv, again!, "SUPPRESSED");
    expect(r2.attempts).toBe(0);
    expect(env.sink.byRecipient("gone@bounce.test")).toHaveLength(0);
  });

  test("null MX and unknown domains bounce without a connection; no MX falls back to the A record", async () => {
    env.dns.set("nullmx.test", "MX", [{ exchange: ".", priority: 0 }]);
    env.dns.set("amx.test", "A", ["127.0.0.1"]);
    const [a, b, c] = await enqueueDirect(env.srv, env.acct.projectId, content, [
      { email: "x@nullmx.test" },
      { email: "x@nowhere-at-all.test" },
      { email: "x@amx.test" },
    ]);
    expect((await waitForStatus(env.srv, a!, "BOUNCED")).last_reply).toContain("null MX");
    expect((await waitForStatus(env.srv, b!, "BOUNCED")).last_reply).toContain("domain not found");
    const r = await waitForStatus(env.srv, c!, "DELIVERED");
    expect(r.mx_host).toBe("amx.test");
  });

  test("MX hosts are tried in priority order: an unreachable first host falls through to the next", async () => {
    env.dns.set("two.test", "MX", [
      { exchange: "backup.two.test", priority: 20 },
      { exchange: "primary.two.test", priority: 5 },
    ]);
    env.dns.set("primary.two.test", "A", ["127.0.0.2"]); // nothing listens there
    env.dns.set("backup.two.test", "A", ["127.0.0.1"]);
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "x@two.test" }]);
    const row = await waitForStatus(env.srv, id!, "DELIVERED");
    expect(row.mx_host).toBe("backup.two.test");
  });

  test("an unreachable MX defers (network error, no reply code)", async () => {
    env.dns.set("down.test", "MX", [{ exchange: "mx.down.test", priority: 10 }]);
    env.dns.set("mx.down.test", "A", ["127.0.0.2"]);
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "x@down.test" }]);
    const row = await waitForStatus(env.srv, id!, "DEFERRED");
    expect(row.last_reply).toMatch(/ECONNREFUSED|connect/i);
  });

  test("many messages to one destination share a few long-lived connections", async () => {
    const before = env.sink.connections;
    const n = 60;
    const ids = await enqueueDirect(
      env.srv,
      env.acct.projectId,
      content,
      Array.from({ length: n }, (_, i) => ({ email: `u${i}@many.test`, vars: { name: `U${i}` } })),
    );
    for (const id of ids) await waitForStatus(env.srv, id, "DELIVERED");
    const used = env.sink.connections - before;
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(20);
    for (let i = 0; i < n; i++) expect(env.sink.byRecipient(`u${i}@many.test`)).toHaveLength(1);
  });
});

describe("outbox lifecycle", () => {
  test("emails left SENDING by a dead process are requeued on start and delivered once", async () => {
    const first = await startServer({ config: { dnsServers: [env.dns.server], mxPort: env.sink.port } });
    const { createAccount } = await import("../support/server");
    const acct = await createAccount(first.api);
    // Stop the engine first so the rows stay queued, then fake a crash mid-send.
    await first.ctx.services.outbox.stop();
    const ids = await enqueueDirect(first, acct.projectId, content, [{ email: "late1@rcpt.test" }, { email: "late2@rcpt.test" }]);
    // Claimed by this instance (its id, as a claim writes it): the restart with the same id takes them back at once.
    await first.ctx.db.updateTable("emails").set({ status: "SENDING", lease_until: first.clock.now() + 60_000, locked_by: first.ctx.config.instanceId }).where("id", "in", ids).execute();
    await first.stop();
    const second = await startServer({ dbPath: first.dbPath, config: { dnsServers: [env.dns.server], mxPort: env.sink.port } });
    try {
      for (const id of ids) await waitForStatus(second, id, "DELIVERED");
      expect(env.sink.byRecipient("late1@rcpt.test")).toHaveLength(1);
      expect(env.sink.byRecipient("late2@rcpt.test")).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  test("relay mode: everything goes through the authenticated relay and ends SENT", async () => {
    const relay = await startSmtpSink({ auth: { user: "relayuser", pass: "s3cret:/x" } });
    const srv = await startServer({ config: { dnsServers: [env.dns.server], mxPort: env.sink.port, smtpRelay: `smtp://relayuser:${encodeURIComponent("s3cret:/x")}@127.0.0.1:${relay.port}` } });
    try {
      const { createAccount } = await import("../support/server");
      const acct = await createAccount(srv.api);
      const queuedAt = srv.clock.now();
      const [id] = await enqueueDirect(srv, acct.projectId, content, [{ email: "someone@anywhere-else.test" }]);
      const row = await waitForStatus(srv, id!, "SENT");
      expectTimeBetween(row.sent_at, queuedAt, srv.clock.now());
      expect(row.delivered_at).toBeNull();
      const [msg] = relay.byRecipient("someone@anywhere-else.test");
      expect(msg!.user).toBe("relayuser");
      expect(msg!.secure).toBe(true);
    } finally {
      await srv.close();
      await relay.close();
    }
  });

  test("relay with wrong credentials defers (not the recipient's fault)", async () => {
    const relay = await startSmtpSink({ auth: { user: "relayuser", pass: "right" } });
    const srv = await startServer({ config: { dnsServers: [env.dns.server], smtpRelay: `smtp://relayuser:wrong@127.0.0.1:${relay.port}` } });
    try {
      const { createAccount } = await import("../support/server");
      const acct = await createAccount(srv.api);
      const [id] = await enqueueDirect(srv, acct.projectId, content, [{ email: "someone@anywhere-else.test" }]);
      const row = await waitForStatus(srv, id!, "DEFERRED");
      expect(row.last_reply).toMatch(/535|auth/i);
      expect(relay.messages).toHaveLength(0);
    } finally {
      await srv.close();
      await relay.close();
    }
  });

  test("no STARTTLS offered: delivered in plaintext", async () => {
    const plain = await startSmtpSink({ starttls: false });
    const srv = await startServer({ config: { dnsServers: [env.dns.server], mxPort: plain.port } });
    try {
      const { createAccount } = await import("../support/server");
      const acct = await createAccount(srv.api);
      const [id] = await enqueueDirect(srv, acct.projectId, content, [{ email: "p@rcpt.test" }]);
      await waitForStatus(srv, id!, "DELIVERED");
      expect(plain.messages[0]!.secure).toBe(false);
    } finally {
      await srv.close();
      await plain.close();
    }
  });
});

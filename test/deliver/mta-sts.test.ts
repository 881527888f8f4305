// MTA-STS for outbound delivery: a policy served over HTTPS by a local server whose certificate
// chains to a throwaway CA (trusted through MAILSVC_MTA_STS_CA), MX hosts on the SMTP sink.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mxMatches, parsePolicy } from "../../src/mail/smtp/mta-sts";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { emailRow, enqueueDirect, waitForStatus } from "../support/delivery";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { makeCa, type TestCa } from "../support/certs";
import { waitFor } from "../support/wait";

const POLICIES: Record<string, string> = {
  "mta-sts.enforce.example": "version: STSv1\nmode: enforce\nmx: mx.enforce.example\nmax_age: 86400\n",
  "mta-sts.testing.example": "version: STSv1\nmode: testing\nmx: mx.testing.example\nmax_age: 86400\n",
  "mta-sts.enforce2.example": "version: STSv1\nmode: enforce\nmx: mx.enforce2.example\nmax_age: 86400\n",
  "mta-sts.elsewhere.example": "version: STSv1\nmode: enforce\nmx: *.other-provider.example\nmax_age: 86400\n",
};

let ca: TestCa;
let dns: TestDns;
let sink: SmtpSink;
let sinkPort: number;
let https: ReturnType<typeof Bun.serve>;
let srv: TestServer;
let acc: Account;

beforeAll(async () => {
  ca = makeCa();
  const web = ca.issue(Object.keys(POLICIES));
  https = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    tls: { key: web.key, cert: web.cert },
    fetch: (req) => {
      const host = (req.headers.get("host") ?? "").replace(/:\d+$/, "");
      const body = POLICIES[host];
      return new URL(req.url).pathname === "/.well-known/mta-sts.txt" && body ? new Response(body, { headers: { "content-type": "text/plain" } }) : new Response("no", { status: 404 });
    },
  });
  dns = await startDns();
  for (const d of ["enforce.example", "enforce2.example", "testing.example", "elsewhere.example"]) {
    dns.mailDomain(d);
    dns.set(`_mta-sts.${d}`, "TXT", ["v=STSv1; id=20261124"]);
    dns.set(`mta-sts.${d}`, "A", ["127.0.0.1"]);
  }
  dns.mailDomain("plain.example");
  sink = await startSmtpSink({ starttls: false });
  sinkPort = sink.port;
  srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sinkPort, mtaStsCa: ca.caFile, mtaStsPort: https.port!, hostname: "mta.sts-sender.example", retryScheduleMs: Array(20).fill(60_000) } });
  acc = await createAccount(srv.api, "MTA-STS");
}, 30_000);
afterAll(async () => {
  await srv?.close();
  await sink?.close();
  void Promise.all(closing);
  await dns?.close();
  https?.stop(true);
});

const content = { subject: "Hello", html: "<p>Hi</p>", text: null, fromEmail: "a@sts-sender.example", fromName: null, replyTo: null, type: "TRANSACTIONAL" as const, headers: null, attachments: null };
/**
 * Replaces the MX on the same port. The old sink stops listening at once but waits for idle client
 * connections before its close resolves: that wait is not ours (awaited in afterAll).
 */
const closing: Promise<void>[] = [];
async function swapSink(opts: Parameters<typeof startSmtpSink>[0]) {
  closing.push(sink.close());
  await Bun.sleep(50);
  sink = await startSmtpSink({ ...opts, port: sinkPort });
}

/** Moves the clock past retry waits until the email reaches `status`. */
function retriedUntil(id: string, status: string) {
  const row = async () => {
    const r = await emailRow(srv, id);
    if (r.status !== status) {
      srv.clock.advance(61_000);
      wakeOutbox(srv.ctx);
    }
    return r;
  };
  return waitFor(row, { until: (r) => r.status === status, intervalMs: 100, timeoutMs: 15_000, what: `email ${id} ${status}` });
}
const send = async (to: string) => (await enqueueDirect(srv, acc.projectId, content as any, [{ email: to }]))[0]!;

describe("MTA-STS (RFC 8461)", () => {
  test("enforce: an MX without STARTTLS is deferred (never sent in the clear); once it offers a valid certificate the retry is delivered over TLS", { timeout: 30_000 }, async () => {
    const id = await send("ann@enforce.example");
    const deferred = await waitForStatus(srv, id, "DEFERRED");
    expect(deferred.last_reply).toContain("MTA-STS");
    expect(sink.byRecipient("ann@enforce.example")).toHaveLength(0);
    // No STARTTLS anywhere else is fine: a domain without a policy is delivered as usual.
    const plain = await send("bob@plain.example");
    expect((await waitForStatus(srv, plain, "DELIVERED")).status).toBe("DELIVERED");

    // The MX now has a certificate for its name from a trusted CA.
    const leaf = ca.issue(["mx.enforce.example", "mx.testing.example"]);
    await swapSink({ tls: leaf });
    const row = await retriedUntil(id, "DELIVERED");
    expect(row.attempts).toBeGreaterThanOrEqual(2);
    const [msg] = sink.byRecipient("ann@enforce.example");
    expect(msg!.secure).toBe(true);
  });

  test("enforce: a certificate that does not verify (smtp-server's self-signed one) is deferred too", { timeout: 30_000 }, async () => {
    await swapSink({}); // STARTTLS with smtp-server's self-signed certificate
    const id = await send("cy@enforce2.example");
    const row = await waitForStatus(srv, id, "DEFERRED");
    expect(row.last_reply).toContain("MTA-STS");
    expect(sink.byRecipient("cy@enforce2.example")).toHaveLength(0);
  });

  test("enforce: MX hosts outside the policy are not used", async () => {
    const id = await send("dee@elsewhere.example");
    const row = await waitForStatus(srv, id, "DEFERRED");
    expect(row.last_reply).toContain("no MX host matches *.other-provider.example");
    expect(sink.byRecipient("dee@elsewhere.example")).toHaveLength(0);
  });

  test("testing: delivered as usual, what enforce would refuse is only reported", { timeout: 30_000 }, async () => {
    await swapSink({ starttls: false });
    const id = await send("eve@testing.example");
    expect((await waitForStatus(srv, id, "DELIVERED")).status).toBe("DELIVERED");
    expect(sink.byRecipient("eve@testing.example")[0]!.secure).toBe(false);
    srv.ctx.log.flush();
    expect(srv.logs.join("\n")).toContain("mta-sts (testing)");
    // The policy is cached in the database.
    const cached = await srv.ctx.db.selectFrom("mta_sts_policies").selectAll().orderBy("domain").execute();
    expect(cached.map((p) => [p.domain, p.mode])).toEqual([
      ["elsewhere.example", "enforce"],
      ["enforce.example", "enforce"],
      ["enforce2.example", "enforce"],
      ["testing.example", "testing"],
    ]);
  });

  test("policy parsing and MX patterns", () => {
    expect(parsePolicy("version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\nmx: *.example.net\r\nmax_age: 604800\r\n", "x")).toEqual({ id: "x", mode: "enforce", mx: ["mail.example.com", "*.example.net"], maxAgeS: 604800 });
    expect(parsePolicy("version: STSv2\nmode: enforce\nmx: a.example\nmax_age: 1")).toBeNull();
    expect(parsePolicy("version: STSv1\nmode: enforce\nmax_age: 1")).toBeNull();
    expect(mxMatches("mx1.example.net", ["*.example.net"])).toBe(true);
    expect(mxMatches("a.b.example.net", ["*.example.net"])).toBe(false);
    expect(mxMatches("MAIL.example.com.", ["mail.example.com"])).toBe(true);
  });
});

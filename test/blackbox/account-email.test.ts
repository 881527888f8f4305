// Black-box: account emails from MAILSVC_SYSTEM_FROM — password reset and email verification, read from the
// user's mailbox (a real SMTP sink behind the test DNS), then completed over HTTP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDns, type TestDns } from "../support/dns";
import { startServer, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { cookieOf, expectEnvelope, expectOk } from "./support";


const USER_DOMAIN = "people-bb.example";
let srv: TestServer;
let dns: TestDns;
let sink: SmtpSink;

beforeAll(async () => {
  dns = await startDns();
  dns.mailDomain(USER_DOMAIN);
  sink = await startSmtpSink();
  srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port, systemFrom: "Mailsvc <accounts@system-bb.example>" } });
});
afterAll(async () => {
  await srv?.close();
  await sink?.close();
  await dns?.close();
});

let seq = 0;
async function signup() {
  const email = `person${++seq}@${USER_DOMAIN}`;
  const res = await srv.api("/auth/signup", { body: { email, password: "first password" } });
  expectOk(res);
  return { email, cookie: cookieOf(res, "token")!.pair };
}

/** The newest message to `to`, waiting for it; returns its text and HTML. */
async function mailTo(to: string, after = 0) {
  const m = await waitFor(
    async () => {
      await srv.drainJobs();
      return sink.byRecipient(to);
    },
    { until: (m) => m.length > after, what: `account email ${after + 1} to ${to}` },
  );
  const parsed = await m[m.length - 1]!.parse();
  return { parsed, text: `${parsed.text ?? ""}\n${parsed.html || ""}` };
}

/** The token in a link `...?token=...` (or a bare token line) of an account email. */
function tokenOf(text: string): string {
  const m = /[?&]token=([A-Za-z0-9_\-%.~]+)/.exec(text);
  if (!m) throw new Error(`no token in: ${text.slice(0, 300)}`);
  return decodeURIComponent(m[1]!);
}

describe("password reset", () => {
  test("request -> email from MAILSVC_SYSTEM_FROM with a token -> reset -> the new password works, the old one not", async () => {
    const u = await signup();
    const req = await srv.api("/auth/request-password-reset", { body: { email: u.email } });
    expectOk(req);
    const mail = await mailTo(u.email);
    expect(mail.parsed.from?.value[0]?.address).toBe("accounts@system-bb.example");
    const token = tokenOf(mail.text);
    expectOk(await srv.api("/auth/reset-password", { body: { token, password: "second password" } }));
    expect((await srv.api("/auth/login", { body: { email: u.email, password: "second password" } })).status).toBe(200);
    expectEnvelope(await srv.api("/auth/login", { body: { email: u.email, password: "first password" } }), 401);
    // A token works once.
    expectEnvelope(await srv.api("/auth/reset-password", { body: { token, password: "third password" } }), 400);
  });

  test("at most 5 reset emails per address per hour: more requests get the same answer and send nothing", async () => {
    const u = await signup();
    for (let i = 0; i < 7; i++) expectOk(await srv.api("/auth/request-password-reset", { body: { email: u.email } }));
    await mailTo(u.email, 4);
    await srv.drainJobs();
    await Bun.sleep(200);
    expect(sink.byRecipient(u.email).length).toBe(5);
    srv.clock.advance(60 * 60_000 + 1000);
    expectOk(await srv.api("/auth/request-password-reset", { body: { email: u.email } }));
    await mailTo(u.email, 5);
  });

  test("an unknown email gets the same answer and no mail", async () => {
    const before = sink.messages.length;
    const res = await srv.api("/auth/request-password-reset", { body: { email: `nobody@${USER_DOMAIN}` } });
    expectOk(res);
    await srv.drainJobs();
    await Bun.sleep(100);
    expect(sink.messages.length).toBe(before);
  });
});

describe("email verification", () => {
  test("request-verification sends a token; verify-email marks the user verified", async () => {
    const u = await signup();
    expect((await srv.api("/users/@me", { cookie: u.cookie })).body.emailVerified).toBe(false);
    const before = sink.byRecipient(u.email).length;
    expectOk(await srv.api("/auth/request-verification", { method: "POST", cookie: u.cookie }));
    const mail = await mailTo(u.email, before);
    const token = tokenOf(mail.text);
    expectOk(await srv.api("/auth/verify-email", { body: { token } }));
    expect((await srv.api("/users/@me", { cookie: u.cookie })).body.emailVerified).toBe(true);
  });
});

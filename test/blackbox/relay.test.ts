// Black-box: MAILSVC_SMTP_RELAY — every message goes through the relay (with its credentials), and the relay's 250
// means SENT, not DELIVERED (decisions.md).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { expectOk } from "./support";


let srv: TestServer;
let dns: TestDns;
let relay: SmtpSink;
let acc: Account;

beforeAll(async () => {
  dns = await startDns();
  relay = await startSmtpSink({ auth: { user: "relayuser", pass: "relay secret" }, starttls: false });
  // No MX records at all for the recipient domain: only the relay can deliver.
  srv = await startServer({ config: { dnsServers: [dns.server], smtpRelay: `smtp://relayuser:${encodeURIComponent("relay secret")}@127.0.0.1:${relay.port}` } });
  acc = await createAccount(srv.api, "BB relay");
  await addVerifiedDomain(srv.api, dns, acc, "relay.bb.example");
});
afterAll(async () => {
  await srv?.close();
  await relay?.close();
  await dns?.close();
});

describe("MAILSVC_SMTP_RELAY", () => {
  test("/config reports the relay", async () => {
    expect((await srv.api("/config")).body.features.relay).toBe(true);
  });

  test("the message goes through the authenticated relay and ends SENT", async () => {
    const to = "someone@nowhere-mx-bb.example";
    const res = await srv.api("/v1/send", { key: acc.secretKey, body: { to, from: "a@relay.bb.example", subject: "Via relay", body: "<p>x</p>" } });
    expectOk(res);
    const id = res.body.data.emails[0].email;
    await relay.waitFor(1);
    const m = relay.byRecipient(to)[0]!;
    expect(m.user).toBe("relayuser");
    expect((await m.parse()).subject).toBe("Via relay");
    const e = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await srv.api(`/emails/${id}`, { key: acc.secretKey })).body;
      },
      { until: (e) => e.status === "SENT" || e.status === "DELIVERED", what: `email ${id} to leave` },
    );
    expect(e.status).toBe("SENT");
  });
});

// Black-box: asynchronous bounces (DSN) and complaints (ARF) arriving on MAILSVC_INBOUND_SMTP_PORT at the
// Return-Path of a message we sent (decisions.md "Delivery, events, tracking").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestDns } from "../support/dns";
import { freeTcpPort, type Account, type TestServer } from "../support/server";
import { sendSmtp } from "../support/smtp-client";
import type { SinkMessage, SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { expectOk } from "./support";
import { addresses } from "../support/api";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";


const FROM = "hello@in.bb.example";
const RCPT_DOMAIN = "far-bb.example";

let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;
let inboundPort: number;

beforeAll(async () => {
  inboundPort = await freeTcpPort();
  env = await deliveryEnv({ name: "BB inbound", mailDomain: RCPT_DOMAIN, senderDomain: "in.bb.example", config: { inboundSmtpPort: inboundPort } });
  ({ srv, dns, sink, acct: acc } = env);
});
afterAll(() => env?.close());

const rcpt = addresses(RCPT_DOMAIN, "far");

async function sendOne(): Promise<{ to: string; id: string; msg: SinkMessage }> {
  const to = rcpt();
  const res = await srv.api("/v1/send", { key: acc.secretKey, body: { to, from: FROM, subject: "Hi", body: "<p>Hi</p>", subscribed: true } });
  expectOk(res);
  const delivered = async () => {
    await srv.drainJobs();
    return sink.byRecipient(to)[0];
  };
  return { to, id: res.body.data.emails[0].email, msg: await waitFor(delivered, { what: `delivery to ${to}` }) };
}

/** Hands a raw message to our inbound SMTP listener, as a remote MTA would. */
const deliverInbound = (mailFrom: string, rcptTo: string, raw: string) => sendSmtp(inboundPort, { from: mailFrom, to: [rcptTo], raw }, { ignoreTLS: true });

function originalHeaders(m: SinkMessage): string {
  const raw = m.raw.toString("utf8");
  return raw.slice(0, raw.indexOf("\r\n\r\n") >= 0 ? raw.indexOf("\r\n\r\n") : raw.indexOf("\n\n"));
}

const emailView = async (id: string) => (await srv.api(`/emails/${id}`, { key: acc.secretKey })).body;
const contactOf = async (email: string) => (await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [email] } })).body.found[0];
/** The email view once it has `status` (running queued work meanwhile). */
const viewOnce = (id: string, status: string) =>
  waitFor(
    async () => {
      await srv.drainJobs();
      return emailView(id);
    },
    { until: (v) => v.status === status, what: `email ${id} ${status}` },
  );

describe("inbound DSN and ARF", () => {
  test("the envelope sender of our messages is an address this server receives (Return-Path on the sender domain)", async () => {
    const { msg } = await sendOne();
    expect(msg.from).toContain("@");
    expect(msg.from.toLowerCase().endsWith("in.bb.example")).toBe(true);
  });

  test("a DSN with a permanent failure is a hard bounce: BOUNCED, the contact unsubscribed", async () => {
    const { to, id, msg } = await sendOne();
    expect((await contactOf(to)).subscribed).toBe(true);
    const boundary = "dsn-boundary-1";
    const dsn = [
      `From: Mail Delivery System <MAILER-DAEMON@mx.${RCPT_DOMAIN}>`,
      `To: ${msg.from}`,
      "Subject: Undelivered Mail Returned to Sender",
      "MIME-Version: 1.0",
      `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
      "",
      `--${boundary}`,
      "Content-Type: text/plain",
      "",
      "Your message could not be delivered.",
      `--${boundary}`,
      "Content-Type: message/delivery-status",
      "",
      `Reporting-MTA: dns; mx.${RCPT_DOMAIN}`,
      "",
      `Final-Recipient: rfc822; ${to}`,
      "Action: failed",
      "Status: 5.1.1",
      "Diagnostic-Code: smtp; 550 5.1.1 User unknown",
      `--${boundary}`,
      "Content-Type: text/rfc822-headers",
      "",
      originalHeaders(msg),
      `--${boundary}--`,
      "",
    ].join("\r\n");
    expect((await deliverInbound("", msg.from, dsn)).ok).toBe(true);
    const e = await viewOnce(id, "BOUNCED");
    expect(e.status).toBe("BOUNCED");
    expect((await contactOf(to)).subscribed).toBe(false);
  });

  test("an ARF complaint unsubscribes the contact and marks the email COMPLAINED", async () => {
    const { to, id, msg } = await sendOne();
    const boundary = "arf-boundary-1";
    const arf = [
      `From: abuse@${RCPT_DOMAIN}`,
      `To: ${msg.from}`,
      "Subject: FW: Hi",
      "MIME-Version: 1.0",
      `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
      "",
      `--${boundary}`,
      "Content-Type: text/plain",
      "",
      "This is an email abuse report.",
      `--${boundary}`,
      "Content-Type: message/feedback-report",
      "",
      "Feedback-Type: abuse",
      "User-Agent: bb-test/1.0",
      "Version: 1",
      `Original-Rcpt-To: ${to}`,
      `--${boundary}`,
      "Content-Type: message/rfc822",
      "",
      msg.raw.toString("utf8"),
      `--${boundary}--`,
      "",
    ].join("\r\n");
    expect((await deliverInbound("", msg.from, arf)).ok).toBe(true);
    const e = await viewOnce(id, "COMPLAINED");
    expect(e.status).toBe("COMPLAINED");
    expect((await contactOf(to)).subscribed).toBe(false);
  });

  test("mail for an address we do not handle is refused at RCPT", async () => {
    const r = await deliverInbound("someone@x.bb.example", "nobody@unrelated-bb.example", "Subject: x\r\n\r\nhello\r\n");
    expect(r).toMatchObject({ ok: false, responseCode: 550, rejected: ["nobody@unrelated-bb.example"] });
    // RFC 3463 5.1.1: bad destination mailbox address, naming the refused recipient.
    expect(r.response).toStartWith("550 5.1.1 <nobody@unrelated-bb.example>");
  });
});

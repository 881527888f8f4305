import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createSign } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setSnsFetcher, stringToSign, type SnsEnvelope } from "../../src/modules/feedback/sns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { contactRow, emailRow, eventsOf, insertContact, insertEmail, suppression } from "./support";

const CERT_URL = "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem";
const hasOpenssl = Bun.which("openssl") !== null;

describe.skipIf(!hasOpenssl)("POST /webhooks/sns (Amazon SES through SNS)", () => {
  let srv: TestServer;
  let acct: Account;
  let keyPem: string;
  let dir: string;
  const fetched: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "mailsvc-sns-"));
    const gen = Bun.spawnSync(
      ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", join(dir, "k.pem"), "-out", join(dir, "c.pem"), "-days", "2", "-subj", "/CN=sns.amazonaws.com"],
      { stderr: "pipe" },
    );
    if (gen.exitCode !== 0) throw new Error(gen.stderr.toString());
    keyPem = readFileSync(join(dir, "k.pem"), "utf8");
    const certPem = readFileSync(join(dir, "c.pem"), "utf8");
    srv = await startServer();
    setSnsFetcher(srv.ctx, async (url) => {
      fetched.push(url);
      return url === CERT_URL ? certPem : "<ConfirmSubscriptionResponse/>";
    });
    acct = await createAccount(srv.api);
  });
  afterAll(async () => {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function envelope(fields: Partial<SnsEnvelope> & { Type: string; Message: string }, version = "1"): SnsEnvelope {
    const m: SnsEnvelope = {
      MessageId: crypto.randomUUID(),
      TopicArn: "arn:aws:sns:eu-west-1:123456789012:ses-feedback",
      Timestamp: new Date().toISOString(),
      SignatureVersion: version,
      Signature: "",
      SigningCertURL: CERT_URL,
      ...fields,
    };
    m.Signature = createSign(version === "1" ? "RSA-SHA1" : "RSA-SHA256").update(stringToSign(m)).sign(keyPem, "base64");
    return m;
  }
  const post = (m: unknown) =>
    srv.api("/webhooks/sns", { raw: JSON.stringify(m), headers: { "content-type": "text/plain; charset=UTF-8", "x-amz-sns-message-type": (m as any).Type } });

  async function relayed(to: string) {
    const contactId = await insertContact(srv, acct.projectId, to);
    const emailId = await insertEmail(srv, { projectId: acct.projectId, contactId, to, type: "MARKETING", status: "SENT", from: "news@example.com" });
    return { contactId, emailId };
  }
  const sesMail = (emailId: string, to: string) => ({
    timestamp: new Date().toISOString(),
    messageId: "0102018f7a1b2c3d-ses-id-000000",
    source: `bounces+${emailId}@bounces.example.com`,
    destination: [to],
    headersTruncated: false,
    commonHeaders: { from: ["news@example.com"], to: [to], messageId: `<${emailId}@mailsvc.test>`, subject: "Hello" },
  });

  test("a subscription confirmation is verified and confirmed", async () => {
    const subscribeUrl = "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&TopicArn=x&Token=abc";
    const r = await post(envelope({ Type: "SubscriptionConfirmation", Message: "You have chosen to subscribe…", Token: "abc", SubscribeURL: subscribeUrl }));
    expect(r.status).toBe(200);
    expect(fetched).toContain(subscribeUrl);
  });

  test("a permanent bounce bounces, suppresses and unsubscribes", async () => {
    const m = await relayed("ses-hard@example.net");
    const n = {
      notificationType: "Bounce",
      bounce: {
        bounceType: "Permanent",
        bounceSubType: "General",
        bouncedRecipients: [{ emailAddress: "ses-hard@example.net", action: "failed", status: "5.1.1", diagnosticCode: "smtp; 550 5.1.1 user unknown" }],
        timestamp: new Date().toISOString(),
        feedbackId: "0102018f-feedback",
        reportingMTA: "dsn; a8-1.smtp-out.amazonses.com",
      },
      mail: sesMail(m.emailId, "ses-hard@example.net"),
    };
    const r = await post(envelope({ Type: "Notification", Message: JSON.stringify(n) }, "2"));
    expect(r.status).toBe(200);
    expect((await emailRow(srv, m.emailId)).status).toBe("BOUNCED");
    expect((await suppression(srv, acct.projectId, "ses-hard@example.net"))?.reason).toBe("HARD_BOUNCE");
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
    expect((await eventsOf(srv, m.contactId)).find((e) => e.name === "email.bounce")?.data.source).toBe("ses");
  });

  test("complaints and deliveries (matched by Message-ID when the source is SES's own)", async () => {
    const c = await relayed("ses-complaint@example.net");
    const mail = { ...sesMail(c.emailId, "ses-complaint@example.net"), source: "news@example.com" };
    let r = await post(envelope({ Type: "Notification", Message: JSON.stringify({ notificationType: "Complaint", complaint: { complaintFeedbackType: "abuse", complainedRecipients: [{ emailAddress: "ses-complaint@example.net" }] }, mail }) }));
    expect(r.status).toBe(200);
    expect((await emailRow(srv, c.emailId)).status).toBe("COMPLAINED");
    expect((await suppression(srv, acct.projectId, "ses-complaint@example.net"))?.reason).toBe("COMPLAINT");

    const d = await relayed("ses-ok@example.net");
    r = await post(envelope({ Type: "Notification", Message: JSON.stringify({ notificationType: "Delivery", delivery: { recipients: ["ses-ok@example.net"] }, mail: sesMail(d.emailId, "ses-ok@example.net") }) }));
    expect(r.status).toBe(200);
    expect((await emailRow(srv, d.emailId)).status).toBe("DELIVERED");
  });

  test("forged, tampered or foreign-certificate messages are refused and change nothing", async () => {
    const m = await relayed("ses-forged@example.net");
    const n = JSON.stringify({ notificationType: "Bounce", bounce: { bounceType: "Permanent", bouncedRecipients: [{}] }, mail: sesMail(m.emailId, "ses-forged@example.net") });
    const good = envelope({ Type: "Notification", Message: n });
    expect((await post({ ...good, Message: n.replace("Permanent", "Permanent ") })).status).toBe(403);
    expect((await post({ ...good, SigningCertURL: "https://evil.example.com/cert.pem" })).status).toBe(403);
    expect((await post({ ...good, SigningCertURL: "http://sns.eu-west-1.amazonaws.com/x.pem" })).status).toBe(403);
    expect((await post({ ...good, SignatureVersion: "3" })).status).toBe(403);
    expect((await post({ hello: "world" })).status).toBe(400);
    expect((await srv.api("/webhooks/sns", { raw: "not json", headers: { "content-type": "text/plain" } })).status).toBe(400);
    expect((await emailRow(srv, m.emailId)).status).toBe("SENT");
  });
});

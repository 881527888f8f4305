import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { decorateMessage } from "../../src/mail/tracking/tracking";
import { createAccount, freeTcpPort, startServer, type Account, type TestServer } from "../support/server";
import {
  contactByEmail,
  contactRow,
  emailRow,
  eventsOf,
  insertContact,
  insertEmail,
  suppression,
  verifiedDomain,
} from "../feedback/support";
import { arfReport, delayedDsn, gmailBounce, plainMessage, postfixBounce } from "./support";
import { ehloLines, sendSmtp, type SendResult } from "../support/smtp-client";
import { expectTimeBetween } from "../support/time";

/** The whole transaction refused at RCPT TO with 550 5.1.1 naming the recipient (RFC 3463: bad mailbox). */
function expectRefusedAtRcpt(r: SendResult, rcpt: string) {
  expect(r).toMatchObject({ ok: false, responseCode: 550, accepted: [], rejected: [rcpt] });
  expect(r.response).toBe(`550 5.1.1 <${rcpt}>: Recipient address rejected: no such recipient here`);
}

describe("inbound SMTP listener", () => {
  let srv: TestServer;
  let acct: Account;
  let port: number;

  beforeAll(async () => {
    port = await freeTcpPort();
    srv = await startServer({ config: { inboundSmtpPort: port, inboundMaxBytes: 300_000 } });
    acct = await createAccount(srv.api);
    await verifiedDomain(srv, acct.projectId, "example.com");
  });
  afterAll(() => srv.close());

  async function sent(to: string, status = "DELIVERED") {
    const contactId = await insertContact(srv, acct.projectId, to);
    const emailId = await insertEmail(srv, { projectId: acct.projectId, contactId, to, type: "MARKETING", status, from: "news@example.com" });
    return { contactId, emailId, vrp: `bounces+${emailId}@bounces.example.com` };
  }

  test("a DSN to bounces+<emailId> bounces that email, suppresses the address and unsubscribes the contact", async () => {
    const other = await sent("bystander@example.net");
    const m = await sent("nobody@example.net");
    const reportedFrom = srv.clock.now();
    const r = await sendSmtp(port, { from: "", to: [m.vrp], raw: postfixBounce({ emailId: m.emailId, to: "nobody@example.net" }) });
    expect(r.ok).toBe(true);
    expect(r.response).toMatch(/^250/);

    const row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("BOUNCED");
    expectTimeBetween(row.bounced_at, reportedFrom, srv.clock.now());
    expect(row.last_reply).toContain("5.1.1");
    expect((await suppression(srv, acct.projectId, "nobody@example.net"))?.reason).toBe("HARD_BOUNCE");
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
    const evs = await eventsOf(srv, m.contactId);
    expect(evs.map((e) => e.name).sort()).toEqual(["contact.unsubscribed", "email.bounce"]);
    expect(evs.find((e) => e.name === "email.bounce")!.data).toMatchObject({ emailId: m.emailId, type: "hard", status: "5.1.1" });

    // Only that email: the bystander is untouched.
    expect((await emailRow(srv, other.emailId)).status).toBe("DELIVERED");
    expect(await suppression(srv, acct.projectId, "bystander@example.net")).toBeUndefined();

    // The same DSN again changes nothing more.
    await sendSmtp(port, { from: "", to: [m.vrp], raw: postfixBounce({ emailId: m.emailId, to: "nobody@example.net" }) });
    expect((await eventsOf(srv, m.contactId)).length).toBe(2);
  });

  test("a DSN sent to the From address instead is matched by the Message-ID it quotes", async () => {
    const m = await sent("gone@gmail.example");
    const r = await sendSmtp(port, { from: "", to: ["news@example.com"], raw: gmailBounce({ emailId: m.emailId, to: "gone@gmail.example" }) });
    expect(r.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("BOUNCED");
    expect((await suppression(srv, acct.projectId, "gone@gmail.example"))?.reason).toBe("HARD_BOUNCE");

    // Our Message-IDs name the email (<emailId@MAILSVC_HOSTNAME>) even when the row kept none.
    const n = await sent("gone2@gmail.example");
    await srv.ctx.db.updateTable("emails").set({ message_id: null }).where("id", "=", n.emailId).execute();
    await sendSmtp(port, { from: "", to: ["news@example.com"], raw: gmailBounce({ emailId: n.emailId, to: "gone2@gmail.example" }) });
    expect((await emailRow(srv, n.emailId)).status).toBe("BOUNCED");
  });

  test("a delay warning only notes the transient failure", async () => {
    const m = await sent("slow@example.net", "SENT");
    const r = await sendSmtp(port, { from: "", to: [m.vrp], raw: delayedDsn({ emailId: m.emailId, to: "slow@example.net" }) });
    expect(r.ok).toBe(true);
    const row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("SENT");
    expect(row.last_reply).toContain("4.4.1");
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(1);
    expect(await suppression(srv, acct.projectId, "slow@example.net")).toBeUndefined();
  });

  test("an ARF report marks the email COMPLAINED, unsubscribes and suppresses (reason complaint)", async () => {
    const m = await sent("angry@yahoo.example");
    await srv.ctx.db.updateTable("emails").set({ status: "OPENED", opened_at: srv.clock.now() }).where("id", "=", m.emailId).execute();
    const reportedFrom = srv.clock.now();
    const r = await sendSmtp(port, { from: "feedback@arf.mail.yahoo.com", to: [m.vrp], raw: arfReport({ emailId: m.emailId, to: "angry@yahoo.example" }) });
    expect(r.ok).toBe(true);
    const row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("COMPLAINED");
    expectTimeBetween(row.complained_at, reportedFrom, srv.clock.now());
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
    expect((await suppression(srv, acct.projectId, "angry@yahoo.example"))?.reason).toBe("COMPLAINT");
    const evs = await eventsOf(srv, m.contactId);
    expect(evs.map((e) => e.name).sort()).toEqual(["contact.unsubscribed", "email.complaint"]);
    expect(evs.find((e) => e.name === "email.complaint")!.data).toMatchObject({ emailId: m.emailId, feedbackType: "abuse" });
  });

  test("complaints above 0.5% of 100+ sends disable the project (EMAIL_REPUTATION)", async () => {
    const other = await createAccount(srv.api, "Spammy");
    let last = "";
    for (let i = 0; i < 150; i++) {
      last = await insertEmail(srv, { projectId: other.projectId, contactId: null, to: `r${i}@example.net`, from: "news@example.com" });
    }
    expect((await srv.api("/contacts", { key: other.secretKey })).status).toBe(200);
    const r = await sendSmtp(port, { from: "fbl@isp.example", to: [`bounces+${last}@bounces.example.com`], raw: arfReport({ emailId: last, to: "r149@example.net" }) });
    expect(r.ok).toBe(true);
    const res = await srv.api("/contacts", { key: other.secretKey });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("PROJECT_DISABLED");
    const sec = await srv.api(`/users/@me/projects/${other.projectId}/security`, { cookie: other.cookie });
    expect(sec.body).toMatchObject({ disabled: true, disabledReason: "EMAIL_REPUTATION", complaints: 1 });
  });

  test("an ARF report to a fixed feedback-loop address on the bounce domain finds the email by its Return-Path", async () => {
    const m = await sent("fbl@aol.example");
    const r = await sendSmtp(port, {
      from: "scomp@aol.example",
      to: ["fbl@bounces.example.com"],
      raw: arfReport({ emailId: m.emailId, to: "fbl@aol.example" }, { to: "fbl@bounces.example.com" }),
    });
    expect(r.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("COMPLAINED");
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
  });

  test("reports to abuse@/postmaster@ our hostname find the email by the Message-ID they quote", async () => {
    const m = await sent("jmrp@outlook.example");
    const raw = arfReport({ emailId: m.emailId, to: "jmrp@outlook.example", returnPath: "someone-else@elsewhere.example" }, { originalMailFrom: false, to: "abuse@mailsvc.test" });
    const r = await sendSmtp(port, { from: "staff@outlook.example", to: ["abuse@mailsvc.test"], raw });
    expect(r.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("COMPLAINED");
    // Plain mail to postmaster is accepted (RFC 5321) and only logged.
    const p = await sendSmtp(port, { from: "a@b.example", to: ["postmaster@mailsvc.test"], raw: plainMessage({ from: "a@b.example", to: "postmaster@mailsvc.test", subject: "hello" }) });
    expect(p.ok).toBe(true);
    expect(await contactByEmail(srv, acct.projectId, "a@b.example")).toBeUndefined();
    expectRefusedAtRcpt(await sendSmtp(port, { from: "a@b.example", to: ["random@mailsvc.test"], raw: "Subject: x\r\n\r\n" }), "random@mailsvc.test");
  });

  test("mail to the List-Unsubscribe mailto address unsubscribes; a forged one is refused at RCPT", async () => {
    const m = await sent("mailto-unsub@example.net");
    const d = await decorateMessage(srv.ctx, {
      projectId: acct.projectId,
      emailId: m.emailId,
      contactId: m.contactId,
      toEmail: "mailto-unsub@example.net",
      type: "MARKETING",
      html: "<p>x</p>",
      bodyUsesUnsubscribeUrl: false,
    });
    const mailto = /<mailto:([^?>]+)/.exec(d.headers["List-Unsubscribe"]!)![1]!;
    const forged = mailto.replace(/-[0-9a-f]{10}@/, "-0000000000@");
    const bad = await sendSmtp(port, { from: "mailto-unsub@example.net", to: [forged], raw: plainMessage({ from: "mailto-unsub@example.net", to: forged, subject: "unsubscribe" }) });
    expectRefusedAtRcpt(bad, forged);
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(1);

    const r = await sendSmtp(port, { from: "mailto-unsub@example.net", to: [mailto], raw: plainMessage({ from: "mailto-unsub@example.net", to: mailto, subject: "unsubscribe" }) });
    expect(r.ok).toBe(true);
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
    const evs = await eventsOf(srv, m.contactId);
    expect(evs.map((e) => `${e.name}:${e.data.source}`)).toEqual(["contact.unsubscribed:mailto"]);
  });

  test("unknown domains, unknown emails and unknown addresses are refused at RCPT", async () => {
    const raw = plainMessage({ from: "x@sender.example", to: "someone@nowhere.example", subject: "hi" });
    await verifiedDomain(srv, acct.projectId, "pending.example", "PENDING");
    await verifiedDomain(srv, acct.projectId, "failed.example", "FAILED");
    for (const to of [
      "hello@pending.example", // a domain must be VERIFIED to receive
      "hello@failed.example",
      "someone@nowhere.example",
      `bounces+${Bun.randomUUIDv7()}@bounces.example.com`, // no such email
      "anyone@bounces.nowhere.example",
      "user@sub.example.com", // subdomains are not covered by a verified parent
    ]) {
      expectRefusedAtRcpt(await sendSmtp(port, { from: "x@sender.example", to: [to], raw }), to);
    }
    // A bounce address used on another domain than the email's is refused too.
    const m = await sent("wrong-domain@example.net");
    expectRefusedAtRcpt(await sendSmtp(port, { from: "", to: [`bounces+${m.emailId}@evil.example`], raw }), `bounces+${m.emailId}@evil.example`);

    // Mixed: the known recipient is accepted, the unknown one refused.
    const mixed = await sendSmtp(port, { from: "x@sender.example", to: ["hello@example.com", "x@nowhere.example"], raw });
    expect(mixed.ok).toBe(true);
    expect(mixed.accepted).toEqual(["hello@example.com"]);
    expect(mixed.rejected).toEqual(["x@nowhere.example"]);
  });

  test("other mail to a verified domain is recorded as email.received on the sender's contact (created unsubscribed)", async () => {
    const body = "Where is my order? ".repeat(50);
    const r = await sendSmtp(port, {
      from: "jane@customer.example",
      to: ["support@example.com"],
      raw: plainMessage({ from: "Jane@Customer.example", to: "support@example.com", subject: "Order #1234", body }),
    });
    expect(r.ok).toBe(true);
    const c = await contactByEmail(srv, acct.projectId, "jane@customer.example");
    expect(c).toBeDefined();
    expect(c!.subscribed).toBe(0);
    const evs = await eventsOf(srv, c!.id);
    expect(evs).toHaveLength(1);
    expect(evs[0]!.name).toBe("email.received");
    expect(evs[0]!.data).toMatchObject({ from: "jane@customer.example", to: ["support@example.com"], subject: "Order #1234", attachments: 0 });
    expect(evs[0]!.data.size).toBeGreaterThan(body.length);
    expect(JSON.stringify(evs[0]!.data)).not.toContain("Where is my order"); // no body kept

    // A known contact keeps its subscription.
    const known = await insertContact(srv, acct.projectId, "fan@customer.example", true);
    await sendSmtp(port, { from: "fan@customer.example", to: ["hello@example.com"], raw: plainMessage({ from: "fan@customer.example", to: "hello@example.com", subject: "Thanks!" }) });
    expect((await contactRow(srv, known)).subscribed).toBe(1);
    expect((await eventsOf(srv, known)).map((e) => e.name)).toEqual(["email.received"]);
  });

  test("junk is accepted and logged, never fatal; the listener keeps serving", async () => {
    const m = await sent("junk@example.net");
    for (const raw of ["\x00\xff\x00 not mail at all", "Content-Type: multipart/report; boundary=\r\n\r\n--\r\n--\r\n", "Subject: x\r\n\r\n"]) {
      const r = await sendSmtp(port, { from: "", to: [m.vrp], raw: Buffer.from(raw, "latin1") });
      expect(r.ok).toBe(true);
    }
    const r = await sendSmtp(port, { from: "", to: ["support@example.com"], raw: "garbage\r\n" }); // no From: nothing recorded
    expect(r.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("DELIVERED");
    const ok = await sendSmtp(port, { from: "", to: [m.vrp], raw: postfixBounce({ emailId: m.emailId, to: "junk@example.net" }) });
    expect(ok.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("BOUNCED");
  });

  test("messages above the size limit are refused (552)", async () => {
    const big = plainMessage({ from: "big@customer.example", to: "support@example.com", subject: "big", body: "x".repeat(76) + ("\r\n" + "y".repeat(76)).repeat(5000) });
    const r = await sendSmtp(port, { from: "big@customer.example", to: ["support@example.com"], raw: big });
    expect(r).toMatchObject({ ok: false, responseCode: 552 });
    expect(r.response).toMatch(/^552 5\.3\.4 Message too big \(limit \d+ bytes\)$/);
    expect(await contactByEmail(srv, acct.projectId, "big@customer.example")).toBeUndefined();
  });

  test("no STARTTLS without a configured certificate", async () => {
    const lines = await ehloLines(port);
    expect(lines[0]).toMatch(/^250-mailsvc\.test/);
    expect(lines.some((l) => /STARTTLS/i.test(l))).toBe(false);
    expect(lines.some((l) => /AUTH/i.test(l))).toBe(false);
    expect(lines.some((l) => /SIZE 300000/.test(l))).toBe(true);
  });
});

describe("inbound SMTP listener with a certificate", () => {
  const hasOpenssl = Bun.which("openssl") !== null;
  test.skipIf(!hasOpenssl)("offers STARTTLS and receives over it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-tls-"));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    const gen = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=mailsvc.test"], { stderr: "pipe" });
    expect(gen.exitCode).toBe(0);
    const port = await freeTcpPort();
    const srv = await startServer({ config: { inboundSmtpPort: port, inboundTlsCert: cert, inboundTlsKey: key } });
    try {
      const acct = await createAccount(srv.api);
      await verifiedDomain(srv, acct.projectId, "tls.example");
      const r = await sendSmtp(port, { from: "a@sender.example", to: ["hi@tls.example"], raw: plainMessage({ from: "a@sender.example", to: "hi@tls.example", subject: "over tls" }) }, { requireTLS: true, ignoreTLS: false });
      expect(r.ok).toBe(true);
      expect(r.secure).toBe(true);
      expect((await ehloLines(port)).some((l) => /STARTTLS/.test(l))).toBe(true);
      expect(await contactByEmail(srv, acct.projectId, "a@sender.example")).toBeDefined();
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

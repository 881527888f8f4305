import { describe, expect, test } from "bun:test";
import { parseMime, walk } from "../../src/modules/feedback/inbound/mime";
import { classifyDsn, parseDeliveryStatus, parseReport } from "../../src/modules/feedback/inbound/report";
import { arfReport, delayedDsn, gmailBounce, plainMessage, postfixBounce } from "./support";

const o = { emailId: "0191f3a2-7c1d-7b6e-9d2a-5b8c0e4f1a2b", to: "nobody@example.net" };

describe("DSN parsing (RFC 3464)", () => {
  test("Postfix hard bounce: recipient, action, status, unfolded diagnostic, original Message-ID and Return-Path", () => {
    const r = parseReport(postfixBounce(o));
    expect(r?.kind).toBe("delivery-status");
    if (r?.kind !== "delivery-status") return;
    expect(r.dsn.reportingMta).toBe("mx.example.net");
    expect(r.dsn.recipients).toHaveLength(1);
    const rc = r.dsn.recipients[0]!;
    expect(rc.finalRecipient).toBe("nobody@example.net");
    expect(rc.action).toBe("failed");
    expect(rc.status).toBe("5.1.1");
    expect(rc.remoteMta).toBe("mx2.example.net");
    expect(rc.diagnosticCode).toBe("smtp; 550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown in virtual mailbox table");
    expect(r.original?.messageId).toBe(`<${o.emailId}@mailsvc.test>`);
    expect(r.original?.returnPath).toBe(`bounces+${o.emailId}@bounces.example.com`);
    expect(classifyDsn(r.dsn, "nobody@example.net").outcome).toBe("permanent");
  });

  test("Gmail bounce with nested human-readable parts and text/rfc822-headers", () => {
    const r = parseReport(gmailBounce(o));
    expect(r?.kind).toBe("delivery-status");
    if (r?.kind !== "delivery-status") return;
    expect(r.dsn.recipients[0]!.status).toBe("5.1.1");
    expect(r.dsn.recipients[0]!.diagnosticCode).toContain("550-5.1.1 The email account that you tried to reach does not exist.");
    expect(r.original?.messageId).toBe(`<${o.emailId}@mailsvc.test>`);
    expect(classifyDsn(r.dsn).outcome).toBe("permanent");
  });

  test("a delay warning is transient", () => {
    const r = parseReport(delayedDsn(o));
    if (r?.kind !== "delivery-status") throw new Error("not a DSN");
    const v = classifyDsn(r.dsn, o.to);
    expect(v.outcome).toBe("transient");
  });

  test("verdicts: failed+4.x.x (gave up after retries) transient, delivered/relayed success, 5xx without status permanent", () => {
    const dsn = (fields: string) => parseDeliveryStatus(`Reporting-MTA: dns; a.example\n\nFinal-Recipient: rfc822; x@y.example\n${fields}\n`);
    expect(classifyDsn(dsn("Action: failed\nStatus: 4.4.7")).outcome).toBe("transient");
    expect(classifyDsn(dsn("Action: delivered\nStatus: 2.0.0")).outcome).toBe("delivered");
    expect(classifyDsn(dsn("Action: relayed\nStatus: 2.0.0")).outcome).toBe("delivered");
    expect(classifyDsn(dsn("Action: failed\nDiagnostic-Code: smtp; 552 mailbox full")).outcome).toBe("permanent");
    expect(classifyDsn(dsn("Action: failed")).outcome).toBe("permanent");
    expect(classifyDsn(parseDeliveryStatus("Reporting-MTA: dns; a.example\n")).outcome).toBe("none");
  });

  test("several recipients: the one we asked about is chosen", () => {
    const d = parseDeliveryStatus(
      "Reporting-MTA: dns; a.example\r\n\r\nFinal-Recipient: rfc822; a@y.example\r\nAction: delayed\r\nStatus: 4.2.2\r\n\r\nFinal-Recipient: rfc822;B@y.example\r\nAction: failed\r\nStatus: 5.2.1\r\n",
    );
    expect(classifyDsn(d, "b@y.example")).toMatchObject({ outcome: "permanent", recipient: { status: "5.2.1" } });
    expect(classifyDsn(d, "a@y.example").outcome).toBe("transient");
  });

  test("a truncated report (we keep only the head of big messages) still parses", () => {
    const full = postfixBounce(o);
    const cut = full.slice(0, full.indexOf("Subject: Our May newsletter"));
    const r = parseReport(cut);
    expect(r?.kind).toBe("delivery-status");
    if (r?.kind === "delivery-status") expect(r.original?.messageId ?? null).toBeNull();
  });
});

describe("ARF parsing (RFC 5965)", () => {
  test("Yahoo-style abuse report", () => {
    const r = parseReport(arfReport(o));
    expect(r?.kind).toBe("feedback-report");
    if (r?.kind !== "feedback-report") return;
    expect(r.arf.feedbackType).toBe("abuse");
    expect(r.arf.userAgent).toBe("Yahoo!-Mail-Feedback/2.0");
    expect(r.arf.version).toBe("1");
    expect(r.arf.originalMailFrom).toBe(`bounces+${o.emailId}@bounces.example.com`);
    expect(r.arf.originalRcptTo).toEqual(["nobody@example.net"]);
    expect(r.arf.sourceIp).toBe("203.0.113.7");
    expect(r.original?.messageId).toBe(`<${o.emailId}@mailsvc.test>`);
  });

  test("not-spam and other feedback types are read as given", () => {
    const r = parseReport(arfReport(o, { feedbackType: "not-spam" }));
    expect(r?.kind === "feedback-report" && r.arf.feedbackType).toBe("not-spam");
  });
});

describe("not a report", () => {
  test("plain mail, junk and empty input give null without throwing", () => {
    expect(parseReport(plainMessage({ from: "a@b.example", to: "c@d.example", subject: "hi" }))).toBeNull();
    expect(parseReport("")).toBeNull();
    expect(parseReport("\x00\x01garbage without headers")).toBeNull();
    expect(parseReport("Content-Type: multipart/report; report-type=delivery-status\r\n\r\nno boundary at all")).toBeNull();
    expect(parseReport(Buffer.from("Content-Type: multipart/report; boundary=x\r\n\r\n--x\r\nContent-Type: message/delivery-status\r\n\r\n"))).toMatchObject({ kind: "delivery-status" });
  });

  test("deeply nested multiparts stop at a depth limit", () => {
    let msg = "Content-Type: text/plain\r\n\r\nleaf";
    for (let i = 0; i < 50; i++) msg = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${msg}\r\n--b${i}--\r\n`;
    expect(walk(parseMime(msg)).length).toBeLessThan(10);
  });

  test("base64 and quoted-printable parts are decoded", () => {
    const b64 = Buffer.from("Reporting-MTA: dns; x.example\r\n\r\nFinal-Recipient: rfc822; q@y.example\r\nAction: failed\r\nStatus: 5.7.1\r\n").toString("base64");
    const raw = `Content-Type: multipart/report; report-type=delivery-status; boundary="zz"\r\n\r\n--zz\r\nContent-Type: message/delivery-status\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64}\r\n--zz--\r\n`;
    const r = parseReport(raw);
    expect(r?.kind === "delivery-status" && r.dsn.recipients[0]!.status).toBe("5.7.1");
  });
});

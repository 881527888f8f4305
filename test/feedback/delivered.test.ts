// End to end through the delivery engine: mail is delivered to a real SMTP sink (the recipient's
// MX, found through a real DNS server), then the recipient opens it, clicks, unsubscribes, and the
// remote side bounces or complains through the inbound SMTP listener.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { insertContent, insertEmails } from "../../src/mail/outbox/enqueue";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { sendSmtp } from "../support/smtp-client";
import { arfReport, postfixBounce } from "../inbound/support";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import type { TestDns } from "../support/dns";
import { freeTcpPort, type Account, type TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { contactRow, emailRow, eventsOf, hrefs, imgSrcs, suppression } from "./support";

describe("delivered mail: headers, footer, tracking and feedback", () => {
  let env: DeliveryEnv, dns: TestDns, sink: SmtpSink, srv: TestServer, acct: Account;
  let inboundPort: number;

  beforeAll(async () => {
    inboundPort = await freeTcpPort();
    env = await deliveryEnv({ mailDomain: "reader.example", senderDomain: "brand.example", config: { inboundSmtpPort: inboundPort } });
    ({ dns, sink, srv, acct } = env);
  });
  afterAll(() => env.close());

  async function contact(email: string): Promise<string> {
    const r = await srv.api("/contacts", { key: acct.secretKey, body: { email, subscribed: true } });
    expect(r.status).toBeLessThan(300);
    return r.body.id;
  }

  /** Enqueues one email of `type` to a new contact (as a campaign or workflow would) and waits for its delivery. */
  async function deliver(type: "MARKETING" | "HEADLESS" | "TRANSACTIONAL", to: string, html?: string) {
    const contactId = await contact(to);
    const now = srv.clock.now();
    const [emailId] = await srv.ctx.db.transaction().execute(async (trx) => {
      const contentId = await insertContent(trx, now, {
        projectId: acct.projectId,
        subject: `A ${type} message`,
        html: html ?? `<html><body><h1>Hi {{email}}</h1><p><a href="https://shop.example.com/offer?id=7&amp;x=1">See the offer</a></p></body></html>`,
        fromEmail: "news@brand.example",
        fromName: "Brand",
        type,
      });
      return insertEmails(trx, now, srv.ctx.config.hostname, [
        { projectId: acct.projectId, contentId, contactId, toEmail: to, vars: { email: to }, sourceType: type === "TRANSACTIONAL" ? "TRANSACTIONAL" : "CAMPAIGN" },
      ]);
    });
    wakeOutbox(srv.ctx);
    const outcome = async () => ({ msg: sink.byRecipient(to)[0], row: await emailRow(srv, emailId!) });
    const { msg } = await waitFor(outcome, { until: (o) => !!o.msg && o.row.status === "DELIVERED", what: `a delivery to ${to} marked DELIVERED` });
    const parsed = await msg!.parse();
    return { contactId, emailId: emailId!, msg: msg!, parsed, html: String(parsed.html || "") };
  }

  /** A header of the delivered message as sent (unfolded), or undefined. */
  const rawHeader = (raw: Buffer, name: string) => {
    const head = raw.toString().split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ");
    const m = new RegExp(`^${name}:[ \\t]*(.*)$`, "im").exec(head);
    return m ? m[1]!.trim() : undefined;
  };
  const rel = (url: string) => url.slice(srv.ctx.config.publicUrl.length);

  test("List-Unsubscribe exactly on MARKETING and HEADLESS, the footer exactly on MARKETING", async () => {
    const m = await deliver("MARKETING", "m1@reader.example");
    const h = await deliver("HEADLESS", "h1@reader.example");
    const t = await deliver("TRANSACTIONAL", "t1@reader.example");

    for (const x of [m, h]) {
      const lu = rawHeader(x.msg.raw, "List-Unsubscribe");
      expect(lu).toMatch(/^<https?:\/\/[^>]+\/unsubscribe\/[^>]+>, <mailto:unsubscribe\+[0-9a-f-]{36}-[0-9a-f]{10}@bounces\.brand\.example\?subject=unsubscribe>$/);
      expect(rawHeader(x.msg.raw, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    }
    expect(rawHeader(t.msg.raw, "List-Unsubscribe")).toBeUndefined();
    expect(rawHeader(t.msg.raw, "List-Unsubscribe-Post")).toBeUndefined();

    const footerLinks = (html: string) => hrefs(html).filter((l) => l.includes("/unsubscribe/") || l.includes("/manage/"));
    expect(footerLinks(m.html).length).toBe(2);
    expect(footerLinks(h.html)).toEqual([]);
    expect(footerLinks(t.html)).toEqual([]);
    // The envelope sender is the VERP bounce address on the bounce domain.
    expect(m.msg.from).toBe(`bounces+${m.emailId}@bounces.brand.example`);
  });

  test("a MARKETING body that places {{unsubscribeUrl}} itself gets no footer, and its link works", async () => {
    const m = await deliver("MARKETING", "own-link@reader.example", `<html><body><p>Hi</p><a href="{{unsubscribeUrl}}">Leave</a></body></html>`);
    const links = hrefs(m.html).filter((l) => l.includes("/unsubscribe/") || l.includes("/manage/"));
    expect(links).toHaveLength(1);
    const r = await fetch(links[0]!, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "confirm=yes" });
    expect(r.status).toBe(200);
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
  });

  test("the delivered pixel and tracked link work over HTTP: OPENED then CLICKED, events recorded", async () => {
    const m = await deliver("MARKETING", "reader@reader.example");
    const pixel = imgSrcs(m.html).find((s) => s.includes("/t/o/"))!;
    const link = hrefs(m.html).find((s) => s.includes("/t/c/"))!;
    expect(pixel).toBeDefined();
    expect(link).toBeDefined();

    expect((await srv.api(rel(pixel))).status).toBe(200);
    expect((await emailRow(srv, m.emailId)).status).toBe("OPENED");
    const click = await srv.api(rel(link));
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.example.com/offer?id=7&x=1");
    expect((await emailRow(srv, m.emailId)).status).toBe("CLICKED");

    const evs = (await eventsOf(srv, m.contactId)).map((e) => e.name);
    expect(evs).toContain("email.open");
    expect(evs).toContain("email.click");

    // Tampered: 404, no redirect.
    const bad = link.slice(0, -3) + (link.endsWith("A") ? "BBB" : "AAA");
    const r = await srv.api(rel(bad));
    expect(r.status).toBe(404);
    expect(r.headers.get("location")).toBeNull();
  });

  test("one-click POST to the delivered List-Unsubscribe URL unsubscribes", async () => {
    const m = await deliver("HEADLESS", "oneclick@reader.example");
    const url = /<(https?:[^>]+)>/.exec(rawHeader(m.msg.raw, "List-Unsubscribe")!)![1]!;
    const r = await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(r.status).toBe(200);
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
  });

  test("a DSN to the delivered Return-Path bounces the email and suppresses the address (next send SUPPRESSED)", async () => {
    const m = await deliver("MARKETING", "gone@reader.example");
    const r = await sendSmtp(inboundPort, { from: "", to: [m.msg.from], raw: postfixBounce({ emailId: m.emailId, to: "gone@reader.example", returnPath: m.msg.from }) });
    expect(r.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("BOUNCED");
    expect((await suppression(srv, acct.projectId, "gone@reader.example"))?.reason).toBe("HARD_BOUNCE");
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);

    const again = await srv.api("/v1/send", { key: acct.secretKey, body: { to: "gone@reader.example", from: "news@brand.example", subject: "again", body: "<p>again</p>" } });
    expect(again.status).toBe(200);
    const id = again.body.data.emails[0].email;
    expect((await emailRow(srv, id)).status).toBe("SUPPRESSED");
  });

  test("an ARF complaint about a delivered email unsubscribes and marks it COMPLAINED", async () => {
    const m = await deliver("MARKETING", "angry@reader.example");
    const r = await sendSmtp(inboundPort, { from: "fbl@isp.example", to: [m.msg.from], raw: arfReport({ emailId: m.emailId, to: "angry@reader.example", returnPath: m.msg.from }) });
    expect(r.ok).toBe(true);
    expect((await emailRow(srv, m.emailId)).status).toBe("COMPLAINED");
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
  });

  test("mail to the delivered List-Unsubscribe mailto address unsubscribes", async () => {
    const m = await deliver("MARKETING", "by-mail@reader.example");
    const mailto = /<mailto:([^?>]+)/.exec(rawHeader(m.msg.raw, "List-Unsubscribe")!)![1]!;
    const r = await sendSmtp(inboundPort, { from: "by-mail@reader.example", to: [mailto], raw: "From: by-mail@reader.example\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n" });
    expect(r.ok).toBe(true);
    expect((await contactRow(srv, m.contactId)).subscribed).toBe(0);
  });
});

// Produces one message of each kind with the real engine (in-process service, a local DNS and an SMTP
// sink as every MX) and writes them as the recipient's MX would store them: one .eml per kind in the
// directory given as the first argument. Used by scripts/spamcheck.sh.
//
// Kinds: transactional (a sign-in code; a receipt with a link), attachment (a PDF invoice), marketing
// (a newsletter as campaigns will send it: MARKETING content through the same outbox). Campaigns and
// workflows enter the outbox through mail/enqueue.ts exactly like this marketing message; until their
// modules exist, that is the message of their kind.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { insertContent, insertEmails } from "../../src/mail/enqueue";
import { wakeOutbox } from "../../src/mail/outbox";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { createAccount, startServer } from "../../test/support/server";
import { startSmtpSink } from "../../test/support/smtp-sink";

const out = process.argv[2] ?? "spamcheck-out";
const HOSTNAME = process.env.SPAMCHECK_HOSTNAME ?? "mail.acme-mailer.com";
const PUBLIC_URL = process.env.SPAMCHECK_PUBLIC_URL ?? "https://mail.acme-mailer.com";
mkdirSync(out, { recursive: true });

const dns = await startDns();
const sink = await startSmtpSink();
dns.mailDomain("inbox-provider.com");
const srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port, hostname: HOSTNAME, publicUrl: PUBLIC_URL } });
try {
  const acc = await createAccount(srv.api, "Acme");
  await addVerifiedDomain(srv.api, dns, acc, "acme-shop.com");

  const send = async (body: Record<string, unknown>) => {
    const r = await srv.api("/v1/send", { key: acc.secretKey, body: { from: { name: "Acme Shop", email: "hello@acme-shop.com" }, ...body } });
    if (r.status >= 300) throw new Error(`send failed: ${r.status} ${r.text}`);
  };
  await send({
    to: "jane.doe@inbox-provider.com",
    subject: "Your Acme sign-in code",
    body: "<p>Hi Jane,</p><p>Your sign-in code is <strong>482913</strong>. It expires in 10 minutes.</p><p>If you did not try to sign in, you can ignore this email.</p><p>The Acme team</p>",
  });
  await send({
    to: "john.smith@inbox-provider.com",
    subject: "Your Acme order #10482 receipt",
    body:
      "<p>Hi John,</p><p>Thanks for your order. Here is your receipt.</p><table><tr><td>Walking shoes</td><td>$89.00</td></tr><tr><td>Shipping</td><td>$5.00</td></tr><tr><td><b>Total</b></td><td><b>$94.00</b></td></tr></table>" +
      '<p>You can follow your parcel on <a href="https://acme-shop.com/orders/10482">your order page</a>.</p><p>The Acme team</p>',
  });
  const pdf = Buffer.from("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/MediaBox[0 0 612 792]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n");
  await send({
    to: "ann.lee@inbox-provider.com",
    subject: "Your Acme invoice for November",
    body: "<p>Hi Ann,</p><p>Your invoice for November is attached. The amount will be charged to your card on file on December 1.</p><p>The Acme team</p>",
    attachments: [{ filename: "acme-invoice-2026-11.pdf", content: pdf.toString("base64"), contentType: "application/pdf" }],
  });

  // Marketing, as a campaign sends it: MARKETING content to a subscribed contact through the outbox.
  const contact = await srv.api("/contacts", { key: acc.secretKey, body: { email: "sam.green@inbox-provider.com", subscribed: true, data: { firstName: "Sam" } } });
  if (contact.status >= 300) throw new Error(`contact failed: ${contact.status} ${contact.text}`);
  const now = srv.ctx.clock.now();
  await srv.ctx.db.transaction().execute(async (trx) => {
    const contentId = await insertContent(trx, now, {
      projectId: acc.projectId,
      subject: "New this week at Acme: autumn walking shoes",
      html:
        "<h1>Autumn is here</h1><p>Hi {{firstName}},</p><p>Our new autumn walking shoes are in: waterproof, light, and made to last. " +
        'Have a look at the <a href="https://acme-shop.com/autumn">autumn collection</a> or read <a href="https://acme-shop.com/blog/care">how to care for leather shoes</a>.</p>' +
        "<p>See you soon,<br>The Acme team</p>",
      fromEmail: "news@acme-shop.com",
      fromName: "Acme Shop",
      type: "MARKETING",
    });
    await insertEmails(trx, now, srv.ctx.config.hostname, [
      { projectId: acc.projectId, contentId, contactId: contact.body.data?.id ?? contact.body.id, toEmail: "sam.green@inbox-provider.com", vars: { firstName: "Sam", email: "sam.green@inbox-provider.com" }, sourceType: "CAMPAIGN" },
    ]);
  });
  wakeOutbox(srv.ctx);

  const kinds: [string, string][] = [
    ["transactional-code", "jane.doe@inbox-provider.com"],
    ["transactional-receipt", "john.smith@inbox-provider.com"],
    ["attachment", "ann.lee@inbox-provider.com"],
    ["marketing", "sam.green@inbox-provider.com"],
  ];
  const t0 = Date.now();
  for (const [kind, to] of kinds) {
    while (!sink.byRecipient(to).length) {
      if (Date.now() - t0 > 30_000) throw new Error(`no ${kind} message arrived`);
      await srv.drainJobs();
      await Bun.sleep(20);
    }
    const m = sink.byRecipient(to)[0]!;
    // What the recipient's MX adds in front: the trace of the hop from our HELO name.
    const received =
      `Received: from ${HOSTNAME} (${HOSTNAME} [192.0.2.25])\r\n\tby mx.inbox-provider.com with ESMTPS id ${kind.replace(/-/g, "")}\r\n\tfor <${to}>; ${new Date().toUTCString().replace("GMT", "+0000")}\r\n`;
    writeFileSync(join(out, `${kind}.eml`), Buffer.concat([Buffer.from(`Return-Path: <${m.from}>\r\n${received}`), m.raw]));
    console.log(`${kind}: ${join(out, `${kind}.eml`)}`);
  }
} finally {
  await srv.close();
  await sink.close();
  await dns.close();
}
process.exit(0);

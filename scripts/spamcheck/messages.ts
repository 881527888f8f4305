// Produces one message of each kind with the real engine (in-process service, a local DNS and an SMTP
// sink as every MX) and writes them as the recipient's MX would store them: one .eml per kind in the
// directory given as the first argument. Used by scripts/spamcheck.sh.
//
// Kinds: transactional (a sign-in code; a receipt with a link), attachment (a PDF invoice), a marketing
// campaign (POST /campaigns + send), a workflow email (a SEND_EMAIL step started manually).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { wakeOutbox } from "../../src/mail/outbox";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { createAccount, startServer } from "../../test/support/server";
import { startSmtpSink } from "../../test/support/smtp-sink";

const out = process.argv[2] ?? "spamcheck-out";
const HOSTNAME = process.env.SPAMCHECK_HOSTNAME ?? "mail.acme-mailer.com";
const PUBLIC_URL = process.env.SPAMCHECK_PUBLIC_URL ?? "https://mail.acme-mailer.com";
mkdirSync(out, { recursive: true });

const NEWSLETTER = [
  "<h1>Autumn is here</h1>",
  "<p>Hi {{firstName}},</p>",
  "<p>The evenings are getting shorter and the paths are covered in leaves, which makes this the best time of the year for a long walk. Our new autumn collection is made for exactly that: waterproof walking shoes that stay light, breathe on warm afternoons and keep your feet dry when the weather turns.</p>",
  '<p>Every pair in the <a href="https://acme-shop.com/autumn">autumn collection</a> is made in our workshop in Porto from leather tanned without chromium, with soles that can be replaced when they wear out. We would rather repair a pair of shoes than sell you a new one, so every pair comes with five years of free resoling.</p>',
  "<h2>What is new this season</h2>",
  "<p>The Trail Low now has a wider toe box and a softer collar, after many of you asked for more room on long descents. The Ridge Mid keeps its ankle support but loses almost a hundred grams per pair thanks to a new cork footbed. And for city walks, the Harbour is back in two new colours: chestnut and slate.</p>",
  '<h2>Caring for leather shoes</h2><p>A little care goes a long way. Brush off dry mud after every walk, let your shoes dry slowly away from the radiator, and feed the leather with wax twice a season. Our guide on <a href="https://acme-shop.com/blog/care">how to care for leather shoes</a> walks you through it step by step, with photos.</p>',
  "<h2>Walks we love</h2><p>This month our team walked the coastal path from Vila do Conde to Esposende: twenty-five kilometres of dunes, fishing villages and pine forest, flat enough for a first long walk of the season. We wrote down the route, the places to eat and where to catch the train back on our blog.</p>",
  "<p>As always, if a pair does not fit, send it back within sixty days and we will exchange it or refund you, no questions asked. Our customer service team answers every email within one working day.</p>",
  "<h2>From our workshop</h2><p>Behind every pair there are eleven people in a small workshop near the river. This autumn we welcomed two new apprentices, Rui and Ines, who will spend the next three years learning every step of the trade, from cutting the leather to stitching the welt by hand. We are proud that more than half of what we sell is now made by people we trained ourselves.</p>",
  "<h2>Questions from readers</h2><p>Several of you asked whether our shoes need breaking in. The short answer is: a little. The leather softens after three or four walks, and the cork footbed slowly takes the shape of your foot, so the first week is the least comfortable one. Wear them around the house for a few evenings before a long walk and you will hardly notice it.</p>",
  "<p>Others asked about sizes between two numbers. Our lasts run true to size, and if you are between two sizes we recommend the larger one with a thicker sock for winter walks. If in doubt, write to us with the length of your foot in centimetres and we will tell you which size to choose.</p>",
  "<p>See you on the trail,<br>Marta and the Acme team</p>",
].join("\n");

const WELCOME = [
  "<p>Hi {{firstName}},</p>",
  "<p>Welcome to Acme, and thank you for creating an account. You can now follow your orders, save your sizes and get free resoling on every pair you buy from us.</p>",
  '<p>If you ever need help choosing a size, reply to this email or visit <a href="https://acme-shop.com/help">our help page</a>.</p>',
  "<p>The Acme team</p>",
].join("\n");

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

  const api = async (path: string, body?: unknown, method?: string) => {
    const r = await srv.api(path, { key: acc.secretKey, body, method });
    if (r.status >= 300) throw new Error(`${method ?? "POST"} ${path} failed: ${r.status} ${r.text}`);
    return r.body?.data ?? r.body;
  };

  // A marketing campaign (audience ALL: the one subscribed contact).
  await api("/contacts", { email: "sam.green@inbox-provider.com", subscribed: true, data: { firstName: "Sam" } });
  const campaign = await api("/campaigns", {
    name: "Autumn newsletter",
    subject: "New this week at Acme: autumn walking shoes",
    body: NEWSLETTER,
    from: "news@acme-shop.com",
    fromName: "Acme Shop",
    type: "MARKETING",
    audienceType: "ALL",
  });
  await api(`/campaigns/${campaign.id}/send`, {});

  // A workflow email: a welcome message sent by a SEND_EMAIL step, started manually for a new contact.
  await api("/contacts", { email: "lee.brown@inbox-provider.com", subscribed: true, data: { firstName: "Lee" } });
  const template = await api("/templates", {
    name: "Welcome",
    subject: "Welcome to Acme, {{firstName}}",
    body: WELCOME,
    from: "hello@acme-shop.com",
    fromName: "Acme Shop",
    type: "TRANSACTIONAL",
  });
  const wf = await api("/workflows", { name: "Welcome series", triggerConfig: { eventName: "signed_up" } });
  await api(`/workflows/${wf.id}/steps`, { type: "SEND_EMAIL", name: "Welcome email", config: { templateId: template.id } });
  await api(`/workflows/${wf.id}`, { enabled: true }, "PATCH");
  await api(`/workflows/${wf.id}/executions`, { email: "lee.brown@inbox-provider.com" });
  wakeOutbox(srv.ctx);

  const kinds: [string, string][] = [
    ["transactional-code", "jane.doe@inbox-provider.com"],
    ["transactional-receipt", "john.smith@inbox-provider.com"],
    ["attachment", "ann.lee@inbox-provider.com"],
    ["marketing-campaign", "sam.green@inbox-provider.com"],
    ["workflow", "lee.brown@inbox-provider.com"],
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
      `Received: from ${HOSTNAME} (${HOSTNAME} [34.120.54.25])\r\n\tby mx.inbox-provider.com with ESMTPS id ${kind.replace(/-/g, "")}\r\n\tfor <${to}>; ${new Date().toUTCString().replace("GMT", "+0000")}\r\n`;
    writeFileSync(join(out, `${kind}.eml`), Buffer.concat([Buffer.from(`Return-Path: <${m.from}>\r\n${received}`), m.raw]));
    console.log(`${kind}: ${join(out, `${kind}.eml`)}`);
  }
} finally {
  await srv.close();
  await sink.close();
  await dns.close();
}
process.exit(0);

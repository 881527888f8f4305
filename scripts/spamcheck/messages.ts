// Produces one message of each kind with the real engine (in-process service, a local DNS and an SMTP
// sink as every MX) and writes them as the recipient's MX would store them: one .eml per kind in the
// directory given as the first argument. Used by scripts/spamcheck.sh.
//
// Kinds: transactional (a sign-in code; a receipt with a link), attachment (a PDF invoice), a MARKETING
// template sent through /v1/send, a marketing campaign (POST /campaigns + send) with the project's
// default tracking and with tracking ENABLED, a workflow email (a SEND_EMAIL step of a default-type
// template, started manually), the account emails (sign-up verification, password reset).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { verifyDkim } from "../../test/deliver/support";
import { addVerifiedDomain } from "../../test/domains/support";
import { startDns } from "../../test/support/dns";
import { createAccount, startServer } from "../../test/support/server";
import { startSmtpSink } from "../../test/support/smtp-sink";

const out = process.argv[2] ?? "spamcheck-out";
const HOSTNAME = process.env.SPAMCHECK_HOSTNAME ?? "mail.acme-mailer.com";
const PUBLIC_URL = process.env.SPAMCHECK_PUBLIC_URL ?? "https://mail.acme-mailer.com";
mkdirSync(out, { recursive: true });

// A ~2 KB newsletter with three links and a variable: the size at which the open pixel used to cost
// HTML_IMAGE_ONLY_32 (2.2 points with local rules).
const NEWSLETTER = [
  "<h1>Autumn is here</h1>",
  "<p>Hi {{firstName}},</p>",
  '<p>The evenings are getting shorter and the paths are covered in leaves, which makes this the best time of the year for a long walk. Our new <a href="https://acme-shop.com/autumn">autumn collection</a> is made for exactly that: waterproof walking shoes that stay light, breathe on warm afternoons and keep your feet dry when the weather turns.</p>',
  "<h2>What is new this season</h2>",
  "<p>The Trail Low now has a wider toe box and a softer collar, after many of you asked for more room on long descents. The Ridge Mid keeps its ankle support but loses almost a hundred grams per pair thanks to a new cork footbed. And for city walks, the Harbour is back in two new colours: chestnut and slate.</p>",
  '<h2>Caring for leather shoes</h2><p>A little care goes a long way. Brush off dry mud after every walk, let your shoes dry slowly away from the radiator, and feed the leather with wax twice a season. Our <a href="https://acme-shop.com/blog/care">care guide</a> walks you through it step by step.</p>',
  '<p>As always, if a pair does not fit, send it back within sixty days and we will exchange it or refund you. Questions? Our <a href="https://acme-shop.com/help">help centre</a> answers every email within one working day.</p>',
  "<p>See you on the trail,<br>Marta and the Acme team</p>",
].join("\n");

const WELCOME = [
  "<p>Hi {{firstName}},</p>",
  "<p>Welcome to Acme, and thank you for creating an account. You can now follow your orders, save your sizes and get free resoling on every pair you buy from us.</p>",
  '<p>If you ever need help choosing a size, reply to this email or visit <a href="https://acme-shop.com/help">our help page</a>.</p>',
  "<p>The Acme team</p>",
].join("\n");

// A second workflow email, onboarding tips of ~1.6 KB: long enough for the open pixel to cost nothing
// (in its document, with the footer and the pixel, the HTML part is over the 3200 bytes of HTML_IMAGE_ONLY_32).
const ONBOARDING = [
  "<h1>Three tips for your new shoes</h1>",
  "<p>Hi {{firstName}},</p>",
  "<p>Your first pair of Acme shoes is on its way. Here is how to get the most out of it from the first walk on.</p>",
  "<p><strong>Break them in gently.</strong> Wear them around the house for a few evenings before a long walk. The leather softens after three or four outings and the cork footbed slowly takes the shape of your foot.</p>",
  "<p><strong>Keep the leather fed.</strong> Brush off dry mud after every walk, let the shoes dry slowly away from the radiator and wax them twice a season.</p>",
  '<p><strong>Resole instead of replacing.</strong> Every pair comes with five years of free resoling: when the soles wear out, send them to our workshop from <a href="https://acme-shop.com/account/repairs">your account</a>.</p>',
  "<p><strong>Find the right socks.</strong> A thin merino sock in summer and a thicker one in winter keep your feet dry and let the same size fit all year. If a pair ever feels tight, write to us before your next walk.</p>",
  "<p><strong>Store them well.</strong> Between seasons, keep your shoes in a cool, dry place with cedar shoe trees or crumpled newspaper inside, so they keep their shape and the lining stays fresh.</p>",
  "<p>Happy walking,<br>Marta and the Acme team</p>",
].join("\n");

const dns = await startDns();
const sink = await startSmtpSink();
dns.mailDomain("inbox-provider.com");
// Account emails come from MAILSVC_SYSTEM_FROM, on the operator's own (verified) domain.
const srv = await startServer({
  config: { dnsServers: [dns.server], mxPort: sink.port, hostname: HOSTNAME, publicUrl: PUBLIC_URL, systemFrom: "Acme Mailer <accounts@acme-mailer.com>" },
});
try {
  const acc = await createAccount(srv.api, "Acme");
  await addVerifiedDomain(srv.api, dns, acc, "acme-shop.com");
  await addVerifiedDomain(srv.api, dns, acc, "acme-mailer.com");

  const send = async (body: Record<string, unknown>) => {
    const r = await srv.api("/v1/send", { key: acc.secretKey, body: { from: { name: "Acme Shop", email: "hello@acme-shop.com" }, ...body } });
    if (r.status >= 300) throw new Error(`send failed: ${r.status} ${r.text}`);
  };
  const api = async (path: string, body?: unknown, method?: string) => {
    const r = await srv.api(path, { key: acc.secretKey, body, method });
    if (r.status >= 300) throw new Error(`${method ?? "POST"} ${path} failed: ${r.status} ${r.text}`);
    return r.body?.data ?? r.body;
  };
  const setTracking = async (tracking: string) => {
    const r = await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking } });
    if (r.status >= 300) throw new Error(`tracking ${tracking}: ${r.status} ${r.text}`);
  };
  /** The first message to `to`, once it has arrived. */
  const arrived = async (to: string) => {
    const t0 = Date.now();
    while (!sink.byRecipient(to).length) {
      if (Date.now() - t0 > 30_000) throw new Error(`no message to ${to} arrived`);
      wakeOutbox(srv.ctx);
      await srv.drainJobs();
      await Bun.sleep(20);
    }
    return sink.byRecipient(to)[0]!;
  };
  const kinds: [string, string][] = [];
  // A sender of marketing mail states its postal address (the MARKETING footer shows it).
  const postal = await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { postalAddress: "Acme Lda., Rua das Flores 12, 4050-262 Porto, Portugal" } });
  if (postal.status >= 300) throw new Error(`postal address: ${postal.status} ${postal.text}`);

  await send({
    to: "jane.doe@inbox-provider.com",
    subject: "Your Acme sign-in code",
    body: "<p>Hi Jane,</p><p>Your sign-in code is <strong>482913</strong>. It expires in 10 minutes.</p><p>If you did not try to sign in, you can ignore this email.</p><p>The Acme team</p>",
  });
  kinds.push(["transactional-code", "jane.doe@inbox-provider.com"]);
  await send({
    to: "john.smith@inbox-provider.com",
    subject: "Your Acme order #10482 receipt",
    body:
      "<p>Hi John,</p><p>Thanks for your order. Here is your receipt.</p><table><tr><td>Walking shoes</td><td>$89.00</td></tr><tr><td>Shipping</td><td>$5.00</td></tr><tr><td><b>Total</b></td><td><b>$94.00</b></td></tr></table>" +
      '<p>You can follow your parcel on <a href="https://acme-shop.com/orders/10482">your order page</a>.</p><p>The Acme team</p>',
  });
  kinds.push(["transactional-receipt", "john.smith@inbox-provider.com"]);
  const pdf = Buffer.from("%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/MediaBox[0 0 612 792]/Parent 2 0 R>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n");
  await send({
    to: "ann.lee@inbox-provider.com",
    subject: "Your Acme invoice for November",
    body: "<p>Hi Ann,</p><p>Your invoice for November is attached. The amount will be charged to your card on file on December 1.</p><p>The Acme team</p>",
    attachments: [{ filename: "acme-invoice-2026-11.pdf", content: pdf.toString("base64"), contentType: "application/pdf" }],
  });
  kinds.push(["attachment", "ann.lee@inbox-provider.com"]);

  // A MARKETING template sent through /v1/send (always transactional there).
  const newsTemplate = await api("/templates", { name: "Autumn newsletter", subject: "New this week at Acme: autumn walking shoes", body: NEWSLETTER, from: "news@acme-shop.com", fromName: "Acme Shop", type: "MARKETING" });
  await send({ to: "kim.park@inbox-provider.com", template: newsTemplate.id, data: { firstName: "Kim" } });
  kinds.push(["marketing-template", "kim.park@inbox-provider.com"]);

  // A marketing campaign (audience ALL: every subscribed contact), with the project's default tracking
  // (MARKETING_ONLY: pixel and tracked links), then again with tracking ENABLED.
  const campaign = async (to: string, firstName: string) => {
    await api("/contacts", { email: to, subscribed: true, data: { firstName } });
    const c = await api("/campaigns", { name: "Autumn newsletter", subject: "New this week at Acme: autumn walking shoes", body: NEWSLETTER, from: "news@acme-shop.com", fromName: "Acme Shop", type: "MARKETING", audienceType: "ALL" });
    await api(`/campaigns/${c.id}/send`, {});
    await arrived(to);
  };
  await campaign("sam.green@inbox-provider.com", "Sam");
  kinds.push(["campaign", "sam.green@inbox-provider.com"]);
  await setTracking("ENABLED");
  await campaign("ada.white@inbox-provider.com", "Ada");
  kinds.push(["campaign-tracking-enabled", "ada.white@inbox-provider.com"]);
  await setTracking("MARKETING_ONLY");

  // Workflow emails: SEND_EMAIL steps of default-type (MARKETING) templates, started manually for a new
  // contact. The welcome is too short for the open pixel (the template editor says it would cost
  // HTML_IMAGE_ONLY_24, 2.8 points with local rules, and offers to turn open tracking off for it):
  // its template has trackOpens false, as a user following that advice sets it. The onboarding tip
  // keeps the project's default (the pixel).
  const workflowEmail = async (to: string, firstName: string, tpl: Record<string, unknown>) => {
    await api("/contacts", { email: to, subscribed: true, data: { firstName } });
    const template = await api("/templates", { from: "hello@acme-shop.com", fromName: "Acme Shop", ...tpl });
    const wf = await api("/workflows", { name: `${tpl.name} series`, triggerConfig: { eventName: "signed_up" } });
    await api(`/workflows/${wf.id}/steps`, { type: "SEND_EMAIL", name: String(tpl.name), config: { templateId: template.id } });
    await api(`/workflows/${wf.id}`, { enabled: true }, "PATCH");
    await api(`/workflows/${wf.id}/executions`, { email: to });
  };
  await workflowEmail("lee.brown@inbox-provider.com", "Lee", { name: "Welcome", subject: "Welcome to Acme, {{firstName}}", body: WELCOME, trackOpens: false });
  kinds.push(["workflow", "lee.brown@inbox-provider.com"]);
  await workflowEmail("eva.stone@inbox-provider.com", "Eva", { name: "Onboarding", subject: "Three tips for your new Acme shoes", body: ONBOARDING });
  kinds.push(["workflow-tracked", "eva.stone@inbox-provider.com"]);

  // Account emails (MAILSVC_SYSTEM_FROM): an address verification and a password reset.
  const person = "pat.jones@inbox-provider.com";
  const signup = await srv.api("/auth/signup", { body: { email: person, password: "a long first password" } });
  if (signup.status >= 300) throw new Error(`signup failed: ${signup.status} ${signup.text}`);
  const cookie = (signup.headers.get("set-cookie") ?? "").split(";")[0]!;
  const verify = await srv.api("/auth/request-verification", { method: "POST", cookie });
  if (verify.status >= 300) throw new Error(`verification failed: ${verify.status} ${verify.text}`);
  kinds.push(["account-verification", person]);
  const req = await srv.api("/auth/request-password-reset", { body: { email: person } });
  if (req.status >= 300) throw new Error(`password reset failed: ${req.status} ${req.text}`);
  kinds.push(["account-password-reset", person]);

  for (const [kind, to] of kinds) {
    const t0 = Date.now();
    const index = kind === "account-password-reset" ? 1 : 0;
    while (sink.byRecipient(to).length <= index) {
      if (Date.now() - t0 > 30_000) throw new Error(`no ${kind} message arrived`);
      wakeOutbox(srv.ctx);
      await srv.drainJobs();
      await Bun.sleep(20);
    }
    const m = sink.byRecipient(to)[index]!;
    // What the recipient's MX adds in front: the trace of the hop from our HELO name.
    const received =
      `Received: from ${HOSTNAME} (${HOSTNAME} [34.120.54.25])\r\n\tby mx.inbox-provider.com with ESMTPS id ${kind.replace(/-/g, "")}\r\n\tfor <${to}>; ${new Date().toUTCString().replace("GMT", "+0000")}\r\n`;
    writeFileSync(join(out, `${kind}.eml`), Buffer.concat([Buffer.from(`Return-Path: <${m.from}>\r\n${received}`), m.raw]));
    // DKIM as two receivers check it, against the keys this run published: mailauth (Node) and
    // Mail::DKIM (Perl, SpamAssassin's DKIM plugin library). One line each in <kind>.dkim.
    const mailauth = (await verifyDkim(dns, m.raw)).map((r) => `${r.result} d=${r.signingDomain} s=${r.selector} a=${r.algo}`);
    // Spawned asynchronously: the DNS server it asks runs in this process.
    const perl = Bun.spawn(["perl", join(import.meta.dir, "dkim-verify.pl"), dns.server], { stdin: new Blob([new Uint8Array(m.raw)]), stdout: "pipe", stderr: "pipe" });
    const [perlOut, perlErr] = await Promise.all([new Response(perl.stdout).text(), new Response(perl.stderr).text(), perl.exited]);
    const mailDkim = (perlOut || `error ${perlErr}`).trim().split("\n");
    writeFileSync(join(out, `${kind}.dkim`), [...mailauth.map((l) => `mailauth ${l}`), ...mailDkim.map((l) => `mail-dkim ${l}`)].join("\n") + "\n");
    console.log(`${kind}: ${join(out, `${kind}.eml`)}`);
  }
} finally {
  await srv.close();
  await sink.close();
  await dns.close();
}
process.exit(0);

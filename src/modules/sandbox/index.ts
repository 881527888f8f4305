// The sandbox's simulated recipients that react after a delivery (docs/sandbox.md "Simulated recipients"):
// `complaint@…` complains with an ARF report, `open@…` opens, `click@…` clicks. Each acts the way a
// real recipient's mailbox would reach us, through the feedback loop's own entry points:
// - the complaint is an ARF message to the email's VERP Return-Path, routed and handled by the
//   inbound handler (routeRecipient + handleInbound: parseReport, applyComplaint, suppression, events);
// - the open fetches the message's own pixel token and the click its first tracked link's token
//   (readOpenToken/readClickToken + recordOpen/recordClick, as GET /t/o/ and /t/c/ do). A message
//   that carries no tracking (the project's tracking setting) records nothing, as with a real reader.
// The capture itself and the hard/soft bounces are in the outbox (src/mail/outbox/sandbox.ts).
import type { AppContext } from "../../context";
import { envelopeFromFor } from "../../mail/outbox/plan";
import { simulationOf } from "../../mail/outbox/sandbox";
import { readClickToken, readOpenToken } from "../../mail/tracking/tokens";
import { resolveClick } from "../../mail/tracking/tracked-links";
import { PATHS } from "../../mail/tracking/tracking";
import { recordClick, recordOpen } from "../feedback/engagement";
import { handleInbound, routeRecipient } from "../feedback/inbound";
import type { ModuleDef } from "../../http/module";

let parser: Promise<typeof import("mailparser")> | null = null;
const mailparser = () => (parser ??= import("mailparser"));

/** The header block of a message (what an ARF report quotes as text/rfc822-headers). */
function headBlock(raw: Buffer): string {
  const end = raw.indexOf("\r\n\r\n");
  return raw.toString("latin1", 0, end < 0 ? raw.length : end) + "\r\n";
}

/** An RFC 5965 abuse report about `raw`, as a mailbox provider's feedback loop sends it. */
export function arfReport(opts: { to: string; originalMailFrom: string; originalRcptTo: string; raw: Buffer; now: number }): Buffer {
  const boundary = `sandbox-arf-${opts.now.toString(36)}`;
  const date = new Date(opts.now).toUTCString().replace("GMT", "+0000");
  const lines = [
    `From: Sandbox feedback loop <fbl@sandbox.invalid>`,
    `To: <${opts.to}>`,
    `Date: ${date}`,
    `Subject: Abuse report (sandbox simulation)`,
    `MIME-Version: 1.0`,
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
    ``,
    `--${boundary}`,
    `Content-Type: text/plain; charset=us-ascii`,
    ``,
    `This is a simulated abuse report: ${opts.originalRcptTo} marked the message as spam (mailsvc sandbox).`,
    ``,
    `--${boundary}`,
    `Content-Type: message/feedback-report`,
    ``,
    `Feedback-Type: abuse`,
    `User-Agent: mailsvc-sandbox/1.0`,
    `Version: 1`,
    `Original-Mail-From: <${opts.originalMailFrom}>`,
    `Original-Rcpt-To: <${opts.originalRcptTo}>`,
    `Arrival-Date: ${date}`,
    `Source-IP: 127.0.0.1`,
    ``,
    `--${boundary}`,
    `Content-Type: text/rfc822-headers`,
    ``,
    headBlock(opts.raw),
    `--${boundary}--`,
    ``,
  ];
  return Buffer.from(lines.join("\r\n"), "latin1");
}

async function complain(ctx: AppContext, emailId: string, toEmail: string, raw: Buffer): Promise<void> {
  const e = await ctx.db
    .selectFrom("emails as e")
    .innerJoin("email_contents as c", "c.id", "e.content_id")
    .select(["c.from_email"])
    .where("e.id", "=", emailId)
    .executeTakeFirst();
  if (!e) return;
  const returnPath = envelopeFromFor(emailId, e.from_email);
  const route = await routeRecipient(ctx, returnPath);
  if (!route) throw new Error(`the email's Return-Path ${returnPath} routes nowhere`);
  const report = arfReport({ to: returnPath, originalMailFrom: returnPath, originalRcptTo: toEmail, raw, now: ctx.clock.now() });
  await handleInbound(ctx, {
    mailFrom: "",
    recipients: [{ address: returnPath, route }],
    remoteAddress: "127.0.0.1",
    clientHostname: "sandbox.invalid",
    secure: false,
    raw: report,
    size: report.length,
    truncated: false,
  });
}

/** The tracking URLs the message's HTML carries (pixel, tracked links), in order. */
async function trackingUrls(ctx: AppContext, raw: Buffer, path: string): Promise<string[]> {
  const parsed = await (await mailparser()).simpleParser(raw, { skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  const html = typeof parsed.html === "string" ? parsed.html : "";
  const prefix = ctx.config.publicUrl + path;
  const out: string[] = [];
  for (const m of html.matchAll(/(?:src|href)\s*=\s*["']([^"']+)["']/gi)) {
    const url = m[1]!.replace(/&amp;/g, "&");
    if (url.startsWith(prefix)) out.push(url.slice(prefix.length));
  }
  return out;
}

async function open(ctx: AppContext, emailId: string, raw: Buffer): Promise<void> {
  for (const token of await trackingUrls(ctx, raw, PATHS.open)) {
    const tok = readOpenToken(ctx, token);
    if (tok && tok.emailId === emailId) return void (await recordOpen(ctx, tok.emailId));
  }
  ctx.log.info("sandbox: open@ read a message without an open pixel (tracking is off for it): no open recorded", { email: emailId });
}

async function click(ctx: AppContext, emailId: string, raw: Buffer): Promise<void> {
  for (const token of await trackingUrls(ctx, raw, PATHS.click)) {
    const tok = readClickToken(ctx, token);
    const link = tok && tok.emailId === emailId ? await resolveClick(ctx, tok.emailId, tok.linkKey) : null;
    if (tok && link) return void (await recordClick(ctx, tok.emailId, link.url));
  }
  ctx.log.info("sandbox: click@ read a message without a tracked link (tracking is off for it, or no link): no click recorded", { email: emailId });
}

export async function sandboxDelivered(ctx: AppContext, email: { emailId: string; toEmail: string; raw: Buffer }): Promise<void> {
  switch (simulationOf(email.toEmail)) {
    case "complaint":
      return complain(ctx, email.emailId, email.toEmail, email.raw);
    case "open":
      return open(ctx, email.emailId, email.raw);
    case "click":
      return click(ctx, email.emailId, email.raw);
    default:
      return;
  }
}

export const sandboxModule: ModuleDef = {
  name: "sandbox",
  install(ctx) {
    ctx.hooks.sandboxDelivered = sandboxDelivered;
  },
};

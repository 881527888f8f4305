// Who may receive mail here, and what a received message means.
//
// Recipients (anything else is refused at RCPT):
// - bounces+<emailId>@<bounce domain of the sender>     VERP Return-Path: DSNs, ARF, auto-replies
// - unsubscribe+<emailId>-<sig>@<bounce domain>          the List-Unsubscribe mailto address
// - any address at a VERIFIED sender domain of a project (or its bounce domain): reports found by the
//   Message-ID they quote, otherwise ordinary inbound mail (`email.received`).
// - postmaster@, abuse@ and fbl@ our own hostname (MAILSVC_HOSTNAME): reports about any email we sent
//   (feedback loops registered for the sending IP); other mail there is only logged.
import type { AddressObject } from "mailparser";

/** mailparser is loaded on the first inbound message: it is the largest library we ship (~7 MB of RSS) and most installations receive little mail. */
let parser: Promise<typeof import("mailparser")> | null = null;
const mailparser = () => (parser ??= import("mailparser"));
import type { AppContext } from "../../context";
import { domainOf, isValidEmail, normalizeEmail } from "../../net/email-address";
import { dmarcReportOf } from "./inbound/dmarc-report";
import { classifyDsn, parseReport, type Report } from "./inbound/report";
import { storeDmarcReport } from "../domains/dmarc";
import type { InboundMessage } from "./inbound/server";
import { readBounceLocalPart, readUnsubscribeLocalPart } from "../../mail/tracking/tokens";
import { bounceDomainFor } from "../../net/email-address";
import { projectsWithVerifiedDomain } from "./audience-adapter";
import { applyBounce, applyComplaint, applyDeliveredReport, recordReceived, unsubscribeByMail, type FeedbackOutcome } from "./feedback";

export type Route =
  | { kind: "bounce"; emailId: string; projectId: string }
  | { kind: "unsubscribe"; emailId: string; projectId: string }
  | { kind: "domain"; projectIds: string[]; bounceDomain: boolean }
  | { kind: "system" };

const SYSTEM_MAILBOXES = new Set(["postmaster", "abuse", "fbl"]);

/** Domains an email's feedback address may use: the sender's bounce domain, the sender domain, our hostname. */
function feedbackDomains(ctx: AppContext, fromEmail: string): string[] {
  const d = domainOf(fromEmail);
  return [bounceDomainFor(d), d, ctx.config.hostname.toLowerCase()];
}

async function emailRoute(ctx: AppContext, emailId: string, domain: string) {
  const e = await ctx.db
    .selectFrom("emails as e")
    .innerJoin("email_contents as c", "c.id", "e.content_id")
    .select(["e.id", "e.project_id", "c.from_email"])
    .where("e.id", "=", emailId)
    .executeTakeFirst();
  if (!e || !e.project_id || !feedbackDomains(ctx, e.from_email).includes(domain)) return null;
  return { emailId: e.id, projectId: e.project_id };
}

export async function routeRecipient(ctx: AppContext, address: string): Promise<Route | null> {
  const at = address.lastIndexOf("@");
  if (at < 1) return null;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1).toLowerCase();

  const bounce = readBounceLocalPart(local);
  if (bounce) {
    const r = await emailRoute(ctx, bounce.emailId, domain);
    return r ? { kind: "bounce", ...r } : null;
  }
  if (/^unsubscribe\+/i.test(local)) {
    const u = readUnsubscribeLocalPart(ctx, local);
    const r = u ? await emailRoute(ctx, u.emailId, domain) : null;
    return r ? { kind: "unsubscribe", ...r } : null;
  }
  if (domain === ctx.config.hostname.toLowerCase() && SYSTEM_MAILBOXES.has(local.toLowerCase())) return { kind: "system" };
  const direct = await projectsWithVerifiedDomain(ctx.db, domain);
  if (direct.length) return { kind: "domain", projectIds: direct, bounceDomain: false };
  // <anything>@bounces.<verified domain>: feedback loops (ARF) often write to a fixed address there.
  const dot = domain.indexOf(".");
  if (dot > 0) {
    const parent = domain.slice(dot + 1);
    if (bounceDomainFor(parent) === domain) {
      const viaBounce = await projectsWithVerifiedDomain(ctx.db, parent);
      if (viaBounce.length) return { kind: "domain", projectIds: viaBounce, bounceDomain: true };
    }
  }
  return null;
}

/** Our Message-IDs are `<emailId@MAILSVC_HOSTNAME>`: the id is in the name. */
export function ownMessageId(ctx: AppContext, messageId: string): string | null {
  const m = /^<?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})@([^>]+)>?$/i.exec(messageId.trim());
  return m && m[2]!.toLowerCase() === ctx.config.hostname.toLowerCase() ? m[1]!.toLowerCase() : null;
}

/** The email a report is about: the VERP address it came to, else the Return-Path or Message-ID it quotes. */
async function reportEmailId(ctx: AppContext, route: Route, report: Report): Promise<string | null> {
  if (route.kind === "bounce" || route.kind === "unsubscribe") return route.emailId;
  const candidates = [
    report.kind === "feedback-report" ? report.arf.originalMailFrom : null,
    report.original?.returnPath ?? null,
    report.kind === "delivery-status" ? report.dsn.originalEnvelopeId : null,
  ];
  for (const c of candidates) {
    if (!c) continue;
    const v = readBounceLocalPart(c.includes("@") ? c.slice(0, c.lastIndexOf("@")) : c);
    if (v) return v.emailId;
    if (/^[0-9a-f-]{36}$/i.test(c)) return c.toLowerCase();
  }
  const mid = report.original?.messageId;
  const own = mid ? ownMessageId(ctx, mid) : null;
  if (own) return own;
  if (mid) {
    const bare = mid.replace(/^<|>$/g, "");
    let q = ctx.db.selectFrom("emails").select("id").where("message_id", "in", [mid, bare]);
    if (route.kind === "domain") q = q.where("project_id", "in", route.projectIds);
    const row = await q.executeTakeFirst();
    if (row) return row.id;
  }
  return null;
}

async function applyReport(ctx: AppContext, route: Route, report: Report, log: Record<string, unknown>): Promise<FeedbackOutcome | "no-email"> {
  const emailId = await reportEmailId(ctx, route, report);
  if (!emailId) return "no-email";
  // Scope: the email of a VERP address, the projects owning a domain, or (our hostname) any project.
  const projectIds = route.kind === "domain" ? route.projectIds : route.kind === "system" ? undefined : [route.projectId];
  if (report.kind === "feedback-report") {
    if (report.arf.feedbackType === "not-spam") return "ignored";
    return applyComplaint(ctx, { emailId, projectIds, feedbackType: report.arf.feedbackType, userAgent: report.arf.userAgent, sourceIp: report.arf.sourceIp });
  }
  const to = await ctx.db.selectFrom("emails").select("to_email").where("id", "=", emailId).executeTakeFirst();
  const verdict = classifyDsn(report.dsn, to?.to_email);
  log.dsn = verdict.outcome;
  if (verdict.outcome === "none") return "ignored";
  if (verdict.outcome === "delivered") return applyDeliveredReport(ctx, emailId, projectIds);
  const r = verdict.recipient;
  return applyBounce(ctx, {
    emailId,
    projectIds,
    permanent: verdict.outcome === "permanent",
    status: r.status,
    diagnostic: r.diagnosticCode,
    recipient: r.finalRecipient,
    remoteMta: r.remoteMta ?? report.dsn.reportingMta,
  });
}

function firstAddress(a: AddressObject | AddressObject[] | undefined): { address: string; name: string } | null {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  for (const obj of list) for (const v of obj.value) if (v.address) return { address: v.address, name: v.name };
  return null;
}

/** Handles one accepted message. Unparseable input is logged and dropped (never retried, never fatal). */
export async function handleInbound(ctx: AppContext, msg: InboundMessage<Route>): Promise<void> {
  const log: Record<string, unknown> = { mailFrom: msg.mailFrom, rcpt: msg.recipients.map((r) => r.address), size: msg.size };
  let report: Report | null = null;
  try {
    report = parseReport(msg.raw);
  } catch (err) {
    ctx.log.warn("inbound: report parsing failed", { ...log, error: String((err as Error)?.message ?? err) });
  }
  log.report = report?.kind ?? null;

  // A DMARC aggregate report (to the rua address on a verified domain or its bounce domain).
  const domainProjects = [...new Set(msg.recipients.flatMap((r) => (r.route.kind === "domain" ? r.route.projectIds : [])))];
  if (!report && domainProjects.length && looksLikeDmarcReport(msg.raw)) {
    const dmarc = await dmarcReportIn(msg.raw);
    if (dmarc) {
      log.report = "dmarc-aggregate";
      log.outcome = (await storeDmarcReport(ctx, domainProjects, dmarc)) ? "dmarc-stored" : "dmarc-ignored";
      log.dmarc = { org: dmarc.orgName, reportId: dmarc.reportId, domain: dmarc.domain, rows: dmarc.rows.length };
      ctx.log.info("inbound message", log);
      return;
    }
  }

  // One message may name several of our addresses; act once per distinct target.
  const seen = new Set<string>();
  for (const { route } of msg.recipients) {
    const key =
      route.kind === "domain" ? `domain:${route.projectIds.join(",")}:${route.bounceDomain}` : route.kind === "system" ? "system" : `${route.kind}:${route.emailId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (report) {
      log.outcome = await applyReport(ctx, route, report, log);
    } else if (route.kind === "unsubscribe") {
      log.outcome = await unsubscribeByMail(ctx, route.emailId);
    } else if (route.kind === "domain" && !route.bounceDomain) {
      log.outcome = await receive(ctx, route.projectIds, msg, log);
    } else {
      // Not a report at a bounce address: auto-replies, challenge mail, non-standard bounces.
      log.outcome = "ignored";
    }
  }
  ctx.log.info("inbound message", log);
}

/** Cheap test before parsing: a report is an attachment of one of these types. */
function looksLikeDmarcReport(raw: Buffer): boolean {
  const head = raw.toString("latin1", 0, Math.min(raw.length, 64 * 1024));
  return /content-type:\s*(application\/(x-)?(gzip|zip|x-zip-compressed|xml|octet-stream)|text\/xml)/i.test(head) || /report domain:/i.test(head);
}

async function dmarcReportIn(raw: Buffer) {
  try {
    const parsed = await (await mailparser()).simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
    return dmarcReportOf(parsed.attachments.map((a) => ({ contentType: a.contentType, filename: a.filename, content: a.content })));
  } catch {
    return null;
  }
}

async function receive(ctx: AppContext, projectIds: string[], msg: InboundMessage<Route>, log: Record<string, unknown>) {
  let parsed;
  try {
    parsed = await (await mailparser()).simpleParser(msg.raw, { skipHtmlToText: true, skipTextToHtml: true, skipTextLinks: true, skipImageLinks: true });
  } catch (err) {
    ctx.log.warn("inbound: message parsing failed", { ...log, error: String((err as Error)?.message ?? err) });
    return "unparseable";
  }
  const from = firstAddress(parsed.from) ?? (msg.mailFrom ? { address: msg.mailFrom, name: "" } : null);
  if (!from || !isValidEmail(from.address)) return "no-sender";
  const to = msg.recipients.filter((r) => r.route.kind === "domain").map((r) => normalizeEmail(r.address));
  let stored = 0;
  for (const projectId of projectIds) {
    if (await recordReceived(ctx, {
      projectId,
      from: normalizeEmail(from.address),
      fromName: from.name || null,
      to,
      subject: (parsed.subject ?? "").slice(0, 998),
      messageId: parsed.messageId ?? null,
      inReplyTo: typeof parsed.inReplyTo === "string" ? parsed.inReplyTo : null,
      size: msg.size,
      attachments: parsed.attachments.length,
    }))
      stored++;
  }
  return stored ? "received" : "dropped (inbound billing limit)";
}

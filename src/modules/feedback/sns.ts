// POST /webhooks/sns: Amazon SES bounce/complaint/delivery notifications delivered by SNS, for
// users who relay through SES (MAILSVC_SMTP_RELAY). Every message's signature is verified with the
// certificate SNS names, which must come from an sns.<region>.amazonaws.com HTTPS URL.
import { createVerify, X509Certificate } from "node:crypto";
import type { AppContext } from "../../context";
import { readBounceLocalPart } from "../../mail/tracking/tokens";
import { ownMessageId } from "./inbound";
import { applyBounce, applyComplaint, applyDeliveredReport, type FeedbackOutcome } from "./feedback";

export interface SnsEnvelope {
  Type: string;
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  Token?: string;
  SubscribeURL?: string;
}

export type CertFetcher = (url: string) => Promise<string>;

/** How SNS signing certificates and subscription confirmations are fetched, and the certificates seen. */
export class SnsClient {
  fetch: CertFetcher | null = null;
  readonly certs = new Map<string, X509Certificate>();
}

declare module "../../context" {
  interface Services {
    sns: SnsClient;
  }
}

/** Tests (no network) replace how certificates and subscription confirmations are fetched. */
export function setSnsFetcher(ctx: AppContext, fn: CertFetcher) {
  ctx.services.sns.fetch = fn;
}

const defaultFetch: CertFetcher = async (url) => {
  const res = await fetch(url, { redirect: "error", signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return res.text();
};

/** Only Amazon's own SNS endpoints, over HTTPS: anything else could sign whatever it likes. */
export function isAmazonSnsUrl(raw: string | undefined, pathSuffix?: string): boolean {
  if (!raw) return false;
  try {
    const u = new URL(raw);
    if (u.protocol !== "https:" || u.port || u.username || u.password) return false;
    if (!/^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(u.hostname)) return false;
    return pathSuffix ? u.pathname.endsWith(pathSuffix) : true;
  } catch {
    return false;
  }
}

/** The canonical string SNS signs (fields in this order, present ones only). */
export function stringToSign(m: SnsEnvelope): string {
  const keys =
    m.Type === "Notification"
      ? ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
      : ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"];
  let out = "";
  for (const k of keys) {
    const v = (m as unknown as Record<string, unknown>)[k];
    if (typeof v === "string") out += `${k}\n${v}\n`;
  }
  return out;
}

export async function verifySnsSignature(ctx: AppContext, m: SnsEnvelope): Promise<boolean> {
  if (!isAmazonSnsUrl(m.SigningCertURL, ".pem")) return false;
  const algo = m.SignatureVersion === "1" ? "RSA-SHA1" : m.SignatureVersion === "2" ? "RSA-SHA256" : null;
  if (!algo || typeof m.Signature !== "string") return false;
  const certCache = ctx.services.sns.certs;
  let cert = certCache.get(m.SigningCertURL);
  if (!cert) {
    const pem = await (ctx.services.sns.fetch ?? defaultFetch)(m.SigningCertURL);
    cert = new X509Certificate(pem);
    if (certCache.size > 50) certCache.clear();
    certCache.set(m.SigningCertURL, cert);
  }
  try {
    return createVerify(algo).update(stringToSign(m), "utf8").verify(cert.publicKey, m.Signature, "base64");
  } catch {
    return false;
  }
}

function parseEnvelope(body: unknown): SnsEnvelope | null {
  let v = body;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  if (!v || typeof v !== "object") return null;
  const m = v as Record<string, unknown>;
  for (const k of ["Type", "MessageId", "TopicArn", "Message", "Timestamp", "SignatureVersion", "Signature", "SigningCertURL"]) {
    if (typeof m[k] !== "string") return null;
  }
  return m as unknown as SnsEnvelope;
}

export type SnsResult = { status: number; outcome: string };

/** Handles one SNS delivery: verify, confirm subscriptions, apply SES notifications. */
export async function handleSns(ctx: AppContext, body: unknown): Promise<SnsResult> {
  const env = parseEnvelope(body);
  if (!env) return { status: 400, outcome: "not an SNS message" };
  if (!(await verifySnsSignature(ctx, env))) return { status: 403, outcome: "bad signature" };
  if (env.Type === "SubscriptionConfirmation") {
    if (!isAmazonSnsUrl(env.SubscribeURL)) return { status: 400, outcome: "bad SubscribeURL" };
    await (ctx.services.sns.fetch ?? defaultFetch)(env.SubscribeURL!);
    ctx.log.info("sns: subscription confirmed", { topic: env.TopicArn });
    return { status: 200, outcome: "confirmed" };
  }
  if (env.Type !== "Notification") return { status: 200, outcome: "ignored" };
  let n: any;
  try {
    n = JSON.parse(env.Message);
  } catch {
    return { status: 200, outcome: "ignored (message is not JSON)" };
  }
  const outcome = await applySesNotification(ctx, n);
  ctx.log.info("sns: notification", { topic: env.TopicArn, type: n?.notificationType ?? n?.eventType, outcome });
  return { status: 200, outcome };
}

/** Our email behind an SES notification: the VERP Return-Path, else the Message-ID we assigned. */
async function sesEmailId(ctx: AppContext, mail: any): Promise<string | null> {
  const candidates: unknown[] = [mail?.source, mail?.commonHeaders?.returnPath];
  for (const h of Array.isArray(mail?.headers) ? mail.headers : []) {
    if (/^return-path$/i.test(h?.name)) candidates.push(h.value);
  }
  for (const c of candidates) {
    if (typeof c !== "string") continue;
    const addr = c.replace(/^.*<|>.*$/g, "").trim();
    const v = readBounceLocalPart(addr.slice(0, Math.max(0, addr.lastIndexOf("@"))));
    if (v) return v.emailId;
  }
  const mids: string[] = [];
  if (typeof mail?.commonHeaders?.messageId === "string") mids.push(mail.commonHeaders.messageId);
  for (const h of Array.isArray(mail?.headers) ? mail.headers : []) if (/^message-id$/i.test(h?.name) && typeof h.value === "string") mids.push(h.value);
  for (const mid of mids) {
    const own = ownMessageId(ctx, mid);
    if (own) return own;
    const bare = mid.trim().replace(/^<|>$/g, "");
    const row = await ctx.db.selectFrom("emails").select("id").where("message_id", "in", [`<${bare}>`, bare]).executeTakeFirst();
    if (row) return row.id;
  }
  return null;
}

export async function applySesNotification(ctx: AppContext, n: any): Promise<FeedbackOutcome | "no-email" | "ignored"> {
  const type = n?.notificationType ?? n?.eventType;
  if (type !== "Bounce" && type !== "Complaint" && type !== "Delivery") return "ignored";
  const emailId = await sesEmailId(ctx, n.mail);
  if (!emailId) return "no-email";
  if (type === "Delivery") return applyDeliveredReport(ctx, emailId);
  if (type === "Complaint") {
    const c = n.complaint ?? {};
    if (c.complaintSubType === "OnAccountSuppressionList") return "ignored";
    return applyComplaint(ctx, { emailId, feedbackType: String(c.complaintFeedbackType ?? "abuse"), userAgent: c.userAgent ?? "Amazon SES", sourceIp: null });
  }
  const b = n.bounce ?? {};
  const r = Array.isArray(b.bouncedRecipients) ? b.bouncedRecipients[0] ?? {} : {};
  return applyBounce(ctx, {
    emailId,
    permanent: b.bounceType === "Permanent",
    status: typeof r.status === "string" ? r.status : null,
    diagnostic: typeof r.diagnosticCode === "string" ? r.diagnosticCode : `SES ${b.bounceType ?? ""}/${b.bounceSubType ?? ""}`.trim(),
    recipient: typeof r.emailAddress === "string" ? r.emailAddress : null,
    remoteMta: typeof b.reportingMTA === "string" ? b.reportingMTA : null,
    source: "ses",
  });
}

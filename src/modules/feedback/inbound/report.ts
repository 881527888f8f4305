// Machine reports that come back by mail:
// - delivery status notifications (RFC 3464, multipart/report; report-type=delivery-status)
// - abuse feedback reports (ARF, RFC 5965, multipart/report; report-type=feedback-report)
// Both carry the original message (or its headers), whose Message-ID / Return-Path lead back to
// the email we sent.
import { parseHeaderBlock, parseMime, walk, type MimePart } from "./mime";

export interface DsnRecipient {
  finalRecipient: string | null;
  originalRecipient: string | null;
  action: string;
  status: string | null;
  diagnosticCode: string | null;
  remoteMta: string | null;
}

export interface DeliveryStatus {
  reportingMta: string | null;
  originalEnvelopeId: string | null;
  recipients: DsnRecipient[];
}

export interface FeedbackReport {
  feedbackType: string;
  userAgent: string | null;
  version: string | null;
  originalMailFrom: string | null;
  originalRcptTo: string[];
  sourceIp: string | null;
  reportedDomain: string | null;
  arrivalDate: string | null;
}

/** The original message a report is about, as far as the report shows it. */
export interface OriginalMessage {
  messageId: string | null;
  returnPath: string | null;
  headers: Map<string, string>;
}

export type Report =
  | { kind: "delivery-status"; dsn: DeliveryStatus; original: OriginalMessage | null }
  | { kind: "feedback-report"; arf: FeedbackReport; original: OriginalMessage | null };

/** Strips an address-type prefix (`rfc822; x@y`) and angle brackets. */
function addressValue(v: string | undefined): string | null {
  if (!v) return null;
  const s = v.includes(";") ? v.slice(v.indexOf(";") + 1) : v;
  const t = s.trim().replace(/^<|>$/g, "").trim();
  return t || null;
}

/** Splits a message/delivery-status body into its field groups (per-message, then per-recipient). */
function fieldGroups(text: string): Map<string, string>[] {
  return text
    .replace(/\r\n/g, "\n")
    .split(/\n[ \t]*\n/)
    .map((g) => g.trim())
    .filter(Boolean)
    .map(parseHeaderBlock)
    .filter((m) => m.size > 0);
}

export function parseDeliveryStatus(text: string): DeliveryStatus {
  const groups = fieldGroups(text);
  const isRecipient = (g: Map<string, string>) => g.has("final-recipient") || g.has("action") || g.has("original-recipient");
  const perMessage = groups.length && !isRecipient(groups[0]!) ? groups[0]! : new Map<string, string>();
  const recipients = groups.filter(isRecipient).map(
    (g): DsnRecipient => ({
      finalRecipient: addressValue(g.get("final-recipient")),
      originalRecipient: addressValue(g.get("original-recipient")),
      action: (g.get("action") ?? "").trim().toLowerCase().split(/\s/)[0] ?? "",
      status: /\d\.\d{1,3}\.\d{1,3}/.exec(g.get("status") ?? "")?.[0] ?? null,
      diagnosticCode: g.get("diagnostic-code")?.replace(/\s+/g, " ").trim() ?? null,
      remoteMta: addressValue(g.get("remote-mta")),
    }),
  );
  return {
    reportingMta: addressValue(perMessage.get("reporting-mta")),
    originalEnvelopeId: perMessage.get("original-envelope-id")?.trim() || null,
    recipients,
  };
}

export function parseFeedbackReport(text: string): FeedbackReport {
  const fields = new Map<string, string[]>();
  // Original-Rcpt-To may repeat: collect every occurrence.
  for (const g of text.replace(/\r\n/g, "\n").split(/\n[ \t]*\n/)) {
    let name: string | null = null;
    for (const line of g.split("\n")) {
      if (/^[ \t]/.test(line) && name) {
        const arr = fields.get(name)!;
        arr[arr.length - 1] += " " + line.trim();
        continue;
      }
      const colon = line.indexOf(":");
      if (colon <= 0) continue;
      name = line.slice(0, colon).trim().toLowerCase();
      const arr = fields.get(name) ?? [];
      arr.push(line.slice(colon + 1).trim());
      fields.set(name, arr);
    }
  }
  const one = (k: string) => fields.get(k)?.[0]?.trim() || null;
  return {
    feedbackType: (one("feedback-type") ?? "abuse").toLowerCase(),
    userAgent: one("user-agent"),
    version: one("version"),
    originalMailFrom: addressValue(one("original-mail-from") ?? undefined),
    originalRcptTo: (fields.get("original-rcpt-to") ?? []).map((v) => addressValue(v)).filter((v): v is string => !!v),
    sourceIp: one("source-ip"),
    reportedDomain: one("reported-domain"),
    arrivalDate: one("arrival-date") ?? one("received-date"),
  };
}

function originalOf(parts: MimePart[]): OriginalMessage | null {
  const p = parts.find((x) => x.contentType === "message/rfc822" || x.contentType === "text/rfc822-headers" || x.contentType === "message/rfc822-headers");
  if (!p) return null;
  const headText = p.body.split(/\r?\n\r?\n/)[0] ?? "";
  const headers = parseHeaderBlock(headText);
  return {
    messageId: headers.get("message-id")?.match(/<[^>]+>/)?.[0] ?? headers.get("message-id") ?? null,
    returnPath: addressValue(headers.get("return-path")),
    headers,
  };
}

/** The report in a raw message, or null when the message is not a DSN or ARF report. */
export function parseReport(raw: Buffer | string): Report | null {
  const root = parseMime(raw);
  const all = walk(root);
  const report = all.find((p) => p.contentType === "multipart/report");
  const parts = report ? report.parts : all;
  const dsnPart = parts.find((p) => p.contentType === "message/delivery-status" || p.contentType === "message/global-delivery-status");
  const arfPart = parts.find((p) => p.contentType === "message/feedback-report");
  const type = report?.params["report-type"]?.toLowerCase();
  if (arfPart && (!type || type === "feedback-report")) {
    return { kind: "feedback-report", arf: parseFeedbackReport(arfPart.body), original: originalOf(parts) };
  }
  if (dsnPart && (!type || type === "delivery-status" || type === "global-delivery-status")) {
    return { kind: "delivery-status", dsn: parseDeliveryStatus(dsnPart.body), original: originalOf(parts) };
  }
  return null;
}

export type DsnVerdict =
  | { outcome: "permanent" | "transient"; recipient: DsnRecipient }
  | { outcome: "delivered"; recipient: DsnRecipient }
  | { outcome: "none" };

/**
 * The verdict of a DSN about one recipient (`to` when given, else the first reported): a failure with
 * a 5.x.x status (or without any status) is permanent; `delayed`, or a failure with 4.x.x (the
 * reporting MTA gave up after temporary errors), is transient.
 */
export function classifyDsn(dsn: DeliveryStatus, to?: string | null): DsnVerdict {
  const want = to?.toLowerCase();
  const r =
    (want && dsn.recipients.find((x) => x.finalRecipient?.toLowerCase() === want || x.originalRecipient?.toLowerCase() === want)) ||
    dsn.recipients.find((x) => x.action === "failed") ||
    dsn.recipients[0];
  if (!r) return { outcome: "none" };
  const cls = r.status?.[0] ?? /\b([245])\d\d\b/.exec(r.diagnosticCode ?? "")?.[1] ?? null;
  if (r.action === "failed") return { outcome: cls === "4" ? "transient" : "permanent", recipient: r };
  if (r.action === "delayed") return { outcome: "transient", recipient: r };
  if (r.action === "delivered" || r.action === "relayed" || r.action === "expanded") return { outcome: "delivered", recipient: r };
  if (cls === "5") return { outcome: "permanent", recipient: r };
  if (cls === "4") return { outcome: "transient", recipient: r };
  return { outcome: "none" };
}

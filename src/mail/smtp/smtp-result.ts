// SMTP outcomes are values, not exceptions: every attempt ends in exactly one of these.

/** Which step of the SMTP conversation produced the outcome. */
export type SmtpStage = "dns" | "connect" | "greeting" | "tls" | "auth" | "mail" | "rcpt" | "data" | "local";

export interface DeliveryResult {
  /** delivered: the remote answered 250 to the message; deferred: try again later; bounced: permanent failure. */
  kind: "delivered" | "deferred" | "bounced";
  /** The SMTP reply code (0 when there was no reply, e.g. a network error or timeout). */
  code: number;
  /** The remote reply text (or a description of the network/DNS failure), kept on the email as last_reply. */
  reply: string;
  stage: SmtpStage;
}

export const delivered = (reply: string): DeliveryResult => ({ kind: "delivered", code: replyCode(reply) || 250, reply, stage: "data" });
export const deferred = (reply: string, stage: SmtpStage, code = replyCode(reply)): DeliveryResult => ({ kind: "deferred", code, reply, stage });
export const bounced = (reply: string, stage: SmtpStage, code = replyCode(reply)): DeliveryResult => ({ kind: "bounced", code, reply, stage });

export function replyCode(reply: string): number {
  const m = /^([2-5]\d\d)/.exec(reply);
  return m ? Number(m[1]) : 0;
}

/** Stages where a 5xx is about this message or recipient (a hard bounce), not about our connection. */
const MESSAGE_STAGES = new Set<SmtpStage>(["mail", "rcpt", "data"]);

interface SmtpLikeError {
  code?: string;
  command?: string;
  response?: string;
  responseCode?: number;
  message?: string;
  originalCode?: string;
}

function stageOfCommand(command: string | undefined, fallback: SmtpStage): SmtpStage {
  if (!command) return fallback;
  const c = command.toUpperCase();
  if (c.startsWith("MAIL")) return "mail";
  if (c.startsWith("RCPT")) return "rcpt";
  if (c.startsWith("DATA")) return "data";
  if (c.startsWith("AUTH")) return "auth";
  if (c.startsWith("STARTTLS")) return "tls";
  if (c.startsWith("EHLO") || c.startsWith("HELO") || c.startsWith("LHLO")) return "greeting";
  if (c === "CONN") return "connect";
  return fallback;
}

/**
 * Turns an smtp-connection error into a typed result. 5xx on MAIL/RCPT/DATA is a bounce; every
 * other failure (4xx, 5xx during greeting/TLS/AUTH, timeouts, refused or dropped connections)
 * is a deferral: the recipient did nothing wrong, so we retry.
 */
export function fromSmtpError(err: unknown, fallback: SmtpStage): DeliveryResult {
  const e = (err ?? {}) as SmtpLikeError;
  const stage = stageOfCommand(e.command, fallback);
  const response = typeof e.response === "string" ? e.response.trim() : "";
  const code = e.responseCode ?? replyCode(response);
  if (code >= 500 && code < 600 && MESSAGE_STAGES.has(stage)) return bounced(response, stage, code);
  if (code >= 400) return deferred(response || String(e.message ?? "error"), stage, code);
  const network = e.originalCode ? `${e.originalCode}: ` : e.code && e.code !== "ECONNECTION" ? `${e.code}: ` : "";
  return deferred(`${network}${String(e.message ?? err)}`.slice(0, 500), stage, 0);
}

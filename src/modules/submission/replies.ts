// SMTP replies of the submission listener: an Error carrying `responseCode` is what smtp-server sends
// back (its own enhanced status codes are off; ours are written into the text). The send service
// answers in HTTP terms; `replyFor` turns its errors into the SMTP reply a client acts on.
import { AppError } from "../../http/errors";

export type SmtpError = Error & { responseCode: number };

export const smtpError = (code: number, message: string): SmtpError => Object.assign(new Error(message), { responseCode: code });

export const isSmtpError = (e: unknown): e is SmtpError => e instanceof Error && typeof (e as SmtpError).responseCode === "number";

/** One line, no control characters, at most 400 characters (a reply line is limited to 512 octets). */
export function oneLine(s: string): string {
  const flat = s.replace(/[\x00-\x1f\x7f]+/g, " ").trim();
  return flat.length > 400 ? flat.slice(0, 397) + "..." : flat;
}

/** The reply to a message the send service refused; null for an unexpected error (the caller logs it and answers 451). */
export function replyFor(e: unknown): SmtpError | null {
  if (isSmtpError(e)) return e;
  if (!(e instanceof AppError)) return null;
  const text = oneLine(e.message);
  switch (e.status) {
    case 402: // billing cap: nothing was queued; the client may retry next month or after the cap is raised
      return smtpError(452, `4.3.1 ${text}`);
    case 403: // unverified sender domain, disabled project
      return smtpError(550, `5.7.1 ${text}`);
    case 413:
      return smtpError(552, `5.3.4 ${text}`);
    case 422: {
      const first = e.extra.errors?.[0];
      return smtpError(554, `5.6.0 ${oneLine(first ? `${first.field ? first.field + ": " : ""}${first.message ?? ""}` : text)}`);
    }
    case 429:
      return smtpError(451, `4.7.1 ${text}`);
    default:
      return null;
  }
}

// AUTH on the submission listener: any user name, the project's secret key as the password (PLAIN or
// LOGIN). Credentials travel in clear text, so AUTH needs TLS unless the client is on this machine.
// A wrong key is a failed login for the same throttle the dashboard login uses, keyed by client IP.
import type { AppContext } from "../../context";
import { loginThrottle } from "../users/service";
import { oneLine, smtpError } from "./replies";

/** Whether `address` (as a socket reports it: IPv4, IPv6 or IPv4-mapped IPv6) is a loopback address. */
export function isLoopback(address: string): boolean {
  const a = address.trim().replace(/^\[|\]$/g, "").replace(/%.*$/, "").toLowerCase();
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(a)) return isLoopbackV4(a);
  if (!a.includes(":")) return false;
  let canonical: string;
  try {
    canonical = new URL(`http://[${a}]/`).hostname.slice(1, -1); // "::1", "::ffff:7f00:1"
  } catch {
    return false;
  }
  if (canonical === "::1") return true;
  const mapped = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(canonical);
  return !!mapped && parseInt(mapped[1]!, 16) >> 8 === 127;
}

function isLoopbackV4(a: string): boolean {
  const octets = a.split(".").map(Number);
  return octets.every((o) => o <= 255) && octets[0] === 127;
}

export interface SubmissionUser {
  projectId: string;
  /** The key the client authenticated with: checked again at every MAIL FROM (rotation, disabled project). */
  key: string;
}

/** The project of a secret key given as the AUTH password, or an SMTP refusal (530, 454, 535). */
export async function authenticate(ctx: AppContext, a: { password: string; remoteAddress: string; secure: boolean; tlsOffered: boolean }): Promise<SubmissionUser> {
  if (!a.secure && !isLoopback(a.remoteAddress)) {
    throw smtpError(530, a.tlsOffered ? "5.7.0 Must issue a STARTTLS command first: AUTH is accepted over TLS only" : "5.7.0 AUTH needs TLS and this server has no certificate (MAILSVC_TLS_CERT): only local clients may log in");
  }
  const throttle = loginThrottle(ctx);
  const who = `smtp:${a.remoteAddress}`;
  const wait = throttle.blockedFor(who);
  if (wait) throw smtpError(454, `4.7.0 Too many failed logins from this address; try again in ${wait} s`);
  const key = a.password.trim();
  const found = await ctx.keys.resolve(key);
  if (!found || found.kind !== "secret") {
    throttle.hit(who);
    throw smtpError(535, "5.7.8 Authentication credentials invalid: use the project's secret key (sk_...) as the password");
  }
  return { projectId: found.projectId, key };
}

/** At MAIL FROM: the session's key still names an enabled project (it may have been rotated or disabled since AUTH). */
export async function checkSender(ctx: AppContext, user: SubmissionUser): Promise<void> {
  const found = await ctx.keys.resolve(user.key);
  if (!found || found.kind !== "secret" || found.projectId !== user.projectId) throw smtpError(530, "5.7.0 The secret key of this session is no longer valid; authenticate again");
  if (found.disabled) throw smtpError(550, `5.7.1 This project is disabled${found.disabledReason ? ` (${oneLine(found.disabledReason)})` : ""}`);
  const d = ctx.rateLimiter.hit(user.projectId);
  if (!d.allowed) throw smtpError(451, `4.7.1 Rate limit of ${d.limit} requests per minute exceeded; try again in ${d.resetSeconds} s`);
}

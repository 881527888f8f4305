// What a fresh install gets wrong and filters punish: a HELO/Message-ID name that is not a fully
// qualified domain name, and tracking links pointing at a loopback URL while mail goes straight to
// recipients' MX hosts. Checked at start (logged by `serve`), shown in /projects/:id/setup-state,
// and by `mailsvc doctor`.
import type { Config } from "../../config";
import { isValidDomain } from "../../net/email-address";

const NOT_PUBLIC_SUFFIXES = ["localhost", "localdomain", "local", "internal", "lan", "home", "invalid", "example", "test"];

/** A name other hosts can resolve: at least two labels, a real-looking TLD, not localhost or a local-only suffix. */
export function isQualifiedHostname(host: string, opts: { allowReserved?: boolean } = {}): boolean {
  const h = host.trim().toLowerCase().replace(/\.$/, "");
  if (!isValidDomain(h)) return false;
  const tld = h.slice(h.lastIndexOf(".") + 1);
  if (["localhost", "localdomain", "local"].includes(tld)) return false;
  return opts.allowReserved !== false || !NOT_PUBLIC_SUFFIXES.includes(tld);
}

function isLoopbackUrl(url: string): boolean {
  try {
    const h = new URL(url).hostname.toLowerCase().replace(/^\[|\]$/g, "");
    return h === "localhost" || h.endsWith(".localhost") || /^127\./.test(h) || h === "::1" || h === "0.0.0.0" || !h.includes(".") && !h.includes(":");
  } catch {
    return true;
  }
}

export interface ConfigWarning {
  code: "HOSTNAME_NOT_FQDN" | "PUBLIC_URL_LOOPBACK";
  message: string;
  fix: string;
}

/** The configuration problems that cost every message spam points (empty when the install is fine). */
export function configWarnings(config: Pick<Config, "hostname" | "publicUrl" | "smtpRelay">): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  if (!isQualifiedHostname(config.hostname)) {
    out.push({
      code: "HOSTNAME_NOT_FQDN",
      message: `MAILSVC_HOSTNAME "${config.hostname}" is not a fully qualified domain name: it is the HELO name and the Message-ID domain of every message, and spam filters score a bare name (FSL_HELO_NON_FQDN, HELO_NO_DOMAIN). Domain records that would name it (bounce MX, SPF) are not recommended until it is set.`,
      fix: "Set MAILSVC_HOSTNAME (or --hostname) to this server's public name, e.g. mail.example.com, with an A record and a PTR record pointing back to it.",
    });
  }
  if (!config.smtpRelay && isLoopbackUrl(config.publicUrl)) {
    out.push({
      code: "PUBLIC_URL_LOOPBACK",
      message: `MAILSVC_PUBLIC_URL "${config.publicUrl}" is a loopback address while mail is delivered directly to recipients' MX hosts: tracking, unsubscribe and image links in delivered mail will not work for recipients and cost spam points.`,
      fix: "Set MAILSVC_PUBLIC_URL (or --public-url) to the https URL where this server is reachable, e.g. https://mail.example.com.",
    });
  }
  return out;
}

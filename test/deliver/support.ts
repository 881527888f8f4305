// Shared set-up for deliverability tests: DNS, an SMTP sink as every MX, a verified sender domain,
// and DKIM verification of delivered messages with mailauth through the test DNS.
import { Resolver } from "node:dns/promises";
import { dkimVerify } from "mailauth/lib/dkim/verify";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SinkMessage, SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";

let seq = 0;
export const rcpt = (domain: string) => `reader${Date.now()}${++seq}@${domain}`;

/** Sends through /v1/send and waits for the sink to receive it. */
export async function sendAndReceive(srv: TestServer, sink: SmtpSink, acc: Account, body: Record<string, unknown>): Promise<SinkMessage> {
  const res = await srv.api("/v1/send", { key: acc.secretKey, body });
  if (res.status !== 200 && res.status !== 201) throw new Error(`send failed: ${res.status} ${res.text}`);
  const to = String(body.to);
  const received = async () => {
    await srv.drainJobs();
    return sink.byRecipient(to)[0];
  };
  return waitFor(received, { what: `a message for ${to}` });
}

export interface DkimResult {
  signingDomain: string;
  selector: string;
  algo: string;
  result: string;
}

/** Every DKIM signature of a raw message, verified by mailauth against the test DNS. */
export async function verifyDkim(dns: TestDns, raw: Buffer | string): Promise<DkimResult[]> {
  const r = new Resolver();
  r.setServers([dns.server]);
  // Bun hands back each string of a multi-string TXT record as a record of its own: give mailauth the one record.
  const resolver = async (name: string, type: string) => (type === "TXT" ? [(await r.resolveTxt(name)).flat()] : r.resolve(name, type as "A"));
  const out = await dkimVerify(typeof raw === "string" ? Buffer.from(raw) : raw, { resolver });
  return out.results.map((x: any) => ({ signingDomain: x.signingDomain, selector: x.selector, algo: x.algo, result: x.status?.result }));
}

export function dkimHeaders(raw: Buffer | string): string[] {
  const head = raw.toString().split("\r\n\r\n")[0]!;
  return [...head.matchAll(/^DKIM-Signature:((?:.*)(?:\r\n[ \t].*)*)/gim)].map((m) => m[1]!.replace(/\r\n[ \t]+/g, " "));
}

export function tag(sig: string, name: string): string {
  const m = new RegExp(`(?:^|;)\\s*${name}=([^;]*)`).exec(sig);
  return (m?.[1] ?? "").replace(/\s+/g, "");
}

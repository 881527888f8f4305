// /v1/send test set-up: DNS, sink, server, an account with a VERIFIED sender domain whose DKIM
// record is published, and a mailauth check of delivered messages against that DNS.
import { Resolver } from "node:dns/promises";
import { authenticate } from "mailauth";
import type { Config } from "../../src/config";
import { addVerifiedDomain } from "../domains/support";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import type { SinkOptions } from "../support/smtp-sink";
import type { TestServer } from "../support/server";
import { waitFor } from "../support/wait";

export const SENDER = "sender.test";
export const RCPT = "rcpt.test";

export async function sendEnv(opts: { sink?: SinkOptions; config?: Partial<Config> } = {}): Promise<DeliveryEnv> {
  const env = await deliveryEnv(opts);
  env.dns.mailDomain(RCPT);
  await addVerifiedDomain(env.srv.api, env.dns, env.acct, SENDER);
  return env;
}

/** DKIM/SPF/DMARC verdicts of a raw message, with DNS answered by the test's dns2 server. */
export async function verifyDkim(env: DeliveryEnv, raw: Buffer) {
  const r = new Resolver();
  r.setServers([env.dns.server]);
  const resolver = async (name: string, type: string): Promise<unknown> => {
    if (type === "TXT") {
      const records = await r.resolveTxt(name);
      // Bun splits one multi-string TXT record into several; a DKIM key record is one record.
      return name.includes("._domainkey.") ? [[records.flat().join("")]] : records;
    }
    return r.resolve(name, type as "MX");
  };
  const res = await authenticate(raw, { ip: "127.0.0.1", helo: "mailsvc.test", sender: "x@" + SENDER, mta: "mx." + RCPT, resolver } as never);
  return (res as { dkim: { results: { status: { result: string }; signingDomain: string }[] } }).dkim.results;
}

export async function emailView(srv: TestServer, key: string, id: string) {
  const r = await srv.api(`/emails/${id}`, { key });
  if (r.status !== 200) throw new Error(`GET /emails/${id}: ${r.status} ${r.text}`);
  return r.body as { status: string; attempts: number; lastReply?: string; [k: string]: unknown };
}

/** Polls GET /emails/:id until the email reaches `status`; returns the view. */
export function waitForView(srv: TestServer, key: string, id: string, status: string, timeoutMs = 10_000) {
  return waitFor(() => emailView(srv, key, id), { until: (v) => v.status === status, timeoutMs, what: `email ${id} ${status}` });
}

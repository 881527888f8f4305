// Shared set-up for delivery tests: a DNS server, an SMTP sink as every MX, a server using both.
import type { Config } from "../../src/config";
import { insertContent, insertEmails, type NewContent } from "../../src/mail/outbox/enqueue";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { addVerifiedDomain, type DomainView } from "../domains/support";
import { startDns, type TestDns } from "./dns";
import { createAccount, startServer, type Account, type TestServer } from "./server";
import { startSmtpSink, type SinkMessage, type SinkOptions, type SmtpSink } from "./smtp-sink";
import { waitFor } from "./wait";

export interface DeliveryEnv {
  dns: TestDns;
  sink: SmtpSink;
  srv: TestServer;
  acct: Account;
  /** The account's verified sender domain (with `senderDomain`). */
  domain: DomainView | null;
  close(): Promise<void>;
}

export interface DeliveryEnvOptions {
  sink?: SinkOptions;
  config?: Partial<Config>;
  /** The account's project name. */
  name?: string;
  /** A recipient domain whose MX is the sink. */
  mailDomain?: string;
  /** A sender domain added to the account and verified. */
  senderDomain?: string;
}

export async function deliveryEnv(opts: DeliveryEnvOptions = {}): Promise<DeliveryEnv> {
  const dns = await startDns();
  if (opts.mailDomain) dns.mailDomain(opts.mailDomain);
  const sink = await startSmtpSink(opts.sink);
  const srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port, ...opts.config } });
  const acct = await createAccount(srv.api, opts.name);
  const domain = opts.senderDomain ? await addVerifiedDomain(srv.api, dns, acct, opts.senderDomain) : null;
  return {
    dns,
    sink,
    srv,
    acct,
    domain,
    async close() {
      await srv.close();
      await sink.close();
      await dns.close();
    },
  };
}

/** Puts emails straight into the outbox (as campaigns and workflows will), bypassing /v1/send. */
export async function enqueueDirect(
  srv: TestServer,
  projectId: string | null,
  content: Omit<NewContent, "projectId">,
  recipients: { email: string; vars?: Record<string, unknown> }[],
): Promise<string[]> {
  const ctx = srv.ctx;
  const now = ctx.clock.now();
  const ids = await ctx.db.transaction().execute(async (trx) => {
    const contentId = await insertContent(trx, now, { projectId, ...content });
    return insertEmails(
      trx,
      now,
      ctx.config.hostname,
      recipients.map((r) => ({ projectId, contentId, contactId: null, toEmail: r.email, vars: r.vars ?? {}, sourceType: "TRANSACTIONAL" as const })),
    );
  });
  wakeOutbox(ctx);
  return ids;
}

export async function emailRow(srv: TestServer, id: string) {
  return srv.ctx.db.selectFrom("emails").selectAll().where("id", "=", id).executeTakeFirstOrThrow();
}

/** Polls until the email reaches one of `statuses`; returns its row. */
export function waitForStatus(srv: TestServer, id: string, statuses: string | string[], timeoutMs = 10_000) {
  const want = [statuses].flat();
  return waitFor(() => emailRow(srv, id), { until: (row) => want.includes(row.status), timeoutMs, what: `email ${id} ${want.join("|")}` });
}

/** The newest message the sink has for `address`, moving the server's jobs along until one arrives. */
export function lastMessageFor(env: Pick<DeliveryEnv, "srv" | "sink">, address: string): Promise<SinkMessage> {
  const received = async () => {
    await env.srv.drainJobs();
    return env.sink.byRecipient(address).at(-1);
  };
  return waitFor(received, { what: `a message for ${address}` }) as Promise<SinkMessage>;
}

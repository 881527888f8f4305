// Shared set-up for delivery tests: a DNS server, an SMTP sink as every MX, a server using both.
import type { Config } from "../../src/config";
import { insertContent, insertEmails, type NewContent } from "../../src/mail/enqueue";
import { wakeOutbox } from "../../src/mail/outbox";
import { startDns, type TestDns } from "./dns";
import { createAccount, startServer, type Account, type TestServer } from "./server";
import { startSmtpSink, type SinkOptions, type SmtpSink } from "./smtp-sink";
import { waitFor } from "./wait";

export interface DeliveryEnv {
  dns: TestDns;
  sink: SmtpSink;
  srv: TestServer;
  acct: Account;
  close(): Promise<void>;
}

export async function deliveryEnv(opts: { sink?: SinkOptions; config?: Partial<Config> } = {}): Promise<DeliveryEnv> {
  const dns = await startDns();
  const sink = await startSmtpSink(opts.sink);
  const srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port, ...opts.config } });
  const acct = await createAccount(srv.api);
  return {
    dns,
    sink,
    srv,
    acct,
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

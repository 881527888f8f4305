// The inbound SMTP listener: accepts mail only for recipients the router knows (everything else is
// refused at RCPT), keeps at most `keepBytes` of each message in memory (reports sit at the head of
// a message; the rest is counted, not stored), and hands each message to the handler. A handler
// failure is logged and answered 451 so the sender retries; nothing here can take the process down.
import { readFileSync } from "node:fs";
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from "smtp-server";
import { listenSmtp } from "../../../net/smtp-listen";
import type { Logger } from "../../../http/logger";

export interface InboundEnvelope<R> {
  mailFrom: string;
  /** Accepted recipients with the route the router gave each. */
  recipients: { address: string; route: R }[];
  remoteAddress: string;
  clientHostname: string;
  secure: boolean;
}

export interface InboundMessage<R> extends InboundEnvelope<R> {
  /** The head of the message (at most keepBytes). */
  raw: Buffer;
  /** The full size in bytes. */
  size: number;
  truncated: boolean;
}

export interface InboundOptions<R> {
  port: number;
  host: string;
  /** Our name in the banner and EHLO. */
  name: string;
  maxBytes: number;
  keepBytes?: number;
  maxRecipients?: number;
  tls?: { certFile: string; keyFile: string };
  log: Logger;
  /** The route of a recipient, or null to refuse it (550). Throwing answers 451. */
  route(address: string, mailFrom: string): Promise<R | null>;
  handle(msg: InboundMessage<R>): Promise<void>;
}

export interface InboundServer {
  port: number;
  close(): Promise<void>;
}

const smtpError = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

export async function startInboundServer<R>(opts: InboundOptions<R>): Promise<InboundServer> {
  const keepBytes = opts.keepBytes ?? 2 * 1024 * 1024;
  const maxRecipients = opts.maxRecipients ?? 100;
  const routes = new WeakMap<SMTPServerSession, Map<string, R>>();
  const tls = opts.tls ? { key: readFileSync(opts.tls.keyFile), cert: readFileSync(opts.tls.certFile) } : null;

  const server = new SMTPServer({
    name: opts.name,
    banner: "mailsvc inbound",
    logger: false,
    secure: false,
    size: opts.maxBytes,
    authOptional: true,
    disabledCommands: tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(tls ? { key: tls.key, cert: tls.cert } : {}),
    maxClients: 200,
    disableReverseLookup: true, // the PTR name is never used; skip a DNS round trip per connection
    socketTimeout: 60_000,
    closeTimeout: 5_000,
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void) {
      const rcpt = address.address.trim();
      if (session.envelope.rcptTo.length >= maxRecipients) return cb(smtpError(452, "4.5.3 Too many recipients"));
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
      opts.route(rcpt, mailFrom).then(
        (route) => {
          if (route === null) return cb(smtpError(550, `5.1.1 <${rcpt}>: Recipient address rejected: no such recipient here`));
          let m = routes.get(session);
          if (!m) routes.set(session, (m = new Map()));
          m.set(rcpt.toLowerCase(), route);
          cb();
        },
        (err) => {
          opts.log.error("inbound: recipient lookup failed", { rcpt, error: String((err as Error)?.message ?? err) });
          cb(smtpError(451, "4.3.0 Temporary failure, try again later"));
        },
      );
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      let kept = 0;
      let size = 0;
      stream.on("data", (c: Buffer) => {
        size += c.length;
        if (kept < keepBytes) {
          const part = c.length > keepBytes - kept ? c.subarray(0, keepBytes - kept) : c;
          chunks.push(part);
          kept += part.length;
        }
      });
      stream.on("error", (err: Error) => {
        opts.log.warn("inbound: data stream error", { error: err.message });
      });
      stream.on("end", () => {
        if ((stream as any).sizeExceeded) return cb(smtpError(552, `5.3.4 Message too big (limit ${opts.maxBytes} bytes)`));
        const m = routes.get(session) ?? new Map<string, R>();
        const msg: InboundMessage<R> = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          recipients: session.envelope.rcptTo.flatMap((r) => {
            const route = m.get(r.address.trim().toLowerCase());
            return route === undefined ? [] : [{ address: r.address, route }];
          }),
          remoteAddress: session.remoteAddress,
          clientHostname: session.clientHostname,
          secure: !!session.secure,
          raw: Buffer.concat(chunks),
          size,
          truncated: size > kept,
        };
        routes.delete(session);
        opts.handle(msg).then(
          () => cb(null, "2.0.0 Ok: accepted"),
          (err) => {
            opts.log.error("inbound: handling failed", { from: msg.mailFrom, error: String((err as Error)?.stack ?? err) });
            cb(smtpError(451, "4.3.0 Temporary failure while processing the message, try again later"));
          },
        );
      });
    },
  });
  server.on("error", (err: Error) => opts.log.warn("inbound: smtp server error", { error: err.message }));

  return listenSmtp(server, opts.port, opts.host);
}

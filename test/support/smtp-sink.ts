// A real SMTP server on 127.0.0.1 that records what it receives. Tests tell it how to answer
// per recipient (e.g. 451 then 250, or 550), whether to require AUTH, and how slow to be.
import { simpleParser, type ParsedMail } from "mailparser";
import { SMTPServer, type SMTPServerOptions } from "smtp-server";
import { waitFor } from "./wait";

export interface SinkMessage {
  from: string;
  to: string[];
  raw: Buffer;
  secure: boolean;
  user?: string;
  receivedAt: number;
  parse(): Promise<ParsedMail>;
}

export interface SinkReply {
  code: number;
  message?: string;
}

export interface SmtpSink {
  port: number;
  messages: SinkMessage[];
  /** Answer for RCPT TO of a recipient: return a reply to refuse it, undefined to accept. */
  onRcpt: (rcpt: string, attempt: number) => SinkReply | undefined;
  /** Per-message delay before answering DATA (ms). */
  delayMs: number;
  /** When set, a message is recorded at once and the reply to its DATA waits for this promise. */
  hold: Promise<void> | null;
  rcptAttempts: Map<string, number>;
  connections: number;
  waitFor(count: number, timeoutMs?: number): Promise<SinkMessage[]>;
  byRecipient(email: string): SinkMessage[];
  reset(): void;
  close(): Promise<void>;
}

export interface SinkOptions {
  /** Require AUTH PLAIN/LOGIN with these credentials (relay tests). */
  auth?: { user: string; pass: string };
  /** Offer STARTTLS (default true; smtp-server's built-in self-signed certificate). */
  starttls?: boolean;
  /** Implicit TLS from the first byte (smtps). */
  secure?: boolean;
  port?: number;
  /** Certificate for STARTTLS/TLS instead of smtp-server's built-in self-signed one (PEM). */
  tls?: { key: string; cert: string };
}

export async function startSmtpSink(opts: SinkOptions = {}): Promise<SmtpSink> {
  const sink: SmtpSink = {
    port: 0,
    messages: [],
    onRcpt: () => undefined,
    delayMs: 0,
    hold: null,
    rcptAttempts: new Map(),
    connections: 0,
    async waitFor(count, timeoutMs = 10_000) {
      await waitFor(() => sink.messages.length, { until: (n) => n >= count, timeoutMs, what: `${count} messages at the sink` });
      return sink.messages;
    },
    byRecipient(email) {
      const e = email.toLowerCase();
      return sink.messages.filter((m) => m.to.some((t) => t.toLowerCase() === e));
    },
    reset() {
      sink.messages.length = 0;
      sink.rcptAttempts.clear();
      sink.onRcpt = () => undefined;
      sink.delayMs = 0;
      sink.hold = null;
    },
    close: async () => {},
  };

  const options: SMTPServerOptions = {
    secure: !!opts.secure,
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    disabledCommands: [...(opts.auth ? [] : ["AUTH"]), ...(opts.starttls === false ? ["STARTTLS"] : [])],
    authOptional: !opts.auth,
    allowInsecureAuth: true,
    logger: false,
    size: 60 * 1024 * 1024,
    onConnect(_session, cb) {
      sink.connections++;
      cb();
    },
    onAuth(auth, _session, cb) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) return cb(null, { user: auth.username });
      cb(new Error("Invalid username or password"));
    },
    onRcptTo(address, _session, cb) {
      const rcpt = address.address.toLowerCase();
      const n = (sink.rcptAttempts.get(rcpt) ?? 0) + 1;
      sink.rcptAttempts.set(rcpt, n);
      const reply = sink.onRcpt(rcpt, n);
      if (reply) {
        const err = new Error(reply.message ?? (reply.code >= 500 ? "User unknown" : "Try again later")) as Error & { responseCode: number };
        err.responseCode = reply.code;
        return cb(err);
      }
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", async () => {
        if (sink.delayMs) await Bun.sleep(sink.delayMs);
        const raw = Buffer.concat(chunks);
        const hold = sink.hold;
        sink.messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          secure: !!session.secure,
          user: session.user as string | undefined,
          receivedAt: Date.now(),
          parse: () => simpleParser(raw),
        });
        if (hold) await hold;
        cb(null, "2.0.0 Ok: queued");
      });
    },
  };
  const server = new SMTPServer(options);
  server.on("error", () => {});
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", () => resolve()));
  sink.port = (server.server.address() as { port: number }).port;
  sink.close = () => new Promise<void>((r) => server.close(() => r()));
  return sink;
}

// The SMTP submission listener (RFC 6409; implicit TLS per RFC 8314 on its own port): AUTH PLAIN or
// LOGIN before MAIL FROM, at most `maxRecipients` RCPT TO per message, at most `maxBytes` of DATA
// (SIZE advertised; the rest of a larger message is read and dropped, then 552). `submit` answers
// after the message is durable: the 250 a client sees means it is committed. Errors carrying a
// `responseCode` are the reply; anything else is logged and answered 451 (the client retries).
import { SMTPServer, type SMTPServerAddress, type SMTPServerAuthentication, type SMTPServerSession } from "smtp-server";
import { listenSmtp } from "../../net/smtp-listen";
import type { Logger } from "../../http/logger";
import { isValidEmail } from "../../net/email-address";
import { isSmtpError, smtpError } from "./replies";

export interface SubmittedMessage<U> {
  user: U;
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  remoteAddress: string;
}

export interface SubmissionListenerOptions<U> {
  port: number;
  host: string;
  /** Our name in the banner and EHLO. */
  name: string;
  /** Implicit TLS from the first byte (port 465) instead of STARTTLS. */
  implicitTls: boolean;
  /** Certificate and key (PEM); without them no STARTTLS (and no implicit TLS port). */
  tls: { key: Buffer; cert: Buffer } | null;
  maxBytes: number;
  maxRecipients: number;
  log: Logger;
  /** `tlsOffered`: whether this listener can do TLS at all (a certificate is configured). */
  authenticate(a: { username: string; password: string; remoteAddress: string; secure: boolean; tlsOffered: boolean }): Promise<U>;
  /** Called at MAIL FROM with the authenticated user (refuse with a responseCode error). */
  mailFrom(user: U, address: string): Promise<void>;
  /** Persists the message; resolves with the text of the 250 reply. */
  submit(msg: SubmittedMessage<U>): Promise<string>;
}

export interface SubmissionListener {
  port: number;
  close(): Promise<void>;
}

export async function startSubmissionListener<U>(opts: SubmissionListenerOptions<U>): Promise<SubmissionListener> {
  const fail = (what: string, cb: (err?: Error | null) => void) => (err: unknown) => {
    if (isSmtpError(err)) return cb(err);
    opts.log.error(`submission: ${what} failed`, { error: String((err as Error)?.stack ?? err) });
    cb(smtpError(451, "4.3.0 Temporary failure, try again later"));
  };
  const userOf = (session: SMTPServerSession) => session.user as unknown as U;

  const server = new SMTPServer({
    name: opts.name,
    banner: "mailsvc ESMTP submission",
    logger: false,
    secure: opts.implicitTls,
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    disabledCommands: opts.tls && !opts.implicitTls ? [] : ["STARTTLS"],
    authMethods: ["PLAIN", "LOGIN"],
    // AUTH is always offered; `authenticate` refuses it without TLS unless the client is local (530).
    allowInsecureAuth: true,
    authOptional: false,
    authRequiredMessage: "5.7.0 Authentication required",
    size: opts.maxBytes,
    maxClients: 1000,
    disableReverseLookup: true,
    socketTimeout: 120_000,
    closeTimeout: 5_000,
    onAuth(auth: SMTPServerAuthentication, session: SMTPServerSession, cb: (err: Error | null | undefined, response?: { user: unknown }) => void) {
      if (auth.method !== "PLAIN" && auth.method !== "LOGIN") return cb(smtpError(504, "5.5.4 Unrecognized authentication type"));
      opts
        .authenticate({ username: auth.username ?? "", password: auth.password ?? "", remoteAddress: session.remoteAddress, secure: !!session.secure, tlsOffered: !!opts.tls })
        .then((user) => cb(null, { user }), fail("AUTH", cb));
    },
    onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void) {
      opts.mailFrom(userOf(session), address.address).then(() => cb(), fail("MAIL FROM", cb));
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, cb: (err?: Error | null) => void) {
      const rcpt = address.address.trim();
      if (session.envelope.rcptTo.length >= opts.maxRecipients) return cb(smtpError(452, `4.5.3 Too many recipients (at most ${opts.maxRecipients} per message)`));
      if (!isValidEmail(rcpt)) return cb(smtpError(553, `5.1.3 <${rcpt}>: Invalid recipient address`));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on("data", (c: Buffer) => {
        size += c.length;
        if (size <= opts.maxBytes) chunks.push(c);
      });
      stream.on("error", (err: Error) => opts.log.warn("submission: data stream error", { error: err.message }));
      stream.on("end", () => {
        if ((stream as { sizeExceeded?: boolean }).sizeExceeded || size > opts.maxBytes) {
          return cb(smtpError(552, `5.3.4 Message too big (limit ${opts.maxBytes} bytes)`));
        }
        const msg: SubmittedMessage<U> = {
          user: userOf(session),
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address.trim()),
          raw: Buffer.concat(chunks, size),
          remoteAddress: session.remoteAddress,
        };
        opts.submit(msg).then((reply) => cb(null, reply), fail("DATA", cb));
      });
    },
  });
  server.on("error", (err: Error) => opts.log.warn("submission: smtp server error", { error: err.message }));

  return listenSmtp(server, opts.port, opts.host);
}

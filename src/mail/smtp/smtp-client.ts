// One SMTP session to one remote host over nodemailer's smtp-connection, with typed results.
// EHLO with our hostname, opportunistic STARTTLS, optional AUTH (relay), then any number of
// messages on the same connection. Nothing here throws: failures come back as DeliveryResults.
import SMTPConnection from "nodemailer/lib/smtp-connection";
import { delivered, deferred, fromSmtpError, type DeliveryResult } from "./smtp-result";

export interface SmtpTarget {
  /** Address (or host name) to connect to. */
  host: string;
  port: number;
  /** Name for TLS SNI and for logs (the MX host name when `host` is its IP). */
  servername?: string;
  /** TLS from the first byte (smtps://). */
  secure?: boolean;
  auth?: { user: string; pass: string };
  /** Our EHLO name. */
  clientName: string;
  /**
   * MTA-STS enforce: STARTTLS is mandatory and the certificate must be valid for `servername`
   * (chaining to the system CAs, or to `ca` when given). Otherwise TLS is opportunistic.
   */
  verifiedTls?: { ca?: string[] };

  timeouts?: Partial<SmtpTimeouts>;
}

export interface SmtpTimeouts {
  connectMs: number;
  greetingMs: number;
  /** Inactivity limit while a command or the message data waits for its reply. */
  socketMs: number;
}

const DEFAULT_TIMEOUTS: SmtpTimeouts = { connectMs: 30_000, greetingMs: 30_000, socketMs: 5 * 60_000 };

export type OpenResult = { ok: true; client: SmtpClient } | { ok: false; result: DeliveryResult };

export class SmtpClient {
  private dead = false;
  /** Messages handed over on this connection (accepted or not). */
  transactions = 0;
  /** An unfinished transaction (a refused envelope) needs RSET before the next MAIL FROM. */
  private dirty = false;

  private constructor(
    private readonly conn: SMTPConnection,
    readonly target: SmtpTarget,
  ) {
    conn.on("error", () => {
      this.dead = true;
    });
    conn.on("end", () => {
      this.dead = true;
    });
  }

  /** Connects, says EHLO, upgrades with STARTTLS when offered and logs in when credentials are given. */
  static open(target: SmtpTarget): Promise<OpenResult> {
    const t = { ...DEFAULT_TIMEOUTS, ...target.timeouts };
    const conn = new SMTPConnection({
      host: target.host,
      port: target.port,
      secure: !!target.secure,
      name: target.clientName,
      servername: target.servername && !isIp(target.servername) ? target.servername : undefined,
      opportunisticTLS: !target.verifiedTls,
      requireTLS: !!target.verifiedTls,
      // Opportunistic TLS as MTAs do it: encrypt whenever offered, without refusing self-signed or
      // mismatched certificates; under an MTA-STS enforce policy, only a verified certificate.
      tls: target.verifiedTls
        ? { rejectUnauthorized: true, servername: target.servername, ...(target.verifiedTls.ca ? { ca: target.verifiedTls.ca } : {}) }
        : { rejectUnauthorized: false },
      connectionTimeout: t.connectMs,
      greetingTimeout: t.greetingMs,
      socketTimeout: t.socketMs,
      socketCloseTimeout: 1000,
      logger: false,
      allowInternalNetworkInterfaces: true,
    });
    writeDataAsIs(conn);
    const client = new SmtpClient(conn, target);
    return new Promise<OpenResult>((resolve) => {
      let settled = false;
      const fail = (err: unknown, stage: "connect" | "auth") => {
        if (settled) return;
        settled = true;
        client.dead = true;
        try {
          conn.close();
        } catch {}
        resolve({ ok: false, result: fromSmtpError(err, stage) });
      };
      // smtp-connection reports a failed connect (refused, TLS, timeout) as an 'error' event only.
      conn.once("error", (err) => fail(err, "connect"));
      conn.once("end", () => fail(new Error("connection closed during the SMTP handshake"), "connect"));
      try {
        conn.connect((err) => {
          if (err) return fail(err, "connect");
          if (!target.auth) {
            settled = true;
            return resolve({ ok: true, client });
          }
          conn.login({ user: target.auth.user, pass: target.auth.pass }, (lerr) => {
            if (lerr) return fail(lerr, "auth");
            settled = true;
            resolve({ ok: true, client });
          });
        });
      } catch (e) {
        fail(e, "connect");
      }
    });
  }

  /** True while the connection can carry another message. */
  get usable(): boolean {
    return !this.dead && !(this.conn as unknown as { _destroyed?: boolean })._destroyed;
  }

  /** Whether the session is encrypted (implicit TLS or after STARTTLS). */
  get secure(): boolean {
    return !!this.conn.secure;
  }

  /**
   * Sends one message to one recipient. `data` must be in SMTP DATA form already (toSmtpData:
   * CRLF, leading dots doubled): it is written as it is. Resolves with the outcome; never rejects.
   */
  async send(from: string, to: string, data: Buffer): Promise<DeliveryResult> {
    if (!this.usable) return deferred("connection closed before the message was sent", "connect");
    if (this.dirty && !(await this.reset())) return deferred("connection could not be reset (RSET failed)", "connect");
    this.transactions++;
    return new Promise<DeliveryResult>((resolve) => {
      try {
        this.conn.send({ from, to: [to], size: data.length }, data, (err, info) => {
          if (err) {
            this.dirty = true;
            return resolve(fromSmtpError(err, "data"));
          }
          if (info && info.rejected && info.rejected.length) {
            this.dirty = true;
            const e = info.rejectedErrors?.[0];
            return resolve(fromSmtpError(e ?? { response: "550 recipient rejected", command: "RCPT TO" }, "rcpt"));
          }
          resolve(delivered((info?.response ?? "250 OK").trim()));
        });
      } catch (e) {
        this.dirty = true;
        resolve(fromSmtpError(e, "data"));
      }
    });
  }

  /** RSET: clears a failed transaction so the connection can carry the next message. */
  reset(): Promise<boolean> {
    if (!this.usable) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      try {
        this.conn.reset((err) => {
          if (err) {
            this.close();
            return resolve(false);
          }
          this.dirty = false;
          resolve(true);
        });
      } catch {
        this.close();
        resolve(false);
      }
    });
  }

  /** QUIT and close. */
  close(): void {
    if (this.dead) {
      try {
        this.conn.close();
      } catch {}
      return;
    }
    this.dead = true;
    try {
      this.conn.quit();
    } catch {
      try {
        this.conn.close();
      } catch {}
    }
  }
}

/**
 * smtp-connection runs the message through a stream transform that normalises line ends and
 * doubles leading dots, byte by byte in JavaScript: ~11% of the main thread during a large send.
 * Our messages arrive in DATA form already (built off the main thread, smtp-data.ts), so on our
 * connections the transform passes the bytes through; its end-of-data line is kept.
 * (Relies on smtp-connection's _createSendStream/_transform; the delivery tests cover a body with
 * leading dots, bare line feeds and the terminator, so a change there fails them.)
 */
function writeDataAsIs(conn: SMTPConnection) {
  const c = conn as unknown as { _createSendStream?: (cb: unknown) => PassStream };
  const create = c._createSendStream;
  if (typeof create !== "function") return;
  c._createSendStream = function (this: unknown, cb: unknown) {
    const stream = create.call(this, cb);
    stream._transform = passThrough;
    return stream;
  };
}

interface PassStream {
  _transform: (chunk: Buffer, enc: string, done: () => void) => void;
  push(chunk: Buffer): boolean;
  inByteCount: number;
  outByteCount: number;
  lastByte: number | false;
}

function passThrough(this: PassStream, chunk: Buffer, _enc: string, done: () => void) {
  if (chunk.length) {
    this.inByteCount += chunk.length;
    this.outByteCount += chunk.length;
    this.lastByte = chunk[chunk.length - 1]!;
    this.push(chunk);
  }
  done();
}

function isIp(s: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(s) || s.includes(":");
}

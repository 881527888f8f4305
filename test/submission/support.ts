// SMTP submission test set-up: the /v1/send environment (DNS, sink as every MX, a verified sender
// domain) with the submission listener on, STARTTLS with a certificate of a throwaway CA, and two
// clients: nodemailer's SMTP transport (what apps use) and smtp-connection (protocol cases).
import nodemailer from "nodemailer";
import SMTPConnection from "nodemailer/lib/smtp-connection";
import { networkInterfaces } from "node:os";
import type { Config } from "../../src/config";
import type { DeliveryEnv } from "../support/delivery";
import { makeCa, type TestCa } from "../support/certs";
import { freeTcpPort } from "../support/server";
import { sendEnv } from "../send/support";

export const SERVER_NAME = "mailsvc.test";

export interface SubmissionEnv extends DeliveryEnv {
  /** STARTTLS (587-style) and implicit TLS (465-style) ports. */
  port: number;
  tlsPort: number;
  ca: TestCa;
}

export async function submissionEnv(config: Partial<Config> = {}): Promise<SubmissionEnv> {
  const ca = makeCa();
  const cert = ca.issue([SERVER_NAME]);
  const port = await freeTcpPort();
  const tlsPort = await freeTcpPort();
  const env = await sendEnv({ config: { submissionPort: port, submissionTlsPort: tlsPort, tlsCert: cert.certFile, tlsKey: cert.keyFile, ...config } });
  return { ...env, port, tlsPort, ca };
}

/** nodemailer's SMTP transport as an app configures it: STARTTLS required, the CA trusted, the secret key as the password. */
export function transport(env: SubmissionEnv, key: string, opts: { host?: string; requireTLS?: boolean; implicitTls?: boolean; authMethod?: "PLAIN" | "LOGIN" } = {}) {
  return nodemailer.createTransport({
    host: opts.host ?? "127.0.0.1",
    port: opts.implicitTls ? env.tlsPort : env.port,
    secure: !!opts.implicitTls,
    requireTLS: !opts.implicitTls && (opts.requireTLS ?? true),
    ignoreTLS: opts.requireTLS === false,
    auth: { user: "app", pass: key },
    ...(opts.authMethod ? { authMethod: opts.authMethod } : {}),
    tls: { ca: env.ca.caPem, servername: SERVER_NAME },
    connectionTimeout: 5000,
    socketTimeout: 20_000,
  });
}

export interface SmtpError {
  response: string;
  responseCode: number;
}

/** A raw client (smtp-connection) with promise methods; `tls` upgrades with STARTTLS before anything else. */
export async function connect(port: number, opts: { host?: string; tls?: boolean; ca?: string } = {}) {
  const conn = new SMTPConnection({
    host: opts.host ?? "127.0.0.1",
    port,
    secure: false,
    requireTLS: !!opts.tls,
    ignoreTLS: !opts.tls,
    tls: { ca: opts.ca, servername: SERVER_NAME },
    name: "client.example",
    connectionTimeout: 5000,
    socketTimeout: 60_000,
  } as never);
  conn.on("error", () => {}); // reported through the callbacks
  await new Promise<void>((resolve, reject) => conn.connect((err?: Error) => (err ? reject(err) : resolve())));
  const asError = (err: any): SmtpError => ({ response: String(err.response ?? err.message), responseCode: err.responseCode });
  return {
    conn,
    secure: () => !!(conn as any).secure,
    /** Resolves null on success, the refusal otherwise. */
    login: (user: string, pass: string) =>
      new Promise<SmtpError | null>((resolve) => conn.login({ user, pass } as never, (err: any) => resolve(err ? asError(err) : null))),
    send: (envelope: { from: string; to: string[]; size?: number }, raw: string | Buffer) =>
      new Promise<{ ok: true; response: string; accepted: string[]; rejected: string[]; rejectedErrors: SmtpError[] } | ({ ok: false } & SmtpError & { rejected: string[] })>((resolve) =>
        conn.send(envelope as never, raw, (err: any, info: any) =>
          resolve(
            err
              ? { ok: false, ...asError(err), rejected: err.rejected ?? [] }
              : { ok: true, response: info.response, accepted: info.accepted, rejected: info.rejected, rejectedErrors: (info.rejectedErrors ?? []).map(asError) },
          ),
        ),
      ),
    close: () => conn.quit(),
  };
}

/** A non-loopback IPv4 address of this machine (null when it has none). */
export function externalIpv4(): string | null {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return null;
}

/** A small RFC 5322 message. */
export function rawMessage(h: Record<string, string>, body = "Hello"): string {
  return Object.entries(h).map(([k, v]) => `${k}: ${v}`).join("\r\n") + "\r\n\r\n" + body + "\r\n";
}

/** A plain-text dialogue on loopback: EHLO, then each command; returns the reply to each command (last line of multi-line replies). */
export async function dialog(port: number, commands: string[]): Promise<string[]> {
  const { connect: tcp } = await import("node:net");
  const sock = tcp(port, "127.0.0.1");
  let buf = "";
  const replies: string[] = [];
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply; got: ${buf}`)), 10_000);
      const check = () => {
        const m = /(?:^|\r\n)(\d{3}) ([^\r\n]*)\r\n/.exec(buf);
        if (!m) return;
        clearTimeout(timer);
        sock.off("data", onData);
        buf = "";
        resolve(`${m[1]} ${m[2]}`);
      };
      const onData = (d: Buffer) => {
        buf += d.toString("latin1");
        check();
      };
      sock.on("data", onData);
      check();
    });
  try {
    await next(); // banner
    sock.write("EHLO client.example\r\n");
    await next();
    for (const c of commands) {
      sock.write(c + "\r\n");
      replies.push(await next());
    }
  } finally {
    sock.end("QUIT\r\n");
  }
  return replies;
}

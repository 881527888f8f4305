// A real SMTP client for talking to the inbound listener (nodemailer's smtp-connection).
import SMTPConnection from "nodemailer/lib/smtp-connection";

export interface SendResult {
  accepted: string[];
  rejected: string[];
  /** The server's final reply, or the error when the whole transaction was refused. */
  response: string;
  responseCode?: number;
  ok: boolean;
  secure: boolean;
}

export async function sendSmtp(
  port: number,
  msg: { from: string; to: string[]; raw: string | Buffer },
  opts: { requireTLS?: boolean; ignoreTLS?: boolean } = {},
): Promise<SendResult> {
  const conn = new SMTPConnection({
    host: "127.0.0.1",
    port,
    secure: false,
    ignoreTLS: opts.ignoreTLS ?? !opts.requireTLS,
    requireTLS: !!opts.requireTLS,
    tls: { rejectUnauthorized: false },
    name: "sender.example.net",
    connectionTimeout: 5000,
    socketTimeout: 10_000,
  } as any);
  conn.on("error", () => {}); // reported through the callbacks below
  try {
    await new Promise<void>((resolve, reject) => conn.connect((err?: Error) => (err ? reject(err) : resolve())));
  } catch (err) {
    conn.close();
    throw err;
  }
  const secure = !!(conn as any).secure;
  try {
    return await new Promise<SendResult>((resolve) => {
      conn.send({ from: msg.from, to: msg.to }, msg.raw, (err: any, info: any) => {
        if (err) {
          resolve({
            accepted: [],
            rejected: err.rejected ?? msg.to,
            response: String(err.response ?? err.message),
            responseCode: err.responseCode,
            ok: false,
            secure,
          });
        } else {
          resolve({ accepted: info.accepted, rejected: info.rejected, response: info.response, ok: true, secure });
        }
      });
    });
  } finally {
    conn.quit();
  }
}

/** Opens a raw connection and returns the server's EHLO reply lines (to see what it offers). */
export async function ehloLines(port: number): Promise<string[]> {
  const { connect } = await import("node:net");
  return new Promise((resolve, reject) => {
    const sock = connect(port, "127.0.0.1");
    let buf = "";
    let stage = 0;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no EHLO reply: ${buf}`));
    }, 5000);
    sock.on("data", (d) => {
      buf += d.toString();
      if (stage === 0 && /^220 .*\r\n/m.test(buf)) {
        stage = 1;
        buf = "";
        sock.write("EHLO sender.example.net\r\n");
      } else if (stage === 1 && /^250 .*\r\n/m.test(buf)) {
        clearTimeout(timer);
        sock.end("QUIT\r\n");
        resolve(buf.trim().split(/\r\n/));
      }
    });
    sock.on("error", reject);
  });
}

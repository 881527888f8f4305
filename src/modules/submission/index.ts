// SMTP submission (docs/smtp.md): apps that speak SMTP send through the /v1/send
// path. MAILSVC_SUBMISSION_PORT (STARTTLS) and MAILSVC_SUBMISSION_TLS_PORT (implicit TLS), started
// and stopped with the other listeners (module start/stop, like the inbound listener).
import { readFileSync } from "node:fs";
import { tlsFilesFor } from "../../config";
import type { AppContext } from "../../context";
import type { ModuleDef } from "../../http/module";
import { MAX_MESSAGE_BYTES, send } from "../send/service";
import { authenticate, checkSender, type SubmissionUser } from "./auth";
import { startSubmissionListener, type SubmissionListener, type SubmittedMessage } from "./listener";
import { toSendInput } from "./message";
import { replyFor } from "./replies";

/** Recipients per submitted message (452 4.5.3 beyond). */
export const MAX_SUBMISSION_RECIPIENTS = 50;

declare module "../../context" {
  interface Services {
    /** The SMTP submission listeners while they run (MAILSVC_SUBMISSION_PORT, _TLS_PORT). */
    submission: { starttls?: SubmissionListener; tls?: SubmissionListener };
  }
}

/** The running submission listeners' ports (0 when off). */
export function submissionPorts(ctx: AppContext): { starttls: number; tls: number } {
  const l = ctx.services.submission;
  return { starttls: l?.starttls?.port ?? 0, tls: l?.tls?.port ?? 0 };
}

/** One submitted message: one TRANSACTIONAL email per recipient through the send service, committed before the 250. */
export async function submit(ctx: AppContext, msg: SubmittedMessage<SubmissionUser>): Promise<string> {
  const t0 = performance.now();
  // One line per message, like the HTTP request log: "SMTP <client> <code> <ms> <project> <recipients>".
  const logLine = (code: number) => {
    if (ctx.config.logRequests) ctx.log.line(`SMTP ${msg.remoteAddress} ${code} ${(performance.now() - t0).toFixed(1)}ms ${msg.user.projectId} ${msg.rcptTo.length} rcpt`);
  };
  try {
    const { input, options } = toSendInput(msg.raw, msg);
    const r = await send(ctx, msg.user.projectId, input, options);
    logLine(250);
    const first = r.emails[0]?.email ?? "";
    return `2.0.0 Ok: queued as ${first}${r.emails.length > 1 ? ` and ${r.emails.length - 1} more` : ""}`;
  } catch (e) {
    const reply = replyFor(e);
    logLine(reply?.responseCode ?? 451);
    throw reply ?? e;
  }
}

export const submissionModule: ModuleDef = {
  name: "submission",
  async start(ctx) {
    const c = ctx.config;
    if (!(c.submissionPort > 0) && !(c.submissionTlsPort > 0)) return;
    const files = tlsFilesFor(c, "submission");
    if (c.submissionTlsPort > 0 && !files) throw new Error("MAILSVC_SUBMISSION_TLS_PORT needs MAILSVC_TLS_CERT and MAILSVC_TLS_KEY (PEM files)");
    if (!files) ctx.log.warn("submission: no MAILSVC_TLS_CERT/MAILSVC_TLS_KEY, so no STARTTLS: only clients on this machine (loopback) can authenticate");
    const tls = files ? { cert: readFileSync(files.certFile), key: readFileSync(files.keyFile) } : null;
    const started = ctx.services.submission;
    const common = {
      host: c.host,
      name: c.hostname,
      tls,
      maxBytes: MAX_MESSAGE_BYTES,
      maxRecipients: MAX_SUBMISSION_RECIPIENTS,
      log: ctx.log,
      authenticate: (a: { password: string; remoteAddress: string; secure: boolean; tlsOffered: boolean }) => authenticate(ctx, a),
      mailFrom: (user: SubmissionUser) => checkSender(ctx, user),
      submit: (msg: SubmittedMessage<SubmissionUser>) => submit(ctx, msg),
    };
    if (c.submissionPort > 0) started.starttls = await startSubmissionListener({ ...common, port: c.submissionPort, implicitTls: false });
    if (c.submissionTlsPort > 0) started.tls = await startSubmissionListener({ ...common, port: c.submissionTlsPort, implicitTls: true });
    const ports = submissionPorts(ctx);
    ctx.log.info("SMTP submission listening", { port: ports.starttls || undefined, tlsPort: ports.tls || undefined, certificate: !!tls });
  },
  async stop(ctx) {
    const l = ctx.services.submission;
    const closing = [l.starttls?.close(), l.tls?.close()];
    l.starttls = l.tls = undefined;
    await Promise.all(closing);
  },
};

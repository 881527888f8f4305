import type { SMTPServer } from "smtp-server";

/** A listening smtp-server: the port it got (0 asks for any) and how to close it. */
export interface SmtpListener {
  port: number;
  close(): Promise<void>;
}

/**
 * Starts an smtp-server on host:port; a listen error (port taken, no permission) rejects instead of
 * crashing the process. Shared by inbound SMTP (mail/inbound) and SMTP submission (modules/submission).
 */
export async function listenSmtp(server: SMTPServer, port: number, host: string): Promise<SmtpListener> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.server.once("error", onError);
    server.listen(port, host, () => {
      server.server.off("error", onError);
      resolve();
    });
  });
  const addr = server.server.address();
  return {
    port: typeof addr === "object" && addr ? addr.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// The benchmark's SMTP sink in its own process: smtp-server (STARTTLS offered, like a real MX),
// counting messages per recipient without parsing them. Its counters are served over HTTP.
//   PORT (http) and SMTP_PORT from the environment; prints "ready <smtp port>" when listening.
import { SMTPServer } from "smtp-server";

let count = 0;
let bytes = 0;
let firstAt = 0;
let lastAt = 0;
const perRecipient = new Map<string, number>();

const server = new SMTPServer({
  disabledCommands: process.env.SINK_NO_TLS ? ["AUTH", "STARTTLS"] : ["AUTH"],
  authOptional: true,
  logger: false,
  size: 60 * 1024 * 1024,
  onData(stream, session, cb) {
    let n = 0;
    stream.on("data", (c: Buffer) => (n += c.length));
    stream.on("end", () => {
      const now = Date.now();
      if (!firstAt) firstAt = now;
      lastAt = now;
      count++;
      bytes += n;
      for (const r of session.envelope.rcptTo) perRecipient.set(r.address, (perRecipient.get(r.address) ?? 0) + 1);
      cb(null, "2.0.0 Ok: queued");
    });
  },
});
server.on("error", () => {});
await new Promise<void>((r) => server.listen(Number(process.env.SMTP_PORT ?? 0), "127.0.0.1", () => r()));
const smtpPort = (server.server.address() as { port: number }).port;

Bun.serve({
  port: Number(process.env.PORT),
  hostname: "127.0.0.1",
  fetch(req) {
    const url = new URL(req.url);
    if (url.pathname === "/reset") {
      count = bytes = firstAt = lastAt = 0;
      perRecipient.clear();
      return Response.json({ ok: true });
    }
    let duplicates = 0;
    for (const n of perRecipient.values()) if (n > 1) duplicates += n - 1;
    return Response.json({ smtpPort, count, bytes, firstAt, lastAt, unique: perRecipient.size, duplicates });
  },
});
console.log(`ready ${smtpPort}`);

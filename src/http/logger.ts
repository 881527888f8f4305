/**
 * Line logger with a small write buffer: one request line per request must not cost a syscall each
 * under load. Flushed every 100 ms, at 64 KB, and on close.
 */
export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** Raw pre-formatted line (request log). */
  line(text: string): void;
  /** One structured JSON line (delivery attempts etc.). */
  json(obj: Record<string, unknown>): void;
  flush(): void;
  close(): void;
}

export function createLogger(opts: { silent?: boolean; write?: (s: string) => void } = {}): Logger {
  const write = opts.write ?? ((s: string) => process.stdout.write(s));
  let buf: string[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    if (!buf.length) return;
    const out = buf.join("");
    buf = [];
    size = 0;
    write(out);
  };
  const push = (s: string) => {
    if (opts.silent) return;
    buf.push(s + "\n");
    size += s.length + 1;
    if (size > 65536) flush();
    else if (!timer) {
      timer = setTimeout(flush, 100);
      (timer as any).unref?.();
    }
  };
  const fmt = (level: string, msg: string, fields?: Record<string, unknown>) =>
    JSON.stringify({ t: new Date().toISOString(), level, msg, ...fields });
  return {
    info: (m, f) => push(fmt("info", m, f)),
    warn: (m, f) => push(fmt("warn", m, f)),
    error: (m, f) => push(fmt("error", m, f)),
    line: push,
    json: (o) => push(JSON.stringify({ t: new Date().toISOString(), ...o })),
    flush,
    close: flush,
  };
}

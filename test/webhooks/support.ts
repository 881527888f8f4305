// A local HTTP receiver for outbound webhooks: records every request, answers what the test says.
import { Webhook } from "standardwebhooks";
import { waitFor } from "../support/wait";

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  json: any;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Status codes to answer next, in order (then 200). */
  answers: number[];
  /** Milliseconds to wait before answering. */
  delayMs: number;
  /** The requests received at `path`. */
  at(path: string): Received[];
  /** Resolves when `n` requests have arrived (optionally matching), or throws after timeoutMs. */
  waitFor(n: number, match?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): void;
}

/** `port`: a fixed one (a receiver that goes down and comes back on the same address); 0 picks a free one. */
export function startReceiver(port = 0): Receiver {
  const received: Received[] = [];
  const state = { answers: [] as number[], delayMs: 0 };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(req) {
      const body = await req.text();
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      let json: any = null;
      try {
        json = JSON.parse(body);
      } catch {}
      received.push({ path: new URL(req.url).pathname, headers, body, json });
      if (state.delayMs) await Bun.sleep(state.delayMs);
      if (new URL(req.url).pathname.startsWith("/hang")) await Bun.sleep(60_000); // a dead endpoint
      const status = state.answers.shift() ?? 200;
      return new Response(status >= 400 ? "nope" : "ok", { status });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    received,
    get answers() {
      return state.answers;
    },
    set answers(a: number[]) {
      state.answers = a;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    at: (path: string) => received.filter((r) => r.path === path),
    waitFor(n, match = () => true, timeoutMs = 8000) {
      return waitFor(() => received.filter(match), { until: (got) => got.length >= n, timeoutMs, what: `${n} webhook requests` });
    },
    close: () => server.stop(true),
  } as Receiver;
}

/** Verifies a received request with the standardwebhooks package (throws when it does not verify). */
export function verify(secret: string, r: Received): unknown {
  return new Webhook(secret).verify(r.body, {
    "webhook-id": r.headers["webhook-id"]!,
    "webhook-timestamp": r.headers["webhook-timestamp"]!,
    "webhook-signature": r.headers["webhook-signature"]!,
  });
}

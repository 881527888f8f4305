// The long hostile run (issue 12): every route of a real `mailsvc serve` child process gets bodies
// up to 50 MB (declared and chunked), JSON nested 10,000 deep, and fast-check's malformed requests,
// from many concurrent clients. Prints the server's peak RSS, latency percentiles, 5xx count, and
// the latency of a mixed valid/invalid load at 200 connections afterwards. Requests with 50 MB bodies
// go over raw sockets and are timed to the first byte of the answer (see rawLarge).
//
//   bun scripts/fuzz-hostile.ts [--seconds 60] [--concurrency 16]
import fc from "fast-check";
import { join } from "node:path";
import { loadConfig } from "../src/config";
import { buildApp, createContext } from "../src/server";
import { authChoice, bodyText, contentType, fillPath, fuzzableRoutes, isDestructive, paramValue, queryString } from "../test/hostile/routes";
import { rssMb, startMailsvc, tempDir } from "./bench/lib";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg("seconds", 60);
const CONCURRENCY = arg("concurrency", 16);

// The route table, read from an app assembled on a throwaway database (nothing listens).
const scratch = await createContext(loadConfig({}, {}, { db: join(tempDir(), "routes.db"), logRequests: false }));
const routes = fuzzableRoutes((buildApp(scratch) as unknown as { routes: { method: string; path: string }[] }).routes);
scratch.store.close();

const srv = await startMailsvc();
const api = async (path: string, init: RequestInit = {}) => fetch(srv.url + path, init);
const email = `fuzz${Date.now()}@example.com`;
const signup = await api("/auth/signup", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password: "correct horse battery" }) });
const cookie = (signup.headers.get("set-cookie") ?? "").split(";")[0]!;
const project = (await (await api("/users/@me/projects", { method: "POST", headers: { "content-type": "application/json", cookie }, body: JSON.stringify({ name: "fuzz" }) })).json()) as {
  id: string;
  public: string;
  secret: string;
};

let peakRss = rssMb(srv.pid);
const sampler = setInterval(() => {
  try {
    peakRss = Math.max(peakRss, rssMb(srv.pid));
  } catch {}
}, 50);

const FIFTY_MB = new Uint8Array(50 * 1024 * 1024).fill(0x61);
const DEEP = "[".repeat(10_000) + "]".repeat(10_000);
const DEEP_OBJ = '{"a":'.repeat(10_000) + "0" + "}".repeat(10_000);

function chunked50(): ReadableStream<Uint8Array> {
  const chunk = FIFTY_MB.subarray(0, 256 * 1024);
  let sent = 0;
  return new ReadableStream({
    pull(c) {
      if (sent >= FIFTY_MB.byteLength) return c.close();
      sent += chunk.byteLength;
      c.enqueue(chunk);
    },
  });
}

type Req = { method: string; path: string; headers: Record<string, string>; body?: BodyInit; kind: string; route?: string };

function authHeaders(auth: string): Record<string, string> {
  if (auth === "secret") return { authorization: `Bearer ${project.secret}` };
  if (auth === "public") return { authorization: `Bearer ${project.public}` };
  if (auth === "garbage") return { authorization: "Bearer sk_nope" };
  if (auth === "session") return { cookie, "x-project-id": project.id };
  return {};
}

const sample = <T>(a: fc.Arbitrary<T>) => fc.sample(a, 1)[0]!;

function nextRequest(): Req {
  const route = routes[Math.floor(Math.random() * routes.length)]!;
  const params = fc.sample(paramValue, 2).map((p) => (isDestructive(route) && p === project.id ? "x" : p));
  const q = sample(queryString);
  const path = fillPath(route.path, params) + (q ? `?${q}` : "");
  const hasBody = route.method !== "GET" && route.method !== "DELETE";
  const auth = sample(authChoice);
  const headers = authHeaders(auth);
  // FUZZ_ONLY_SMALL=1: no 50 MB or deep bodies; FUZZ_ONLY_LARGE=1: only 50 MB bodies (to tell where memory goes).
  const roll = process.env.FUZZ_ONLY_SMALL ? 1 : process.env.FUZZ_ONLY_LARGE ? Math.random() * 0.25 : Math.random();
  if (hasBody && roll < 0.15) return { method: route.method, path, headers: { ...headers, "content-type": "application/json" }, body: FIFTY_MB, kind: "50MB declared", route: `${route.method} ${route.path}` };
  if (hasBody && roll < 0.25) return { method: route.method, path, headers: { ...headers, "content-type": "application/json" }, body: chunked50(), kind: "50MB chunked", route: `${route.method} ${route.path}` };
  if (hasBody && roll < 0.45) return { method: route.method, path, headers: { ...headers, "content-type": "application/json" }, body: Math.random() < 0.5 ? DEEP : DEEP_OBJ, kind: "depth 10000" };
  const type = sample(contentType);
  return { method: route.method, path, headers: { ...headers, ...(type ? { "content-type": type } : {}) }, body: hasBody ? sample(bodyText) : undefined, kind: "fuzz" };
}

interface Stat {
  ms: number;
  status: number;
  kind: string;
  /** The route pattern (for the slow-request breakdown). */
  path?: string;
}
const stats: Stat[] = [];
let clientErrors = 0;
const fivexx: string[] = [];

/**
 * A 50 MB request over a raw socket: the head, then the body in 256 KB writes, while listening for the
 * answer; timed to the answer's first byte (fetch would only resolve after its whole upload, timing
 * the client, not the server). Stops sending once answered; a socket the server closed mid-upload
 * after answering counts as answered.
 */
function rawLarge(r: Req): Promise<{ ms: number; status: number }> {
  const url = new URL(srv.url + r.path);
  const chunked = r.kind === "50MB chunked";
  const head =
    `${r.method} ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n` +
    Object.entries(r.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") +
    (chunked ? "Transfer-Encoding: chunked\r\n" : `Content-Length: ${FIFTY_MB.byteLength}\r\n`) +
    "Connection: close\r\n\r\n";
  const piece = FIFTY_MB.subarray(0, 256 * 1024);
  const framed = chunked ? Buffer.concat([Buffer.from(piece.byteLength.toString(16) + "\r\n"), piece, Buffer.from("\r\n")]) : Buffer.from(piece);
  return new Promise((resolve) => {
    const t0 = performance.now();
    let answered: { ms: number; status: number } | null = null;
    let sent = 0;
    let text = "";
    const finish = (x: { ms: number; status: number }) => {
      answered ??= x;
    };
    void Bun.connect({
      hostname: url.hostname,
      port: Number(url.port),
      socket: {
        open(sock) {
          sock.write(head);
          let rest: Buffer | null = null;
          let ended = false;
          const pump = () => {
            if (rest) {
              const n = sock.write(rest);
              if (n < rest.byteLength) return void (rest = rest.subarray(n)); // wait for drain
              rest = null;
            }
            while (!answered && sent < FIFTY_MB.byteLength) {
              const n = sock.write(framed);
              sent += piece.byteLength;
              if (n < framed.byteLength) return void (rest = framed.subarray(n));
            }
            if (!answered && chunked && !ended) {
              ended = true;
              sock.write("0\r\n\r\n");
            }
          };
          (sock as unknown as { pump: () => void }).pump = pump;
          pump();
        },
        drain(sock) {
          (sock as unknown as { pump: () => void }).pump();
        },
        data(sock, buf) {
          text += buf.toString();
          const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
          if (m) {
            finish({ ms: performance.now() - t0, status: Number(m[1]) });
            sock.end();
          }
        },
        close() {
          resolve(answered ?? { ms: performance.now() - t0, status: 0 });
        },
        error() {
          resolve(answered ?? { ms: performance.now() - t0, status: 0 });
        },
      },
    }).catch(() => resolve({ ms: performance.now() - t0, status: 0 }));
  });
}

async function one(r: Req): Promise<void> {
  const t0 = performance.now();
  if (r.kind.startsWith("50MB")) {
    const { ms, status } = await rawLarge(r);
    stats.push({ ms, status, kind: r.kind, path: r.route });
    if (status === 0) clientErrors++;
    if (status >= 500) fivexx.push(`${r.method} ${r.path} ${r.kind} -> ${status}`);
    return;
  }
  try {
    const res = await fetch(srv.url + r.path, { method: r.method, headers: r.headers, body: r.body, redirect: "manual", // @ts-expect-error streaming body
      duplex: "half" });
    const ms = performance.now() - t0;
    const answer = await res.text();
    stats.push({ ms, status: res.status, kind: r.kind });
    if (res.status >= 500) {
      const sent = typeof r.body === "string" ? r.body.slice(0, 300) : r.kind;
      fivexx.push(`${r.method} ${r.path} ${r.kind} -> ${res.status} ${answer.slice(0, 300)}\n    headers ${JSON.stringify(r.headers)}\n    body ${JSON.stringify(sent)}`);
    }
  } catch {
    // The server answered 413 and closed while the client was still uploading: counted apart.
    stats.push({ ms: performance.now() - t0, status: 0, kind: r.kind });
    clientErrors++;
  }
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

console.log(`hostile run: ${routes.length} routes, ${CONCURRENCY} clients, ${SECONDS} s; server RSS at start ${peakRss.toFixed(0)} MB`);
const end = Date.now() + SECONDS * 1000;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < end) await one(nextRequest());
  }),
);
const rssAfterHostile = rssMb(srv.pid);
const lat = stats.filter((s) => s.status !== 0).map((s) => s.ms);
console.log(`requests: ${stats.length} (${clientErrors} closed by the server mid-upload), 5xx: ${fivexx.length}`);
for (const kind of ["50MB declared", "50MB chunked", "depth 10000", "fuzz"]) {
  const k = stats.filter((s) => s.kind === kind && s.status !== 0).map((s) => s.ms);
  const codes: Record<number, number> = {};
  for (const s of stats.filter((s) => s.kind === kind)) codes[s.status] = (codes[s.status] ?? 0) + 1;
  console.log(`  ${kind.padEnd(14)} n=${String(k.length).padStart(6)} p50 ${pct(k, 50).toFixed(1)} ms  p99 ${pct(k, 99).toFixed(1)} ms  max ${pct(k, 100).toFixed(1)} ms  statuses ${JSON.stringify(codes)}`);
}
const slow = stats.filter((s) => s.ms > 500);
if (slow.length) {
  const by: Record<string, number> = {};
  for (const s of slow) by[`${s.kind} ${s.status} ${s.path ?? ""}`] = (by[`${s.kind} ${s.status} ${s.path ?? ""}`] ?? 0) + 1;
  console.log("  over 500 ms: " + Object.entries(by).sort((a, b) => b[1] - a[1]).slice(0, 8).map(([k, n]) => `${k} x${n}`).join("; "));
}
console.log(`all answered: p50 ${pct(lat, 50).toFixed(1)} ms, p99 ${pct(lat, 99).toFixed(1)} ms, max ${pct(lat, 100).toFixed(1)} ms, over 500 ms: ${lat.filter((x) => x > 500).length}`);
console.log(`server RSS: peak ${peakRss.toFixed(0)} MB, after the hostile run ${rssAfterHostile.toFixed(0)} MB (bar: under 300 MB)`);
if (fivexx.length) console.log("5xx:\n  " + fivexx.slice(0, 20).join("\n  "));

// Mixed load afterwards: 200 connections, valid (list contacts, track) and invalid (malformed, deep) requests.
const mixed: number[] = [];
const mixedEnd = Date.now() + 10_000;
const valid = (i: number): Req =>
  i % 2
    ? { method: "GET", path: "/contacts?limit=20", headers: authHeaders("secret"), kind: "valid" }
    : { method: "POST", path: "/v1/track", headers: { ...authHeaders("public"), "content-type": "application/json" }, body: JSON.stringify({ email: `m${i}@example.com`, event: "visit" }), kind: "valid" };
const invalid = (i: number): Req =>
  i % 2
    ? { method: "POST", path: "/contacts", headers: { ...authHeaders("secret"), "content-type": "application/json" }, body: '{"email":', kind: "invalid" }
    : { method: "POST", path: "/v1/track", headers: { ...authHeaders("public"), "content-type": "application/json" }, body: DEEP, kind: "invalid" };
let n = 0;
await Promise.all(
  Array.from({ length: 200 }, async () => {
    while (Date.now() < mixedEnd) {
      const i = n++;
      const r = i % 4 === 3 ? invalid(i) : valid(i);
      const t0 = performance.now();
      try {
        const res = await fetch(srv.url + r.path, { method: r.method, headers: r.headers, body: r.body });
        await res.arrayBuffer();
        mixed.push(performance.now() - t0);
      } catch {
        clientErrors++;
      }
    }
  }),
);
console.log(`mixed load after the hostile run (200 connections, 3/4 valid): ${mixed.length} requests, p50 ${pct(mixed, 50).toFixed(1)} ms, p99 ${pct(mixed, 99).toFixed(1)} ms`);
console.log(`server RSS: peak ${peakRss.toFixed(0)} MB overall, now ${rssMb(srv.pid).toFixed(0)} MB`);
clearInterval(sampler);
await srv.kill();
process.exit(fivexx.length ? 1 : 0);

// The long hostile run (issues 12 and 37): every operation of a real `mailsvc serve` child process, read
// from its own GET /openapi.json, gets bodies up to 50 MB (declared and chunked, GETs included), JSON
// nested 10,000 deep, path-segment attacks sent as written (`..`, `%2e%2e`, 5,000-character ids), every
// content type it does not expect, a value of the wrong JSON type at every field, and fast-check's
// malformed requests, from many concurrent clients. Every answer is read to its end: one cut short or
// missing counts. Prints the server's peak RSS, latency percentiles, 5xx and incomplete counts, and the
// latency of a mixed valid/invalid load at 200 connections afterwards. Requests with 50 MB bodies go over
// raw sockets and are timed to the first byte of the answer (see rawLarge).
//
//   bun scripts/fuzz-hostile.ts [--seconds 60] [--concurrency 16]
//
// Exits 1 on a 5xx, an incomplete answer, or a peak RSS of 300 MB or more.
import fc from "fast-check";
import {
  attackPath,
  authChoice,
  authFor,
  bodiesFor,
  bodyText,
  contentType,
  isDestructiveOp,
  operationsOf,
  PATH_ATTACKS,
  paramValue,
  queryString,
  sampleOf,
  unexpectedContentTypes,
  wrongTypeBodies,
  type Operation,
} from "../test/hostile/routes";
import { parseAnswer, rawHttp } from "../test/hostile/support";
import { rssMb, rssParts, smapsTop, startMailsvc } from "./bench/lib";

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const SECONDS = arg("seconds", 60);
const CONCURRENCY = arg("concurrency", 16);

const RSS_BAR_MB = 300;

const srv = await startMailsvc();
// Every operation, from the server's own document (a new route is fuzzed without being listed anywhere).
const ops: Operation[] = operationsOf((await (await fetch(srv.url + "/openapi.json")).json()) as Parameters<typeof operationsOf>[0]);
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

type Req = { method: string; path: string; headers: Record<string, string>; body?: BodyInit; kind: string; route?: string; raw?: boolean };

function authHeaders(auth: string): Record<string, string> {
  if (auth === "secret") return { authorization: `Bearer ${project.secret}` };
  if (auth === "public") return { authorization: `Bearer ${project.public}` };
  if (auth === "garbage") return { authorization: "Bearer sk_nope" };
  if (auth === "session") return { cookie, "x-project-id": project.id };
  return {};
}

const creds = () => ({ secretKey: project.secret, publicKey: project.public, cookie, projectId: project.id });
const sample = <T>(a: fc.Arbitrary<T>) => fc.sample(a, 1)[0]!;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)]!;
const NO_SUCH = "00000000-0000-4000-8000-000000000000";
/** Just under the default body limit (1 MB) once quoted inside a small JSON body. */
const MEGABYTE_STRING = "x".repeat(1_000_000);
/** A parameter's value: the project's id where one is asked for (never for a destructive operation), else an id that does not exist. */
const plausible = (op: Operation) => (param: string) =>
  (param === "projectId" || (param === "id" && op.path.includes("/projects/"))) && !isDestructiveOp(op) && op.method !== "DELETE" ? project.id : NO_SUCH;

/** One of the systematic attacks (as in test/hostile/fuzz.test.ts) on a random operation. */
function systematic(op: Operation, route: string): Req {
  const headers = authFor(op, creds());
  const hasBody = op.method !== "GET";
  const json = hasBody ? JSON.stringify(sampleOf(op.jsonSchema ?? { type: "object" })) : undefined;
  const path = attackPath(op, "", "", plausible(op));
  const roll = Math.random();
  if (op.params.length && roll < 0.4) {
    const p = attackPath(op, pick(PATH_ATTACKS), pick(op.params), plausible(op));
    return { method: op.method, path: p, headers: { ...headers, ...(json ? { "content-type": "application/json" } : {}) }, body: json, kind: "path attack", route, raw: true };
  }
  if (hasBody && op.jsonSchema?.properties && roll < 0.5) {
    // A megabyte string where the schema has a field (an object, a number, a string…): the fuzzer's
    // `data` string on /templates/preview was spread into a million keys (~90 MB a request).
    const field = pick(Object.keys(op.jsonSchema.properties));
    const body = { ...(sampleOf(op.jsonSchema) as object), [field]: MEGABYTE_STRING };
    return { method: op.method, path, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(body), kind: "1 MB string", route };
  }
  if (hasBody && op.jsonSchema && roll < 0.75) {
    const cases = wrongTypeBodies(op.jsonSchema);
    if (cases.length) return { method: op.method, path, headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(pick(cases)[1]), kind: "wrong type", route };
  }
  if (hasBody) {
    const type = pick(unexpectedContentTypes(op));
    return { method: op.method, path, headers: { ...headers, ...(type ? { "content-type": type } : {}) }, body: pick(bodiesFor(op, type)), kind: "content type", route };
  }
  return { method: op.method, path, headers, kind: "path attack", route, raw: true };
}

function nextRequest(): Req {
  const op = pick(ops);
  const route = `${op.method} ${op.path}`;
  const params = fc.sample(paramValue, 2).map((p) => (isDestructiveOp(op) && p === project.id ? "x" : p));
  const q = sample(queryString);
  let i = 0;
  const path = op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(params[i++ % params.length] ?? "x").replace(/%25/g, "%")) + (q ? `?${q}` : "");
  const hasBody = op.method !== "GET" && op.method !== "DELETE";
  const auth = sample(authChoice);
  const headers = authHeaders(auth);
  // FUZZ_ONLY_SMALL=1: no 50 MB or deep bodies; FUZZ_ONLY_LARGE=1: only 50 MB bodies (to tell where memory goes).
  const roll = process.env.FUZZ_ONLY_SMALL ? 1 : process.env.FUZZ_ONLY_LARGE ? Math.random() * 0.25 : Math.random();
  // 50 MB to any operation, GETs included (their answer may be large: /openapi.json, the Swagger bundle).
  if (roll < 0.15) return { method: op.method, path, headers: { ...headers, "content-type": "application/json" }, body: FIFTY_MB, kind: "50MB declared", route };
  if (roll < 0.25) return { method: op.method, path, headers: { ...headers, "content-type": "application/json" }, body: chunked50(), kind: "50MB chunked", route };
  if (hasBody && roll < 0.35) return { method: op.method, path, headers: { ...headers, "content-type": "application/json" }, body: Math.random() < 0.5 ? DEEP : DEEP_OBJ, kind: "depth 10000", route };
  if (roll < 0.7) return systematic(op, route);
  const type = sample(contentType);
  return { method: op.method, path, headers: { ...headers, ...(type ? { "content-type": type } : {}) }, body: hasBody ? sample(bodyText) : undefined, kind: "fuzz", route };
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
 * the client, not the server). Stops sending once answered, then reads the answer to its end (the
 * request says `Connection: close`): `complete` tells whether all of it arrived.
 */
function rawLarge(r: Req): Promise<{ ms: number; status: number; complete: boolean }> {
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
    let firstByteMs: number | null = null;
    let sent = 0;
    const got: Buffer[] = [];
    let done = false;
    const settle = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const a = parseAnswer(Buffer.concat(got));
      resolve({ ms: firstByteMs ?? performance.now() - t0, status: a.status, complete: a.status > 0 && a.complete });
    };
    let socket: { end(): void } | null = null;
    const timer = setTimeout(() => {
      socket?.end();
      settle();
    }, 60_000);
    void Bun.connect({
      hostname: url.hostname,
      port: Number(url.port),
      socket: {
        open(sock) {
          socket = sock;
          sock.write(head);
          let rest: Buffer | null = null;
          let ended = false;
          const pump = () => {
            if (rest) {
              const n = sock.write(rest);
              if (n < rest.byteLength) return void (rest = rest.subarray(n)); // wait for drain
              rest = null;
            }
            while (firstByteMs === null && sent < FIFTY_MB.byteLength) {
              const n = sock.write(framed);
              sent += piece.byteLength;
              if (n < framed.byteLength) return void (rest = framed.subarray(n));
            }
            if (firstByteMs === null && chunked && !ended) {
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
        data(_sock, buf) {
          firstByteMs ??= performance.now() - t0;
          got.push(Buffer.from(buf));
        },
        close: settle,
        error: settle,
      },
    }).catch(settle);
  });
}

/** Requests whose answer did not arrive whole (or at all). */
const incomplete: string[] = [];

async function one(r: Req): Promise<void> {
  const t0 = performance.now();
  const where = `${r.method} ${r.path.slice(0, 120)} [${r.headers["content-type"] ?? ""}] ${r.kind}`;
  if (r.kind.startsWith("50MB")) {
    const { ms, status, complete } = await rawLarge(r);
    stats.push({ ms, status, kind: r.kind, path: r.route });
    if (!complete) incomplete.push(`${where} -> ${status || "no answer"}`);
    if (status >= 500) fivexx.push(`${where} -> ${status}`);
    return;
  }
  if (r.raw) {
    const a = await rawHttp(srv.url, { method: r.method, path: r.path, headers: r.headers, body: typeof r.body === "string" ? r.body : undefined }, 60_000);
    stats.push({ ms: performance.now() - t0, status: a.status, kind: r.kind, path: r.route });
    if (a.status === 0 || !a.complete) incomplete.push(`${where} -> ${a.status || "no answer"} ${a.error ?? ""}`);
    if (a.status >= 500) fivexx.push(`${where} -> ${a.status} ${a.body.slice(0, 300)}`);
    return;
  }
  try {
    const res = await fetch(srv.url + r.path, { method: r.method, headers: r.headers, body: r.body, redirect: "manual", // @ts-expect-error streaming body
      duplex: "half" });
    const ms = performance.now() - t0;
    const answer = await res.text();
    stats.push({ ms, status: res.status, kind: r.kind, path: r.route });
    if (res.status >= 500) {
      const sent = typeof r.body === "string" ? r.body.slice(0, 300) : r.kind;
      fivexx.push(`${where} -> ${res.status} ${answer.slice(0, 300)}\n    headers ${JSON.stringify(r.headers)}\n    body ${JSON.stringify(sent)}`);
    }
  } catch (e) {
    stats.push({ ms: performance.now() - t0, status: 0, kind: r.kind, path: r.route });
    clientErrors++;
    incomplete.push(`${where} -> ${String(e).slice(0, 200)}`);
  }
}

const pct = (xs: number[], p: number) => {
  if (!xs.length) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

console.log(`hostile run: ${ops.length} operations (from /openapi.json), ${CONCURRENCY} clients, ${SECONDS} s; server RSS at start ${peakRss.toFixed(0)} MB`);
const end = Date.now() + SECONDS * 1000;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() < end) await one(nextRequest());
  }),
);
const rssAfterHostile = rssMb(srv.pid);
const lat = stats.filter((s) => s.status !== 0).map((s) => s.ms);
console.log(`requests: ${stats.length}, 5xx: ${fivexx.length}, answers incomplete or missing: ${incomplete.length}`);
for (const kind of ["50MB declared", "50MB chunked", "depth 10000", "path attack", "1 MB string", "wrong type", "content type", "fuzz"]) {
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
console.log(`server RSS: peak ${peakRss.toFixed(0)} MB, after the hostile run ${rssAfterHostile.toFixed(0)} MB (bar: under ${RSS_BAR_MB} MB)`);
if (process.env.FUZZ_SMAPS) console.log(`  resident: ${JSON.stringify(rssParts(srv.pid))} MB\n    ${smapsTop(srv.pid, 8)}`);
const operationsHit = new Set(stats.map((s) => s.path).filter(Boolean)).size;
console.log(`operations reached: ${operationsHit} of ${ops.length}`);
if (fivexx.length) console.log("5xx:\n  " + fivexx.slice(0, 20).join("\n  "));
if (incomplete.length) console.log("incomplete:\n  " + incomplete.slice(0, 20).join("\n  "));

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
      } catch (e) {
        clientErrors++;
        incomplete.push(`mixed ${r.method} ${r.path} -> ${String(e).slice(0, 200)}`);
      }
    }
  }),
);
console.log(`mixed load after the hostile run (200 connections, 3/4 valid): ${mixed.length} requests, p50 ${pct(mixed, 50).toFixed(1)} ms, p99 ${pct(mixed, 99).toFixed(1)} ms`);
console.log(`server RSS: peak ${peakRss.toFixed(0)} MB overall, now ${rssMb(srv.pid).toFixed(0)} MB (bar: under ${RSS_BAR_MB} MB)`);
console.log(`answers incomplete or missing, in all: ${incomplete.length}`);
clearInterval(sampler);
await srv.kill();
process.exit(fivexx.length || incomplete.length || peakRss >= RSS_BAR_MB ? 1 : 0);

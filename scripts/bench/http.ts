// The authenticated HTTP path against a bare Elysia route, same machine, same load generator, same run.
// Bar (issue 2): the keyed endpoint reaches at least 70% of the bare route's rate.
//   bun scripts/bench/http.ts [seconds]
import { fmt, load, startMailsvc, startScript } from "./lib";
import { makeApi, createAccount } from "../../test/support/server";

const seconds = Number(process.argv[2] ?? 10);

const bare = await startScript(`
import { Elysia } from "elysia";
new Elysia().get("/", () => ({ ok: true })).listen({ port: Number(process.env.PORT), hostname: "127.0.0.1" });
`);
const svc = await startMailsvc();
const acc = await createAccount(makeApi(svc.url), "bench");

// Warm up both, then measure one after the other with identical settings.
await load({ url: bare.url + "/", seconds: 2 });
await load({ url: svc.url + "/v1/key", seconds: 2, headers: { authorization: `Bearer ${acc.secretKey}` } });
const ceiling = await load({ url: bare.url + "/", seconds });
const keyed = await load({ url: svc.url + "/v1/key", seconds, headers: { authorization: `Bearer ${acc.secretKey}` } });
await bare.kill();
await svc.kill();

const ratio = keyed.rps / ceiling.rps;
console.log(`bare Elysia GET /            ${fmt(ceiling.rps)} req/s  p99 ${ceiling.p99} ms   (ceiling)`);
console.log(`mailsvc GET /v1/key (sk key) ${fmt(keyed.rps)} req/s  p99 ${keyed.p99} ms   non-2xx ${keyed.non2xx}`);
console.log(`ratio ${(ratio * 100).toFixed(1)}% (bar: >= 70%) ${ratio >= 0.7 ? "PASS" : "FAIL"}`);

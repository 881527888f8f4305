// WEBHOOK steps against a real local HTTP server: headers, body, Standard Webhooks signature,
// 4xx and 5xx (retried 3 times, then FAILED), and the SSRF guard without MAILSVC_ALLOW_PRIVATE_WEBHOOKS.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";
import { chain, contact, execution, must, start, waitForExecution, type Ctx } from "./support";

interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

let dns: TestDns;
let srv: TestServer;
let acct: Account;
let c: Ctx;
let recv: ReturnType<typeof Bun.serve>;
let base: string;
const received: Received[] = [];
let secret: string;

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server], allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000, 3000, 60_000] } });
  acct = await createAccount(srv.api);
  c = { api: srv.api, key: acct.secretKey };
  recv = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      received.push({ method: req.method, path: url.pathname + url.search, headers: Object.fromEntries(req.headers), body: await req.text() });
      if (url.pathname === "/ok") return new Response("thanks " + "x".repeat(2000), { status: 200 });
      if (url.pathname === "/bad") return new Response("no such thing", { status: 404 });
      if (url.pathname === "/err") return new Response("oops", { status: 503 });
      if (url.pathname === "/hop") return Response.redirect(`${base}/ok`, 302);
      return new Response("?", { status: 418 });
    },
  });
  base = `http://127.0.0.1:${recv.port}`;
  const projects = await must(srv.api("/users/@me/projects", { cookie: acct.cookie }), 200);
  secret = projects.find((p: any) => p.id === acct.projectId).webhookSecret;
}, 30_000);
afterAll(async () => {
  recv?.stop(true);
  await srv?.close();
  await dns?.close();
});

const since = (n: number) => received.slice(n);

describe("WEBHOOK", () => {
  test("the project has a whsec_ webhookSecret", () => {
    expect(secret).toStartWith("whsec_");
  });

  test("default body, rendered url and headers, Standard Webhooks signature; output keeps status and 1 KB", async () => {
    const wf = await chain(c, [["WEBHOOK", { url: `${base}/ok?who={{email}}`, headers: { "X-Plan": "{{plan}} / {{workflow.source}}" } }]]);
    const ct = await contact(c, "hook@example.com", { plan: "pro" });
    const n = received.length;
    const ex = await start(c, wf.id, { contactId: ct.id, context: { source: "api" } });
    const done = await waitForExecution(c, wf.id, ex.id, "COMPLETED");
    const [r] = since(n);
    expect(r!.method).toBe("POST");
    expect(r!.path).toBe("/ok?who=hook@example.com");
    expect(r!.headers["x-plan"]).toBe("pro / api");
    expect(r!.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(r!.body)).toEqual({
      contact: { id: ct.id, email: "hook@example.com", subscribed: true, data: { plan: "pro" } },
      workflow: { id: wf.id, name: "Welcome" },
      execution: { id: ex.id },
      event: null,
    });
    // Signed with the project's secret.
    expect(() => new Webhook(secret).verify(r!.body, { "webhook-id": r!.headers["webhook-id"]!, "webhook-timestamp": r!.headers["webhook-timestamp"]!, "webhook-signature": r!.headers["webhook-signature"]! })).not.toThrow();
    expect(() => new Webhook("whsec_" + Buffer.from("another secret of 32 bytes......").toString("base64")).verify(r!.body, r!.headers as never)).toThrow();
    const out = done.steps[0].output;
    expect(out.status).toBe(200);
    expect(out.body.length).toBeLessThanOrEqual(1024);
    expect(out.body).toStartWith("thanks ");
  });

  test("custom JSON body with variables, PUT; redirects are followed", async () => {
    const wf = await chain(c, [["WEBHOOK", { url: `${base}/hop`, method: "PUT", body: { hello: "{{email}}", nested: { plan: "{{plan}}" }, n: 1 } }]]);
    const ct = await contact(c, "body@example.com", { plan: 'q"uote' });
    const n = received.length;
    const ex = await start(c, wf.id, { contactId: ct.id });
    await waitForExecution(c, wf.id, ex.id, "COMPLETED");
    const got = since(n);
    expect(got.map((r) => r.path)).toEqual(["/hop", "/ok"]);
    expect(JSON.parse(got[0]!.body)).toEqual({ hello: "body@example.com", nested: { plan: 'q"uote' }, n: 1 });
    expect(got[0]!.method).toBe("PUT");
  });

  test("DELAY then WEBHOOK for several executions: each webhook is called exactly once", async () => {
    const wf = await chain(c, [["DELAY", { amount: 5, unit: "minutes" }], ["WEBHOOK", { url: `${base}/ok?n={{email}}` }], ["UPDATE_CONTACT", { updates: { hooked: true } }]]);
    const n = received.length;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const ct = await contact(c, `batch${i}@example.com`);
      ids.push((await start(c, wf.id, { contactId: ct.id })).id);
    }
    for (const id of ids) await waitForExecution(c, wf.id, id, "WAITING");
    srv.clock.advance(5 * 60_000 + 10);
    await srv.drainJobs();
    for (const id of ids) await waitForExecution(c, wf.id, id, "COMPLETED");
    const paths = since(n).map((r) => r.path).sort();
    expect(paths).toEqual([0, 1, 2, 3, 4].map((i) => `/ok?n=batch${i}@example.com`));
  });

  test("an event-triggered workflow whose entry step is a WEBHOOK: each tracked contact's webhook is called once, with the event", async () => {
    // Triggered starts are walked by one starts job; a WEBHOOK (network) is handed to a job of its own.
    const wf = await chain(c, [["WEBHOOK", { url: `${base}/ok?who={{email}}` }], ["UPDATE_CONTACT", { updates: { hooked: true } }]], { eventName: "hooked-signup" });
    const n = received.length;
    for (let i = 0; i < 3; i++) await must(srv.api("/v1/track", { key: acct.publicKey, body: { email: `trig${i}@example.com`, event: "hooked-signup", data: { i } } }), 200);
    const list = await waitFor(() => must(srv.api(`/workflows/${wf.id}/executions?status=COMPLETED`, { key: c.key }), 200), { until: (l: any) => l.total === 3, what: "3 COMPLETED executions" });
    const got = since(n).sort((a, b) => a.path.localeCompare(b.path));
    expect(got.map((r) => r.path)).toEqual([0, 1, 2].map((i) => `/ok?who=trig${i}@example.com`));
    expect(got.map((r) => JSON.parse(r.body).event)).toEqual([0, 1, 2].map((i) => expect.objectContaining({ name: "hooked-signup", data: { i } })));
    const ex = await must(srv.api(`/workflows/${wf.id}/executions/${list.data[0].id}`, { key: c.key }), 200);
    expect(ex.steps.map((s: any) => [s.type, s.status])).toEqual([["WEBHOOK", "COMPLETED"], ["UPDATE_CONTACT", "COMPLETED"]]);
  });

  test("4xx fails the execution at once", async () => {
    const wf = await chain(c, [["WEBHOOK", { url: `${base}/bad` }], ["EXIT", {}]]);
    const ct = await contact(c, "four@example.com");
    const n = received.length;
    const ex = await start(c, wf.id, { contactId: ct.id });
    const done = await waitForExecution(c, wf.id, ex.id, "FAILED");
    expect(since(n).length).toBe(1);
    expect(done.exitReason).toContain("404");
    expect(done.steps).toMatchObject([{ type: "WEBHOOK", status: "FAILED", output: { status: 404, body: "no such thing" } }]);
  });

  test("5xx is retried 3 times after the first waits of the retry schedule, then fails; the webhook-id is stable", async () => {
    const wf = await chain(c, [["WEBHOOK", { url: `${base}/err` }]]);
    const ct = await contact(c, "five@example.com");
    const n = received.length;
    const ex = await start(c, wf.id, { contactId: ct.id });
    await waitFor(() => since(n).length, { until: (k) => k >= 1, what: "the first attempt" });
    // The attempt is recorded on the step after the endpoint answered: wait for the record, not only the request.
    const running = await waitFor(() => execution(c, wf.id, ex.id), { until: (e: any) => e.status === "RUNNING" && e.steps[0]?.output != null, what: "the first attempt recorded" });
    expect(running.steps[0]).toMatchObject({ status: "RUNNING", output: { attempts: 1, status: 503 } });
    for (const wait of [1000, 2000, 3000]) {
      const before = since(n).length;
      srv.clock.advance(wait + 10);
      await srv.drainJobs();
      await waitFor(() => since(n).length, { until: (k) => k > before, what: `retry ${before} after ${wait} ms` });
    }
    const done = await waitForExecution(c, wf.id, ex.id, "FAILED");
    const attempts = since(n);
    expect(attempts.length).toBe(4);
    expect(new Set(attempts.map((a) => a.headers["webhook-id"])).size).toBe(1);
    expect(done.steps).toMatchObject([{ type: "WEBHOOK", status: "FAILED", output: { attempts: 4, status: 503 } }]);
    srv.clock.advance(120_000);
    await srv.drainJobs();
    expect(since(n).length).toBe(4);
  });

  test("SSRF: loopback, private, link-local, IPv4-mapped IPv6 and a name resolving to 127.0.0.1 are refused", async () => {
    dns.set("hook.test", "A", ["127.0.0.1"]);
    srv.ctx.config.allowPrivateWebhooks = false;
    try {
      const urls = [`${base}/ok`, "http://10.1.2.3/x", "http://169.254.169.254/latest/meta-data", `http://[::ffff:127.0.0.1]:${recv.port}/ok`, `http://hook.test:${recv.port}/ok`];
      const n = received.length;
      for (const [i, url] of urls.entries()) {
        const wf = await chain(c, [["WEBHOOK", { url }]]);
        const ct = await contact(c, `ssrf${i}@example.com`);
        const ex = await start(c, wf.id, { contactId: ct.id });
        const done = await waitForExecution(c, wf.id, ex.id, "FAILED");
        expect(done.exitReason).toContain("refused");
      }
      expect(since(n)).toEqual([]);
    } finally {
      srv.ctx.config.allowPrivateWebhooks = true;
    }
  });
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { classifyAddress } from "../../src/net/address-policy";
import { safeFetch } from "../../src/net/safe-fetch";
import { newWebhookSecret, signWebhook } from "../../src/webhooks/sign";
import { startDns, type TestDns } from "../support/dns";

describe("address classifier", () => {
  const table: [string, boolean][] = [
    ["8.8.8.8", true],
    ["1.1.1.1", true],
    ["93.184.216.34", true],
    ["2606:4700:4700::1111", true],
    ["127.0.0.1", false],
    ["127.255.255.254", false],
    ["10.0.0.1", false],
    ["172.16.0.1", false],
    ["172.31.255.255", false],
    ["172.32.0.1", true],
    ["192.168.1.1", false],
    ["100.64.0.1", false],
    ["100.127.255.255", false],
    ["100.128.0.1", true],
    ["169.254.169.254", false],
    ["0.0.0.0", false],
    ["224.0.0.1", false],
    ["239.255.255.250", false],
    ["255.255.255.255", false],
    ["::1", false],
    ["::", false],
    ["fe80::1", false],
    ["fe80::1%eth0", false],
    ["fc00::1", false],
    ["fd12:3456::1", false],
    ["ff02::1", false],
    ["::ffff:127.0.0.1", false],
    ["::ffff:7f00:1", false],
    ["::ffff:10.0.0.1", false],
    ["::ffff:169.254.169.254", false],
    ["::ffff:8.8.8.8", true],
    ["::127.0.0.1", false],
    ["::10.0.0.1", false],
    ["::8.8.8.8", true],
    ["64:ff9b::127.0.0.1", false],
    ["64:ff9b::8.8.8.8", true],
    ["2002:7f00:0001::", false],
    ["2002:0808:0808::", true],
    ["[::1]", false],
    ["not-an-ip", false],
  ];
  for (const [addr, allowed] of table) {
    test(`${addr} -> ${allowed ? "allowed" : "refused"}`, () => {
      expect(classifyAddress(addr).allowed).toBe(allowed);
    });
  }
});

describe("safeFetch", () => {
  let dns: TestDns;
  let srv: ReturnType<typeof Bun.serve>;
  const seen: { path: string; host: string | null; method: string; body: string }[] = [];
  beforeAll(async () => {
    dns = await startDns();
    srv = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const u = new URL(req.url);
        seen.push({ path: u.pathname, host: req.headers.get("host"), method: req.method, body: await req.text() });
        if (u.pathname === "/big") return new Response("x".repeat(5000));
        // 5,000 bytes that travel as a few dozen (gzip), and a chunked stream without a length.
        if (u.pathname === "/gzip") return new Response(Bun.gzipSync("y".repeat(5000)), { headers: { "content-encoding": "gzip" } });
        if (u.pathname === "/chunked")
          return new Response(new ReadableStream({ start(c) { for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode("z".repeat(500))); c.close(); } }));
        if (u.pathname === "/slow") {
          await Bun.sleep(2000);
          return new Response("late");
        }
        if (u.pathname.startsWith("/redirect/")) {
          const n = Number(u.pathname.split("/")[2]);
          return new Response(null, { status: 302, headers: { location: n > 0 ? `/redirect/${n - 1}` : "/ok" } });
        }
        if (u.pathname === "/to-private") return new Response(null, { status: 307, headers: { location: u.searchParams.get("to")! } });
        if (u.pathname === "/fail") return new Response("boom", { status: 500 });
        return new Response("hello " + req.method);
      },
    });
  }, 60_000);
  afterAll(async () => {
    srv.stop(true);
    await dns.close();
  });
  const open = { dnsServers: [] as string[], allowPrivateWebhooks: true };
  const closed = { dnsServers: [] as string[], allowPrivateWebhooks: false };
  const base = () => `http://127.0.0.1:${srv.port}`;

  test("loopback refused without the flag, reached with it", async () => {
    const r = await safeFetch(closed, { url: base() + "/ok", body: "{}" });
    expect(r.ok).toBe(false);
    expect(r.errorKind).toBe("refused");
    expect(seen.some((s) => s.path === "/ok")).toBe(false);
    const r2 = await safeFetch(open, { url: base() + "/ok", body: "{}" });
    expect(r2).toMatchObject({ ok: true, status: 200, body: "hello POST" });
  });

  test("a name resolving to a private address is refused; the checked address is the one connected to", async () => {
    dns.set("private.hooks.test", "A", ["10.1.2.3"]);
    dns.set("loop.hooks.test", "A", ["127.0.0.1"]);
    const cfg = { dnsServers: [dns.server], allowPrivateWebhooks: false };
    const r = await safeFetch(cfg, { url: "http://private.hooks.test/x" });
    expect(r).toMatchObject({ ok: false, errorKind: "refused" });
    expect(r.error).toContain("10.1.2.3");
    const r2 = await safeFetch(cfg, { url: `http://loop.hooks.test:${srv.port}/ok` });
    expect(r2).toMatchObject({ ok: false, errorKind: "refused" });
    const r3 = await safeFetch({ ...cfg, allowPrivateWebhooks: true }, { url: `http://loop.hooks.test:${srv.port}/named`, method: "GET" });
    expect(r3).toMatchObject({ ok: true, status: 200 });
    expect(seen.find((s) => s.path === "/named")?.host).toBe(`loop.hooks.test:${srv.port}`);
    const r4 = await safeFetch(cfg, { url: "http://missing.hooks.test/x" });
    expect(r4).toMatchObject({ ok: false, errorKind: "dns" });
  });

  test("redirects are followed (max 5) and every hop is checked", async () => {
    const r = await safeFetch(open, { url: base() + "/redirect/4", method: "GET" });
    expect(r).toMatchObject({ ok: true, status: 200 });
    expect(r.url).toBe(base() + "/ok");
    const r2 = await safeFetch(open, { url: base() + "/redirect/6", method: "GET" });
    expect(r2).toMatchObject({ ok: false, errorKind: "too_many_redirects" });
  });

  test("a redirect to a refused address is refused at that hop", async () => {
    // 127.0.0.1 stands for a public address here; 127.0.0.2 (the redirect target) does not.
    const cfg = { dnsServers: [] as string[], allowPrivateWebhooks: false, classify: (a: string) => ({ ...classifyAddress(a), allowed: a === "127.0.0.1" }) };
    const ok = await safeFetch(cfg, { url: base() + "/redirect/1", method: "GET" });
    expect(ok).toMatchObject({ ok: true, status: 200 });
    const to = `http://127.0.0.2:${srv.port}/ok2`;
    const r = await safeFetch(cfg, { url: base() + "/to-private?to=" + encodeURIComponent(to) });
    expect(r).toMatchObject({ ok: false, errorKind: "refused" });
    expect(seen.some((s) => s.path === "/ok2")).toBe(false);
    const r2 = await safeFetch(cfg, { url: base() + "/to-private?to=" + encodeURIComponent("ftp://example.com/x") });
    expect(r2).toMatchObject({ ok: false, errorKind: "invalid_url" });
  });

  test("5xx is an outcome, body capped, timeouts and network errors never throw", async () => {
    const r = await safeFetch(open, { url: base() + "/fail" });
    expect(r).toMatchObject({ ok: false, status: 500, body: "boom" });
    const big = await safeFetch(open, { url: base() + "/big", method: "GET" });
    expect(big.ok).toBe(true);
    expect(big.body!.length).toBe(1024);
    // What the caller keeps is the first 1 KB of the body as read, however it travels.
    const gz = await safeFetch(open, { url: base() + "/gzip", method: "GET" });
    expect(gz).toMatchObject({ ok: true, body: "y".repeat(1024) });
    const chunked = await safeFetch(open, { url: base() + "/chunked", method: "GET" });
    expect(chunked).toMatchObject({ ok: true, body: "z".repeat(1024) });
    const small = await safeFetch(open, { url: base() + "/ok", method: "GET" });
    expect(small).toMatchObject({ ok: true, status: 200, body: "hello GET" });
    const slow = await safeFetch(open, { url: base() + "/slow", method: "GET", timeoutMs: 200 });
    expect(slow).toMatchObject({ ok: false, errorKind: "timeout" });
    const dead = await safeFetch(open, { url: "http://127.0.0.1:1/x" });
    expect(dead).toMatchObject({ ok: false, errorKind: "network" });
    const bad = await safeFetch(open, { url: "not a url" });
    expect(bad).toMatchObject({ ok: false, errorKind: "invalid_url" });
  });
});

describe("signing", () => {
  test("signWebhook headers verify with the standardwebhooks package", () => {
    const secret = newWebhookSecret();
    expect(secret.startsWith("whsec_")).toBe(true);
    const body = JSON.stringify({ type: "email.sent", timestamp: new Date().toISOString(), data: { a: 1 } });
    const h = signWebhook(secret, "msg_1", new Date(), body);
    expect(h["webhook-signature"]).toMatch(/^v1,/);
    expect(new Webhook(secret).verify(body, { ...h })).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, { ...h })).toThrow();
  });
});

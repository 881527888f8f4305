// `mailsvc doctor` against records the test DNS serves, a sink as the probe MX and the running server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { arpaName, formatChecks, runDoctor, type Check } from "../../src/doctor";
import { addVerifiedDomain } from "../domains/support";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";

const HOST = "mta.doctor.example";
let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;

function publishHost() {
  dns.set(HOST, "A", ["127.0.0.1"]);
  dns.set("1.0.0.127.in-addr.arpa", "PTR", [HOST]);
  dns.set(HOST, "TXT", ["v=spf1 a ~all"]);
}

beforeAll(async () => {
  env = await deliveryEnv({ name: "Doctor", mailDomain: "probe.example", config: { hostname: HOST, inboundSmtpPort: 0 } });
  ({ srv, dns, sink, acct: acc } = env);
  publishHost();
  await addVerifiedDomain(srv.api, dns, acc, "doc-brand.example");
}, 30_000);
afterAll(() => env?.close());

const byName = (checks: Check[], re: RegExp) => checks.filter((c) => re.test(c.name));
const failures = (checks: Check[]) => checks.filter((c) => c.status === "fail").map((c) => c.name);

describe("mailsvc doctor", () => {
  test("passes when the hostname, its PTR and SPF, the probe MX, the public URL and every domain's records are right", async () => {
    const checks = await runDoctor({ ...srv.ctx.config, publicUrl: srv.url }, { probeDomain: "probe.example", timeoutMs: 3000 });
    // srv.url is a loopback URL: that alone is reported, everything else passes.
    expect(failures(checks)).toEqual(["public URL is public"]);
    expect(byName(checks, /hostname resolves/)[0]).toMatchObject({ status: "ok" });
    expect(byName(checks, /reverse DNS/)[0]).toMatchObject({ status: "ok" });
    expect(byName(checks, /SPF for the HELO/)[0]).toMatchObject({ status: "ok" });
    expect(byName(checks, /outbound port/)[0]).toMatchObject({ status: "ok" });
    expect(byName(checks, /public URL answers/)[0]).toMatchObject({ status: "ok" });
    for (const p of ["dkim", "spf", "return-path", "dmarc"]) expect(byName(checks, new RegExp(`^doc-brand.example: ${p}$`))[0], p).toMatchObject({ status: "ok" });
    expect(byName(checks, /inbound SMTP/)[0]!.status).toBe("warn");
    expect(formatChecks(checks)).toContain("1 check(s) failed");
  });

  test("fails with a fix for each thing that is wrong", async () => {
    dns.remove("1.0.0.127.in-addr.arpa");
    dns.set(HOST, "TXT", ["v=spf1 ip4:192.0.2.1 -all"]);
    dns.remove("_dmarc.doc-brand.example");
    dns.remove("bounces.doc-brand.example", "MX");
    try {
      const checks = await runDoctor({ ...srv.ctx.config, hostname: HOST, mxPort: 1 }, { probeDomain: "probe.example", timeoutMs: 2000 });
      const failed = failures(checks);
      expect(failed).toContain("reverse DNS of 127.0.0.1");
      expect(failed).toContain("SPF for the HELO name");
      expect(failed).toContain("outbound port 1");
      expect(failed).toContain("doc-brand.example: return-path");
      for (const c of checks.filter((c) => c.status === "fail")) expect(c.fix, c.name).toBeString();
      expect(byName(checks, /reverse DNS/)[0]!.fix).toContain(HOST);
      expect(byName(checks, /doc-brand.example: return-path/)[0]!.fix).toContain(`MX bounces.doc-brand.example 10 ${HOST}`);
      expect(byName(checks, /doc-brand.example: dmarc/)[0]!.fix).toContain("rua=mailto:dmarc@bounces.doc-brand.example");
    } finally {
      publishHost();
    }
  });

  test("a bare hostname, and a public URL nobody answers on, fail", async () => {
    const checks = await runDoctor({ ...srv.ctx.config, hostname: "vm", publicUrl: "http://127.0.0.1:1" }, { probeDomain: "probe.example", timeoutMs: 2000, skipDomains: true });
    const failed = failures(checks);
    expect(failed).toContain("hostname is qualified");
    expect(failed).toContain("public URL answers");
  });

  test("reverse names of IPv4 and IPv6 addresses", () => {
    expect(arpaName("192.0.2.10")).toBe("10.2.0.192.in-addr.arpa");
    expect(arpaName("2001:db8::1")).toBe("1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa");
  });

  test("the CLI prints the checks and exits non-zero on a failure", async () => {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/main.ts"), "doctor", "--probe-domain", "probe.example", "--timeout", "2000"], {
      env: { ...process.env, MAILSVC_DB: srv.dbPath, MAILSVC_HOSTNAME: "vm", MAILSVC_DNS_SERVERS: dns.server, MAILSVC_MX_PORT: String(sink.port), MAILSVC_PUBLIC_URL: srv.url },
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(1);
    expect(out).toContain("[FAIL] hostname is qualified");
    expect(out).toContain("fix: Set MAILSVC_HOSTNAME");
    expect(out).toContain("[ ok ] outbound port");
  });
});

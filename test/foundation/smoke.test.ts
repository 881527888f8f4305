import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type TestServer } from "../support/server";
import { startDns } from "../support/dns";
import { startSmtpSink } from "../support/smtp-sink";

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(() => srv.close());

test("support: server, account, dns and sink start", async () => {
  const acc = await createAccount(srv.api);
  expect(acc.secretKey).toStartWith("sk_");
  const dns = await startDns();
  dns.mailDomain("example.org");
  const { Resolver } = await import("node:dns/promises");
  const r = new Resolver();
  r.setServers([dns.server]);
  expect(await r.resolveMx("example.org")).toEqual([{ exchange: "mx.example.org", priority: 10 }]);
  await dns.close();
  const sink = await startSmtpSink();
  expect(sink.port).toBeGreaterThan(0);
  await sink.close();
});

// Black-box: POST /v1/verify (sk) against a DNS server the test controls (MAILSVC_DNS_SERVERS).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectEnvelope, expectValidation } from "./support";

let srv: TestServer;
let dns: TestDns;
let acc: Account;

const RESULT_KEYS = ["domainExists", "email", "hasMxRecords", "hasWebsite", "isAlias", "isDisposable", "isPersonalEmail", "isPlusAddressed", "isTypo", "reasons", "valid"];

beforeAll(async () => {
  dns = await startDns();
  for (const d of ["gmail.com", "yahoo.com", "mailinator.com", "company-bb.example", "duck.com", "hotmail.com"]) {
    dns.set(d, "MX", [{ exchange: `mx.${d}`, priority: 10 }]);
    dns.set(d, "A", ["192.0.2.1"]);
  }
  dns.set("mx-only-bb.example", "MX", [{ exchange: "mx.mx-only-bb.example", priority: 10 }]);
  dns.set("web-only-bb.example", "A", ["192.0.2.2"]);
  srv = await startServer({ config: { dnsServers: [dns.server] } });
  acc = await createAccount(srv.api, "BB verify");
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

async function verify(email: string) {
  const res = await srv.api("/v1/verify", { key: acc.secretKey, body: { email } });
  if (res.status !== 200) throw new Error(`verify ${email}: ${res.status} ${res.text}`);
  expect(res.body.success).toBe(true);
  expect(Object.keys(res.body).sort()).toEqual(["data", "success"]);
  const d = res.body.data;
  const keys = Object.keys(d).filter((k) => k !== "suggestedEmail").sort();
  expect(keys).toEqual(RESULT_KEYS);
  for (const k of RESULT_KEYS) if (k !== "email" && k !== "reasons") expect(typeof d[k]).toBe("boolean");
  expect(typeof d.email).toBe("string");
  expect(Array.isArray(d.reasons)).toBe(true);
  for (const r of d.reasons) expect(typeof r).toBe("string");
  return d;
}

describe("POST /v1/verify", () => {
  test("a good address at a personal provider: valid, personal, MX and website, no reasons", async () => {
    const d = await verify("Jane@Gmail.com");
    expect(d).toEqual({
      email: "jane@gmail.com",
      valid: true,
      isDisposable: false,
      isAlias: false,
      isTypo: false,
      isPlusAddressed: false,
      isPersonalEmail: true,
      domainExists: true,
      hasWebsite: true,
      hasMxRecords: true,
      reasons: [],
    });
  });

  test("a company domain is not personal", async () => {
    const d = await verify("ops@company-bb.example");
    expect(d).toMatchObject({ valid: true, isPersonalEmail: false, hasMxRecords: true, reasons: [] });
  });

  test("a disposable domain is flagged and not valid, with a reason", async () => {
    const d = await verify("temp@mailinator.com");
    expect(d).toMatchObject({ valid: false, isDisposable: true, hasMxRecords: true, domainExists: true, isPersonalEmail: false });
    expect(d.reasons).toHaveLength(1);
    expect(d.reasons[0]).toContain("disposable");
  });

  test("plus addressing is flagged (and does not make the address invalid)", async () => {
    expect(await verify("jane+news@gmail.com")).toMatchObject({ valid: true, isPlusAddressed: true, isPersonalEmail: true });
    expect((await verify("jane@gmail.com")).isPlusAddressed).toBe(false);
    expect((await verify("jane+@gmail.com")).isPlusAddressed).toBe(false);
  });

  test("an alias/forwarding service is flagged", async () => {
    expect(await verify("someone@duck.com")).toMatchObject({ valid: true, isAlias: true, isPersonalEmail: false });
    expect((await verify("abc@mozmail.com")).isAlias).toBe(true);
    expect((await verify("abc@someone.anonaddy.com")).isAlias).toBe(true);
  });

  test("a likely typo of a provider is flagged with suggestedEmail, and is not valid", async () => {
    const d = await verify("jane@gmial.com");
    expect(d.isTypo).toBe(true);
    expect(d.suggestedEmail).toBe("jane@gmail.com");
    expect(d.valid).toBe(false);
    expect(d.reasons.length).toBeGreaterThan(0);
    const h = await verify("joe@hotmial.com");
    expect(h.isTypo).toBe(true);
    expect(h.suggestedEmail).toBe("joe@hotmail.com");
  });

  test("a domain that does not exist: domainExists false, no MX, not valid", async () => {
    const d = await verify("x@no-such-domain-bb.example");
    expect(d).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false });
    expect(d.reasons.length).toBeGreaterThan(0);
  });

  test("a domain with a website but no MX: exists, hasWebsite, no MX, not valid", async () => {
    const d = await verify("x@web-only-bb.example");
    expect(d).toMatchObject({ valid: false, domainExists: true, hasWebsite: true, hasMxRecords: false });
    expect(d.reasons.length).toBeGreaterThan(0);
  });

  test("a domain with MX but no website: valid, no website", async () => {
    const d = await verify("x@mx-only-bb.example");
    expect(d).toMatchObject({ valid: true, domainExists: true, hasWebsite: false, hasMxRecords: true });
  });

  test("valid is true exactly when reasons is empty", async () => {
    for (const e of ["a@gmail.com", "b@mailinator.com", "c@gmial.com", "d@web-only-bb.example", "e@no-such-domain-bb.example"]) {
      const d = await verify(e);
      expect(d.valid).toBe(d.reasons.length === 0);
    }
  });

  test("a missing or non-email `email` is 422 VALIDATION_ERROR (invalid_string for a bad format)", async () => {
    expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: {} }), "email");
    const errs = expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: { email: "plainaddress" } }), "email");
    expect(errs[0]!.code).toBe("invalid_string");
    expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: { email: "a@" } }), "email");
  });

  test("401 for the public key, no key, a bad key", async () => {
    expectEnvelope(await srv.api("/v1/verify", { key: acc.publicKey, body: { email: "a@gmail.com" } }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/v1/verify", { body: { email: "a@gmail.com" } }), 401);
    expectEnvelope(await srv.api("/v1/verify", { key: "sk_nope_nope_nope_nope", body: { email: "a@gmail.com" } }), 401);
  });
});

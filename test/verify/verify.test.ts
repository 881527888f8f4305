import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { editDistance, typoSuggestion } from "../../src/modules/verify/service";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let dns: TestDns;
let acc: Account;

beforeAll(async () => {
  dns = await startDns();
  // What the test DNS serves (no internet): providers with MX and A records, and a few broken domains.
  for (const d of ["gmail.com", "mailinator.com", "acme-corp.example", "duck.com", "outlook.com"]) {
    dns.set(d, "MX", [{ exchange: `mx.${d}`, priority: 10 }]);
    dns.set(d, "A", ["192.0.2.10"]);
  }
  dns.set("website-only.example", "A", ["192.0.2.20"]);
  dns.set("www.mail-only.example", "A", ["192.0.2.21"]);
  dns.set("mail-only.example", "MX", [{ exchange: "mx.mail-only.example", priority: 5 }]);
  dns.set("null-mx.example", "MX", [{ exchange: "", priority: 0 }]);
  dns.set("null-mx.example", "A", ["192.0.2.30"]);
  dns.set("txt-only.example", "TXT", ["v=spf1 -all"]);
  srv = await startServer({ config: { dnsServers: [dns.server] } });
  acc = await createAccount(srv.api, "Verify");
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

const verify = async (email: string) => {
  const res = await srv.api("/v1/verify", { key: acc.secretKey, body: { email } });
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
  return res.body.data;
};

// The result shape and the flags (personal, company, disposable, plus, alias) are asserted by
// test/blackbox/verify.test.ts (from the spec); here what the implementation adds: reasons, null MX, www, syntax.
describe("POST /v1/verify", () => {
  test("gmial.com is a likely typo of gmail.com, with the suggested address", async () => {
    const r = await verify("john.doe@gmial.com");
    expect(r).toMatchObject({ valid: false, isTypo: true, suggestedEmail: "john.doe@gmail.com", domainExists: false, hasMxRecords: false });
    expect(r.reasons.some((x: string) => x.includes("john.doe@gmail.com"))).toBe(true);
    expect(r.reasons.some((x: string) => x.includes("does not exist"))).toBe(true);
  });

  test("a domain without MX records is not valid, even with an A record (informational)", async () => {
    const r = await verify("info@website-only.example");
    expect(r).toMatchObject({ valid: false, hasMxRecords: false, domainExists: true, hasWebsite: true });
    expect(r.reasons).toEqual(["Domain website-only.example has no MX records"]);
  });

  test("a domain that does not exist, a null MX, a domain with only TXT", async () => {
    const nx = await verify("a@no-such-domain.example");
    expect(nx).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, hasWebsite: false });
    expect(nx.reasons).toEqual(["Domain no-such-domain.example does not exist"]);

    const nullMx = await verify("a@null-mx.example");
    expect(nullMx).toMatchObject({ valid: false, hasMxRecords: false, domainExists: true });
    expect(nullMx.reasons[0]).toContain("null MX");

    expect(await verify("a@txt-only.example")).toMatchObject({ valid: false, hasMxRecords: false });
  });

  test("hasWebsite also looks at www.<domain>", async () => {
    expect(await verify("a@mail-only.example")).toMatchObject({ valid: true, hasWebsite: true, hasMxRecords: true });
  });

  test("syntax the practical rules refuse is reported in reasons without DNS lookups", async () => {
    const before = dns.queries.length;
    const r = await verify("a@b.c");
    expect(r).toMatchObject({ valid: false, domainExists: false, hasMxRecords: false, reasons: ["Invalid email syntax"] });
    expect(dns.queries.length).toBe(before);
  });

  test("a missing or non-email body is 422; the public key and no key are 401", async () => {
    for (const body of [{}, { email: "not-an-email" }, { email: 42 }, { email: "" }]) {
      const res = await srv.api("/v1/verify", { key: acc.secretKey, body });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
      expect(res.body.error.errors[0].field).toBe("email");
    }
    const pk = await srv.api("/v1/verify", { key: acc.publicKey, body: { email: "a@gmail.com" } });
    expect(pk.status).toBe(401);
    expect(pk.body.error.code).toBe("INVALID_API_KEY");
    expect((await srv.api("/v1/verify", { body: { email: "a@gmail.com" } })).status).toBe(401);
    // A session is not enough either: /v1 takes the secret key only.
    expect((await srv.api("/v1/verify", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId }, body: { email: "a@gmail.com" } })).status).toBe(401);
  });
});

describe("typo suggestions", () => {
  test("common misspellings of providers are caught", () => {
    expect(typoSuggestion("a@gmial.com", "gmial.com")).toBe("a@gmail.com");
    expect(typoSuggestion("a@gmai.com", "gmai.com")).toBe("a@gmail.com");
    expect(typoSuggestion("a@gmail.con", "gmail.con")).toBe("a@gmail.com");
    expect(typoSuggestion("a@hotmial.com", "hotmial.com")).toBe("a@hotmail.com");
    expect(typoSuggestion("a@yahooo.com", "yahooo.com")).toBe("a@yahoo.com");
    expect(typoSuggestion("a@outlok.com", "outlok.com")).toBe("a@outlook.com");
  });

  test("real domains are not 'corrected' into providers", () => {
    for (const d of ["gmail.com", "att.com", "ibm.com", "web.com", "mail.de", "gmx.at", "example.com", "acme.co", "stripe.com", "mailsvc.test", "duck.com", "mailinator.com"]) {
      expect(typoSuggestion(`a@${d}`, d)).toBeNull();
    }
  });

  test("edit distance counts a transposition as one edit", () => {
    expect(editDistance("gmial.com", "gmail.com")).toBe(1);
    expect(editDistance("att.com", "aol.com")).toBe(2);
    expect(editDistance("", "abc")).toBe(3);
  });
});

// DKIM hardening as a receiver sees it: oversigned headers, Ed25519 + RSA dual signatures (RFC 8463),
// and key rotation that keeps every message verifying.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain, publishRecords, type DomainView } from "../domains/support";
import type { TestDns } from "../support/dns";
import { createAccount, type Account, type TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { dkimHeaders, rcpt, sendAndReceive, tag, verifyDkim } from "./support";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";

const RCPT_DOMAIN = "inbox-dkim.example";
let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;

beforeAll(async () => {
  env = await deliveryEnv({ name: "DKIM", mailDomain: RCPT_DOMAIN, config: { hostname: "mta.deliver.example" } });
  ({ srv, dns, sink, acct: acc } = env);
}, 30_000);
afterAll(() => env?.close());

const send = (from: string, extra: Record<string, unknown> = {}) =>
  sendAndReceive(srv, sink, acc, { to: rcpt(RCPT_DOMAIN), from, subject: "Your code", body: "<p>Code: 123456</p>", ...extra });

describe("oversigning", () => {
  test("h= lists From, To, Subject, Date, Message-ID, Reply-To once more than they occur; a second From breaks the signature", async () => {
    await addVerifiedDomain(srv.api, dns, acc, "over.example");
    const m = await send("team@over.example", { reply: "help@over.example" });
    const [sig] = dkimHeaders(m.raw);
    const h = tag(sig!, "h").toLowerCase().split(":");
    for (const name of ["from", "to", "subject", "date", "message-id", "reply-to"]) expect(h.filter((x) => x === name).length, name).toBe(2);
    expect((await verifyDkim(dns, m.raw))[0]!.result).toBe("pass");

    // An extra From added on top (where a signature covering only the bottom-most instance would still pass) fails.
    const tampered = "From: ceo@over.example\r\n" + m.raw.toString("latin1");
    expect((await verifyDkim(dns, tampered))[0]!.result).not.toBe("pass");
  });
});

describe("Ed25519 dual signing (RFC 8463)", () => {
  test("off by default; on, the domain lists its own k=ed25519 record and messages carry both signatures, each verifying", async () => {
    const plain = (await srv.api<DomainView>("/domains", { key: acc.secretKey, body: { projectId: acc.projectId, domain: "rsa-only.example" } })).body as any;
    expect(plain.ed25519Selector).toBeNull();
    expect(plain.records.filter((r: any) => r.purpose === "dkim").length).toBe(1);

    const created = await srv.api("/domains", { key: acc.secretKey, body: { projectId: acc.projectId, domain: "dual.example", ed25519: true } });
    expect(created.status).toBe(201);
    const d = created.body as any;
    expect(d.ed25519Selector).toMatch(/^[a-z0-9]+$/);
    expect(d.ed25519Selector).not.toBe(d.selector);
    const ed = d.records.find((r: any) => r.purpose === "dkim" && r.algorithm === "ed25519");
    expect(ed).toMatchObject({ type: "TXT", name: `${d.ed25519Selector}._domainkey.dual.example`, required: false, status: "PENDING" });
    expect(ed.value).toMatch(/^v=DKIM1; k=ed25519; p=[A-Za-z0-9+/]{43}=$/);
    // The RSA record stays the required one.
    expect(d.records.find((r: any) => r.purpose === "dkim").required).toBe(true);

    publishRecords(dns, d);
    const verified = (await srv.api(`/domains/${d.id}/verify`, { key: acc.secretKey })).body;
    expect(verified.status).toBe("VERIFIED");
    expect(verified.records.find((r: any) => r.algorithm === "ed25519").status).toBe("VERIFIED");

    const m = await send("team@dual.example");
    const sigs = dkimHeaders(m.raw);
    expect(sigs.map((s) => tag(s, "a")).sort()).toEqual(["ed25519-sha256", "rsa-sha256"]);
    const results = await verifyDkim(dns, m.raw);
    expect(results.length).toBe(2);
    for (const r of results) {
      expect(r.signingDomain).toBe("dual.example");
      expect(r.result).toBe("pass");
    }
    expect(results.map((r) => r.selector).sort()).toEqual([d.selector, d.ed25519Selector].sort());
  });

  test("PATCH turns it on for an existing domain; messages are dual-signed only once the Ed25519 record is published", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "later.example");
    const on = await srv.api(`/domains/${d.id}`, { method: "PATCH", key: acc.secretKey, body: { ed25519: true } });
    expect(on.status).toBe(200);
    expect(on.body.ed25519Selector).toBeString();
    expect(on.body.status).toBe("VERIFIED");
    // Not published yet: RSA only.
    let m = await send("a@later.example");
    expect(dkimHeaders(m.raw).map((s) => tag(s, "a"))).toEqual(["rsa-sha256"]);
    publishRecords(dns, on.body);
    expect((await srv.api(`/domains/${d.id}/verify`, { key: acc.secretKey })).body.status).toBe("VERIFIED");
    m = await send("b@later.example");
    const results = await verifyDkim(dns, m.raw);
    expect(results.map((r) => r.algo).sort()).toEqual(["ed25519-sha256", "rsa-sha256"]);
    expect(results.every((r) => r.result === "pass")).toBe(true);
    const off = await srv.api(`/domains/${d.id}`, { method: "PATCH", key: acc.secretKey, body: { ed25519: false } });
    expect(off.body.ed25519Selector).toBeNull();
    expect(off.body.records.some((r: any) => r.algorithm === "ed25519")).toBe(false);
    expect((await srv.api(`/domains/${d.id}`, { method: "PATCH", key: acc.secretKey, body: { ed25519: "yes" } })).status).toBe(422);
  });
});

describe("DKIM key rotation", () => {
  test("the new selector is published beside the old, takes over once verified, the old is retired; mail verifies throughout", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "rotate.example");
    const oldSelector = d.selector;
    const before = await send("x@rotate.example");
    expect((await verifyDkim(dns, before.raw))[0]).toMatchObject({ selector: oldSelector, result: "pass" });

    const rot = await srv.api(`/domains/${d.id}/rotate-dkim`, { method: "POST", key: acc.secretKey });
    expect(rot.status).toBe(200);
    const next = rot.body.nextSelector as string;
    expect(next).toBeString();
    expect(next).not.toBe(oldSelector);
    expect(rot.body.selector).toBe(oldSelector);
    const dkims = rot.body.records.filter((r: any) => r.purpose === "dkim");
    expect(dkims.map((r: any) => r.selector)).toEqual([oldSelector, next]);
    expect(dkims[1]).toMatchObject({ rotation: "next", required: false, status: "PENDING" });
    expect(rot.body.status).toBe("VERIFIED");

    // Until the new record is published the old key keeps signing (and verifying).
    await srv.api(`/domains/${d.id}/verify`, { key: acc.secretKey });
    const during = await send("y@rotate.example");
    expect((await verifyDkim(dns, during.raw))[0]).toMatchObject({ selector: oldSelector, result: "pass" });

    // Publish both (the old stays for mail in flight), verify: the switch.
    publishRecords(dns, rot.body);
    const switched = (await srv.api(`/domains/${d.id}/verify`, { key: acc.secretKey })).body;
    expect(switched.selector).toBe(next);
    expect(switched.nextSelector).toBeNull();
    expect(switched.status).toBe("VERIFIED");
    expect(switched.records.filter((r: any) => r.purpose === "dkim").map((r: any) => r.selector)).toEqual([next]);
    const after = await send("z@rotate.example");
    expect((await verifyDkim(dns, after.raw))[0]).toMatchObject({ selector: next, result: "pass" });

    // The retired key's record may now go; the domain stays verified with the new one.
    dns.remove(`${oldSelector}._domainkey.rotate.example`);
    expect((await srv.api(`/domains/${d.id}/verify`, { key: acc.secretKey })).body.status).toBe("VERIFIED");
    const last = await send("w@rotate.example");
    expect((await verifyDkim(dns, last.raw))[0]).toMatchObject({ selector: next, result: "pass" });
  });

  test("another project's domain is 404", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "mine-rot.example");
    const other = await createAccount(srv.api, "Other");
    expect((await srv.api(`/domains/${d.id}/rotate-dkim`, { method: "POST", key: other.secretKey })).status).toBe(404);
    expect((await srv.api(`/domains/${d.id}`, { method: "PATCH", key: other.secretKey, body: { ed25519: true } })).status).toBe(404);
  });
});

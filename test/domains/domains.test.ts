import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createPublicKey, createSign, createVerify } from "node:crypto";
import { Resolver } from "node:dns/promises";
import { dkimVerify } from "mailauth/lib/dkim/verify";
import DKIM from "nodemailer/lib/dkim";
import MailComposer from "nodemailer/lib/mail-composer";
import { parseDkimTxt } from "../../src/mail/dkim/dkim-keys";
import { bounceDomainFor } from "../../src/net/email-address";
import { getSigningKey } from "../../src/modules/domains/service";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { addVerifiedDomain, publishRecords, recordOf, type DomainView } from "./support";

let srv: TestServer;
let dns: TestDns;
let acc: Account;
let other: Account;

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server], hostname: "mta.mailsvc.test" } });
  acc = await createAccount(srv.api, "Senders");
  other = await createAccount(srv.api, "Someone else");
});
afterAll(async () => {
  await srv.close();
  await dns.close();
});

const addDomain = (domain: string, who: Account = acc, projectId = who.projectId) =>
  srv.api("/domains", { key: who.secretKey, body: { projectId, domain } });
const verify = (id: string, who: Account = acc) => srv.api<DomainView>(`/domains/${id}/verify`, { key: who.secretKey });
const listDomains = (who: Account = acc) => srv.api<DomainView[]>(`/domains/project/${who.projectId}`, { key: who.secretKey });
const createTemplate = (from: string, who: Account = acc) =>
  srv.api("/templates", { key: who.secretKey, body: { name: "T", subject: "Hi", body: "<p>Hi</p>", from } });

describe("adding a domain", () => {
  test("returns the domain with its DKIM key record and the recommended records, all PENDING", async () => {
    const res = await addDomain("Acme-Mail.example");
    expect(res.status).toBe(201);
    const d: DomainView = res.body;
    expect(d).toMatchObject({ domain: "acme-mail.example", projectId: acc.projectId, verified: false, status: "PENDING" });
    expect(typeof d.id).toBe("string");
    expect(Date.parse(d.createdAt)).toBeGreaterThan(0);
    expect(Date.parse(d.updatedAt)).toBeGreaterThan(0);
    expect(d.records.map((r) => r.purpose).sort()).toEqual(["dkim", "dmarc", "return-path", "spf"]);
    for (const r of d.records) expect(r.status).toBe("PENDING");

    const dkim = recordOf(d, "dkim");
    expect(dkim).toMatchObject({ type: "TXT", required: true, name: `${d.selector}._domainkey.acme-mail.example` });
    expect(dkim.value).toMatch(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/=]+$/);
    // RSA-2048: the SPKI of a 2048-bit key is 294 bytes.
    const pub = createPublicKey({ key: Buffer.from(parseDkimTxt(dkim.value).p!, "base64"), format: "der", type: "spki" });
    expect(pub.asymmetricKeyDetails?.modulusLength).toBe(2048);

    expect(recordOf(d, "return-path")).toMatchObject({ type: "MX", name: "bounces.acme-mail.example", value: "mta.mailsvc.test", required: false });
    expect(recordOf(d, "spf")).toMatchObject({ type: "TXT", name: "bounces.acme-mail.example", value: "v=spf1 a:mta.mailsvc.test ~all", required: false });
    expect(recordOf(d, "dmarc")).toMatchObject({ type: "TXT", name: "_dmarc.acme-mail.example", required: false });
    expect(recordOf(d, "dmarc").value).toStartWith("v=DMARC1;");
    expect(d.bounceDomain).toBe(bounceDomainFor("acme-mail.example"));
    expect(JSON.stringify(d)).not.toContain("PRIVATE KEY");
  });

  test("invalid domain names are 422, a domain already in the project is 409 (case-insensitive)", async () => {
    for (const bad of ["not a domain", "localhost", "-bad.example", "a..b.example", "192.168.1.1", "x".repeat(64) + ".example", ""]) {
      const res = await addDomain(bad);
      expect(res.status, bad).toBe(422);
      expect(res.body.error.code).toBe("VALIDATION_ERROR");
    }
    expect((await addDomain("dup.example")).status).toBe(201);
    const again = await addDomain("DUP.example.");
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    // Another project may add the same name (with its own key).
    expect((await addDomain("dup.example", other)).status).toBe(201);
  });

  test("each domain gets its own key and selector", async () => {
    const a = (await addDomain("keys-a.example")).body;
    const b = (await addDomain("keys-b.example")).body;
    expect(a.selector).not.toBe(b.selector);
    expect(recordOf(a, "dkim").value).not.toBe(recordOf(b, "dkim").value);
  });
});

describe("verification", () => {
  test("PENDING before the records are published, VERIFIED after, each record with its own status", async () => {
    const d = (await addDomain("verify-me.example")).body;
    const firstCheck = srv.clock.now();
    let v = (await verify(d.id)).body;
    expect(v.status).toBe("PENDING");
    expect(v.verified).toBe(false);
    expect(v.verifiedAt).toBeNull();
    expectTimeBetween(v.lastCheckedAt, firstCheck, srv.clock.now());
    expect(recordOf(v, "dkim").status).toBe("PENDING");

    publishRecords(dns, d, ["dkim"]);
    const secondCheck = srv.clock.now();
    v = (await verify(d.id)).body;
    expect(v).toMatchObject({ status: "VERIFIED", verified: true });
    expectTimeBetween(v.verifiedAt, secondCheck, srv.clock.now());
    expect(v.lastCheckedAt).toBe(v.verifiedAt);
    expect(recordOf(v, "dkim").status).toBe("VERIFIED");
    expect(recordOf(v, "spf").status).toBe("PENDING");
    expect(recordOf(v, "return-path").status).toBe("PENDING");
    expect(recordOf(v, "dmarc").status).toBe("PENDING");

    publishRecords(dns, d);
    v = (await verify(d.id)).body;
    for (const r of v.records) expect(`${r.purpose}:${r.status}`).toBe(`${r.purpose}:VERIFIED`);

    const listed = (await listDomains()).body.find((x) => x.id === d.id)!;
    expect(listed).toMatchObject({ status: "VERIFIED", verified: true });

    // A check that finds nothing new moves lastCheckedAt, not updatedAt or verifiedAt.
    srv.clock.advance(5000);
    const again = (await verify(d.id)).body;
    expect(again.updatedAt).toBe(v.updatedAt);
    expect(again.verifiedAt).toBe(v.verifiedAt);
    expect(Date.parse(again.lastCheckedAt!)).toBeGreaterThan(Date.parse(v.lastCheckedAt!));
  });

  test("a verification checks the server's own SPF record (serverRecords) too", async () => {
    const d = (await addDomain("server-spf.example")).body;
    expect(d.serverRecords).toEqual([expect.objectContaining({ type: "TXT", name: "mta.mailsvc.test", value: "v=spf1 a ~all", status: "PENDING" })]);
    dns.set("mta.mailsvc.test", "TXT", ["v=spf1 a ~all"]);
    try {
      const v = (await verify(d.id)).body;
      expect(v.serverRecords[0]).toMatchObject({ name: "mta.mailsvc.test", status: "VERIFIED" });
      // Shown with every domain of the instance from then on.
      expect((await listDomains()).body.every((x) => x.serverRecords[0]!.status === "VERIFIED")).toBe(true);
    } finally {
      dns.set("mta.mailsvc.test", "TXT", []);
    }
  });

  test("the records follow MAILSVC_HOSTNAME at once: a new hostname's targets show PENDING until checked", async () => {
    const d = (await addDomain("moving-host.example")).body;
    publishRecords(dns, d);
    expect(recordOf((await verify(d.id)).body, "return-path")).toMatchObject({ value: "mta.mailsvc.test", status: "VERIFIED" });
    const before = srv.ctx.config.hostname;
    (srv.ctx.config as { hostname: string }).hostname = "mx2.mailsvc.test"; // as after a restart with another hostname
    try {
      const v = (await srv.api<DomainView>(`/domains/${d.id}`, { key: acc.secretKey })).body;
      expect(recordOf(v, "return-path")).toMatchObject({ value: "mx2.mailsvc.test", status: "PENDING" });
      expect(recordOf(v, "dkim").status).toBe("VERIFIED");
      expect(v.serverRecords[0]!.name).toBe("mx2.mailsvc.test");
    } finally {
      (srv.ctx.config as { hostname: string }).hostname = before;
    }
  });

  test("a DKIM record with another key makes the domain FAILED and says why", async () => {
    const d = (await addDomain("wrong-key.example")).body;
    const foreign = (await addDomain("foreign-key.example")).body;
    dns.setLongTxt(recordOf(d, "dkim").name, recordOf(foreign, "dkim").value);
    const v = (await verify(d.id)).body;
    expect(v.status).toBe("FAILED");
    expect(recordOf(v, "dkim").status).toBe("FAILED");
    expect(recordOf(v, "dkim").detail).toContain("key");
  });

  test("the published value is matched as key material: quotes, spaces and line breaks do not matter", async () => {
    const d = (await addDomain("sloppy-dns.example")).body;
    const p = parseDkimTxt(recordOf(d, "dkim").value).p!;
    const messy = `v=DKIM1;k=rsa ;  p=${p.slice(0, 100)} ${p.slice(100, 200)}\n${p.slice(200)};`;
    dns.setLongTxt(recordOf(d, "dkim").name, messy);
    expect((await verify(d.id)).body.status).toBe("VERIFIED");
  });

  test("SPF and MX pointing elsewhere are FAILED with a reason; the domain still verifies on DKIM", async () => {
    const d = (await addDomain("half-done.example")).body;
    publishRecords(dns, d, ["dkim", "dmarc"]);
    dns.set(d.bounceDomain, "MX", [{ exchange: "mx.elsewhere.example", priority: 5 }]);
    dns.set(d.bounceDomain, "TXT", ["v=spf1 include:_spf.elsewhere.example -all"]);
    const v = (await verify(d.id)).body;
    expect(v.status).toBe("VERIFIED");
    expect(recordOf(v, "return-path")).toMatchObject({ status: "FAILED" });
    expect(recordOf(v, "return-path").detail).toContain("mx.elsewhere.example");
    expect(recordOf(v, "spf")).toMatchObject({ status: "FAILED" });
    expect(recordOf(v, "dmarc").status).toBe("VERIFIED");
  });

  test("the schedule re-checks: a removed DKIM record turns VERIFIED into FAILED and senders are refused", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "vanishing.example");
    expect((await createTemplate("news@vanishing.example")).status).toBe(201);

    dns.remove(recordOf(d, "dkim").name);
    // Nothing changes until the background check runs.
    expect((await srv.api<DomainView>(`/domains/${d.id}`, { key: acc.secretKey })).body.status).toBe("VERIFIED");
    srv.clock.advance(srv.ctx.config.domainCheckIntervalMs + 1000);
    await srv.drainJobs();

    const after = (await listDomains()).body.find((x) => x.id === d.id)!;
    expect(after).toMatchObject({ status: "FAILED", verified: false });
    expect(recordOf(after, "dkim")).toMatchObject({ status: "FAILED", detail: "The record is no longer published" });
    const refused = await createTemplate("news@vanishing.example");
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("INTERNAL_SERVER_ERROR");
    expect(refused.body.error.message).toContain("vanishing.example");

    // Publishing it again and the next run bring it back.
    publishRecords(dns, d, ["dkim"]);
    srv.clock.advance(srv.ctx.config.domainCheckIntervalMs + 1000);
    await srv.drainJobs();
    expect((await srv.api<DomainView>(`/domains/${d.id}`, { key: acc.secretKey })).body.status).toBe("VERIFIED");
    expect((await createTemplate("news@vanishing.example")).status).toBe(201);
  });

  test("the schedule also verifies pending domains once their records appear", async () => {
    const d = (await addDomain("later.example")).body;
    publishRecords(dns, d);
    srv.clock.advance(srv.ctx.config.domainCheckIntervalMs + 1000);
    await srv.drainJobs();
    expect((await srv.api<DomainView>(`/domains/${d.id}`, { key: acc.secretKey })).body.status).toBe("VERIFIED");
  });
});

describe("the DKIM key pair", () => {
  test("the private key we keep signs what the published p= value verifies", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "signing.example");
    const key = await getSigningKey(srv.ctx, acc.projectId, "SIGNING.example");
    expect(key).not.toBeNull();
    expect(key!.selector).toBe(d.selector);
    expect(key!.privateKeyPem).toContain("BEGIN PRIVATE KEY");
    const pub = createPublicKey({ key: Buffer.from(parseDkimTxt(recordOf(d, "dkim").value).p!, "base64"), format: "der", type: "spki" });
    const sig = createSign("RSA-SHA256").update("hello").sign(key!.privateKey);
    expect(createVerify("RSA-SHA256").update("hello").verify(pub, sig)).toBe(true);
    // Cached: the same KeyObject next time.
    expect((await getSigningKey(srv.ctx, acc.projectId, "signing.example"))!.privateKey).toBe(key!.privateKey);
    expect(await getSigningKey(srv.ctx, other.projectId, "signing.example")).toBeNull();
  });

  test("a message DKIM-signed with it passes mailauth against the record served by DNS", async () => {
    const d = await addVerifiedDomain(srv.api, dns, acc, "mailauth.example");
    const key = (await getSigningKey(srv.ctx, acc.projectId, "mailauth.example"))!;
    const mail = new MailComposer({ from: "hello@mailauth.example", to: "someone@receiver.example", subject: "Signed", html: "<p>Signed</p>" });
    const unsigned: Buffer = await new Promise((res, rej) => mail.compile().build((e, m) => (e ? rej(e) : res(m))));
    const signer = new DKIM({ domainName: key.domain, keySelector: key.selector, privateKey: key.privateKeyPem });
    const raw = Buffer.from(await new Response(signer.sign(unsigned) as unknown as ReadableStream).arrayBuffer());
    expect(raw.toString()).toContain("DKIM-Signature:");
    const r = new Resolver();
    r.setServers([dns.server]);
    // Bun hands back each string of the two-string TXT record as a record of its own; give mailauth the one record.
    const resolver = async (name: string, type: string) => (type === "TXT" ? [(await r.resolveTxt(name)).flat()] : r.resolve(name, type as "A"));
    const result = await dkimVerify(raw, { resolver });
    expect(result.results[0]?.status?.result).toBe("pass");
    expect(result.results[0]?.signingDomain).toBe(d.domain);
  });
});

describe("the sender guard", () => {
  let domain: DomainView;
  beforeAll(async () => {
    domain = await addVerifiedDomain(srv.api, dns, acc, "guarded.example");
  });

  test("the From domain must match exactly, case-insensitively; subdomains are not covered", async () => {
    expect((await createTemplate("Team@GUARDED.Example")).status).toBe(201);
    const sub = await createTemplate("team@news.guarded.example");
    expect(sub.status).toBe(403);
    expect(sub.body.error.message).toContain("news.guarded.example");
    expect((await createTemplate("team@unknown.example")).status).toBe(403);
  });

  test("a domain verified in one project does not authorise another project", async () => {
    const res = await createTemplate("team@guarded.example", other);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("INTERNAL_SERVER_ERROR");
  });

  test("deleting the domain removes it, its key and its permission to send", async () => {
    const del = await srv.api(`/domains/${domain.id}`, { method: "DELETE", key: acc.secretKey });
    expect(del.status).toBe(200);
    expect((await listDomains()).body.some((x) => x.id === domain.id)).toBe(false);
    expect(await getSigningKey(srv.ctx, acc.projectId, "guarded.example")).toBeNull();
    expect((await createTemplate("team@guarded.example")).status).toBe(403);
    expect((await srv.api(`/domains/${domain.id}`, { method: "DELETE", key: acc.secretKey })).status).toBe(404);
    expect((await verify(domain.id)).status).toBe(404);
  });
});

describe("access", () => {
  test("the project's secret key or a member's session; other projects' ids are 404", async () => {
    const mine = (await addDomain("access.example")).body;

    // A secret key naming another project, or another project's domain id.
    const foreign = await addDomain("x-access.example", other, acc.projectId);
    expect(foreign.status).toBe(404);
    expect((await srv.api(`/domains/project/${acc.projectId}`, { key: other.secretKey })).status).toBe(404);
    expect((await verify(mine.id, other)).status).toBe(404);
    expect((await srv.api(`/domains/${mine.id}`, { method: "DELETE", key: other.secretKey })).status).toBe(404);

    // The public key is never enough.
    const pk = await srv.api("/domains", { key: acc.publicKey, body: { projectId: acc.projectId, domain: "pk.example" } });
    expect(pk.status).toBe(401);
    expect(pk.body.error.code).toBe("INVALID_API_KEY");
    expect((await srv.api("/domains", { body: { projectId: acc.projectId, domain: "nokey.example" } })).status).toBe(401);

    // A member's session, naming the project in the body.
    const bySession = await srv.api<DomainView>("/domains", { cookie: acc.cookie, body: { projectId: acc.projectId, domain: "session.example" } });
    expect(bySession.status).toBe(201);
    const list = await srv.api<DomainView[]>(`/domains/project/${acc.projectId}`, { cookie: acc.cookie });
    expect(list.status).toBe(200);
    expect(list.body.map((x) => x.domain)).toContain("session.example");
    expect((await srv.api(`/domains/${bySession.body.id}/verify`, { cookie: acc.cookie })).status).toBe(200);
    // A session of a user who is not a member.
    expect((await srv.api("/domains", { cookie: other.cookie, body: { projectId: acc.projectId, domain: "intruder.example" } })).status).toBe(404);
    expect((await srv.api(`/domains/project/${acc.projectId}`, { cookie: other.cookie })).status).toBe(404);
    expect((await srv.api(`/domains/${mine.id}/verify`, { cookie: other.cookie })).status).toBe(404);

    // With a secret key, projectId may be left out (the key names the project).
    const implicit = await srv.api<DomainView>("/domains", { key: acc.secretKey, body: { domain: "implicit.example" } });
    expect(implicit.status).toBe(201);
    expect(implicit.body.projectId).toBe(acc.projectId);
    const noProject = await srv.api("/domains", { cookie: acc.cookie, body: { domain: "noproject.example" } });
    expect(noProject.status).toBe(422);
  });

  test("the list is a bare array, newest first, and setup-state counts domains", async () => {
    const fresh = await createAccount(srv.api, "Counting");
    await addDomain("one.example", fresh);
    await addVerifiedDomain(srv.api, dns, fresh, "two.example");
    const list = await srv.api<DomainView[]>(`/domains/project/${fresh.projectId}`, { key: fresh.secretKey });
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.map((d) => d.domain)).toEqual(["two.example", "one.example"]);
    const state = await srv.api(`/projects/${fresh.projectId}/setup-state`, { key: fresh.secretKey });
    expect(state.body).toMatchObject({ domains: 2, verifiedDomains: 1 });
  });
});

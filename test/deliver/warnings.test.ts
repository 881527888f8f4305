// A fresh install's two costly defaults are reported: at start by `serve`, and in setup-state; domain
// records never name a bare host.
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { configWarnings, isQualifiedHostname } from "../../src/mail/deliverability/deliverability";
import { createAccount, spawnServer, startServer, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";

const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

describe("configuration warnings", () => {
  test("serve logs a warning at start for a bare MAILSVC_HOSTNAME and a loopback public URL", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-warn-"));
    const proc = await spawnServer({ MAILSVC_DB: join(dir, "w.db"), MAILSVC_HOSTNAME: "vm", MAILSVC_PUBLIC_URL: "http://localhost:3000" });
    try {
      const out = await waitFor(() => proc.output(), { until: (o) => /MAILSVC_PUBLIC_URL/.test(o), what: "the MAILSVC_PUBLIC_URL warning" });
      expect(out).toContain("WARNING");
      expect(out).toContain('MAILSVC_HOSTNAME \\"vm\\" is not a fully qualified domain name');
      expect(out).toContain("HOSTNAME_NOT_FQDN");
      expect(out).toContain("PUBLIC_URL_LOOPBACK");
    } finally {
      await proc.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("setup-state shows the warnings; domain records then leave out the bounce MX and SPF that would name the bare host", async () => {
    const srv = await startServer({ config: { hostname: "vm" } });
    servers.push(srv);
    const acc = await createAccount(srv.api);
    const state = await srv.api(`/projects/${acc.projectId}/setup-state`, { key: acc.secretKey });
    expect(state.status).toBe(200);
    const codes = state.body.warnings.map((w: any) => w.code).sort();
    expect(codes).toEqual(["HOSTNAME_NOT_FQDN", "PUBLIC_URL_LOOPBACK"]);
    for (const w of state.body.warnings) {
      expect(w.message).toBeString();
      expect(w.fix).toBeString();
    }
    const d = await srv.api("/domains", { key: acc.secretKey, body: { projectId: acc.projectId, domain: "bare-host.example" } });
    expect(d.status).toBe(201);
    expect(d.body.records.map((r: any) => r.purpose).sort()).toEqual(["dkim", "dmarc"]);
    expect(JSON.stringify(d.body.records)).not.toMatch(/a:vm|"value":"vm"/);
    expect(d.body.serverRecords).toEqual([]);
  });

  test("a qualified hostname and a public URL: no warnings; SPF for the HELO name and DMARC with rua are recommended", async () => {
    const srv = await startServer({ config: { hostname: "mta.good.example", publicUrl: "https://mail.good.example" } });
    servers.push(srv);
    const acc = await createAccount(srv.api);
    const state = await srv.api(`/projects/${acc.projectId}/setup-state`, { key: acc.secretKey });
    expect(state.body.warnings).toEqual([]);
    const d = (await srv.api("/domains", { key: acc.secretKey, body: { projectId: acc.projectId, domain: "brand.example" } })).body;
    expect(d.records.find((r: any) => r.purpose === "dmarc").value).toBe("v=DMARC1; p=none; rua=mailto:dmarc@bounces.brand.example");
    expect(d.records.find((r: any) => r.purpose === "spf")).toMatchObject({ name: "bounces.brand.example", value: "v=spf1 a:mta.good.example ~all" });
    expect(d.serverRecords).toEqual([expect.objectContaining({ type: "TXT", name: "mta.good.example", value: "v=spf1 a ~all", purpose: "spf", scope: "helo" })]);
  });

  test("a relay makes a loopback public URL harmless to report; hostnames are judged as receivers do", () => {
    expect(configWarnings({ hostname: "mta.good.example", publicUrl: "http://localhost:3000", smtpRelay: "smtp://relay.example:587" })).toEqual([]);
    for (const bad of ["vm", "localhost", "box.localdomain", "host.local", "-x.example"]) expect(isQualifiedHostname(bad), bad).toBe(false);
    for (const good of ["mail.example.com", "mta.example.org."]) expect(isQualifiedHostname(good), good).toBe(true);
  });
});

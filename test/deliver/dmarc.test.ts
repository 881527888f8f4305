// DMARC aggregate reports sent to the recommended rua over inbound SMTP show up per domain.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { zipSync } from "fflate";
import MailComposer from "nodemailer/lib/mail-composer";
import { parseDmarcXml } from "../../src/modules/feedback/inbound/dmarc-report";
import { addVerifiedDomain, type DomainView } from "../domains/support";
import { sendSmtp } from "../support/smtp-client";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, freeTcpPort, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let dns: TestDns;
let acc: Account;
let port: number;
let domain: DomainView;

beforeAll(async () => {
  dns = await startDns();
  port = await freeTcpPort();
  srv = await startServer({ config: { dnsServers: [dns.server], inboundSmtpPort: port, hostname: "mta.dmarc.example" } });
  acc = await createAccount(srv.api, "DMARC");
  domain = await addVerifiedDomain(srv.api, dns, acc, "reports.example");
}, 30_000);
afterAll(async () => {
  await srv?.close();
  await dns?.close();
});

function reportXml(reportId: string, records: { ip: string; count: number; dkim: string; spf: string }[], dom = "reports.example") {
  return `<?xml version="1.0" encoding="UTF-8" ?>
<feedback>
  <report_metadata>
    <org_name>google.com</org_name>
    <email>noreply-dmarc-support@google.com</email>
    <report_id>${reportId}</report_id>
    <date_range><begin>1795392000</begin><end>1795478399</end></date_range>
  </report_metadata>
  <policy_published><domain>${dom}</domain><adkim>r</adkim><aspf>r</aspf><p>none</p><sp>none</sp><pct>100</pct></policy_published>
  ${records
    .map(
      (r) => `<record>
    <row><source_ip>${r.ip}</source_ip><count>${r.count}</count>
      <policy_evaluated><disposition>none</disposition><dkim>${r.dkim}</dkim><spf>${r.spf}</spf></policy_evaluated></row>
    <identifiers><header_from>${dom}</header_from></identifiers>
    <auth_results><dkim><domain>${dom}</domain><result>${r.dkim}</result></dkim><spf><domain>bounces.${dom}</domain><result>${r.spf}</result></spf></auth_results>
  </record>`,
    )
    .join("\n")}
</feedback>`;
}

async function reportMail(filename: string, contentType: string, content: Buffer): Promise<Buffer> {
  const mc = new MailComposer({
    from: "noreply-dmarc-support@google.com",
    to: "dmarc@bounces.reports.example",
    subject: `Report domain: reports.example Submitter: google.com Report-ID: ${filename}`,
    text: "This is an aggregate report from google.com.",
    attachments: [{ filename, content, contentType }],
  } as any);
  return new Promise((resolve, reject) => mc.compile().build((err: any, m: Buffer) => (err ? reject(err) : resolve(m))));
}

const summary = async () => (await srv.api(`/domains/${domain.id}/dmarc`, { key: acc.secretKey })).body;

describe("DMARC aggregate reports", () => {
  test("the domain names the rua address; gzip, zip and plain XML reports over inbound SMTP are counted per source IP", async () => {
    expect((domain as any).dmarcReportAddress).toBe("dmarc@bounces.reports.example");
    expect((await summary())).toMatchObject({ domainId: domain.id, domain: "reports.example", reports: 0, total: 0, sources: [] });

    const gz = await reportMail("google.com!reports.example!1.xml.gz", "application/gzip", gzipSync(reportXml("r-1", [{ ip: "192.0.2.10", count: 5, dkim: "pass", spf: "pass" }, { ip: "198.51.100.7", count: 2, dkim: "fail", spf: "fail" }])));
    const zip = await reportMail("google.com!reports.example!2.zip", "application/zip", Buffer.from(zipSync({ "report.xml": Buffer.from(reportXml("r-2", [{ ip: "192.0.2.10", count: 3, dkim: "pass", spf: "fail" }])) })));
    const xml = await reportMail("report.xml", "text/xml", Buffer.from(reportXml("r-3", [{ ip: "198.51.100.7", count: 1, dkim: "fail", spf: "pass" }])));
    for (const raw of [gz, zip, xml]) {
      const r = await sendSmtp(port, { from: "noreply-dmarc-support@google.com", to: ["dmarc@bounces.reports.example"], raw });
      expect(r.ok, r.response).toBe(true);
    }
    // The same report delivered twice is counted once.
    expect((await sendSmtp(port, { from: "noreply-dmarc-support@google.com", to: ["dmarc@bounces.reports.example"], raw: gz })).ok).toBe(true);

    const res = await srv.api(`/domains/${domain.id}/dmarc`, { key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ reports: 3, total: 11, pass: 9, fail: 2 });
    expect(res.body.from).toBe(new Date(1795392000 * 1000).toISOString());
    expect(res.body.sources).toEqual([
      { sourceIp: "192.0.2.10", count: 8, pass: 8, fail: 0, dkimPass: 8, spfPass: 5 },
      { sourceIp: "198.51.100.7", count: 3, pass: 1, fail: 2, dkimPass: 0, spfPass: 1 },
    ]);
  });

  test("a report for a domain of another project is not shown here; other projects get 404", async () => {
    const other = await createAccount(srv.api, "Other DMARC");
    expect((await srv.api(`/domains/${domain.id}/dmarc`, { key: other.secretKey })).status).toBe(404);
    const before = (await summary()).total;
    // Addressed to our rua but about a domain this project does not have: ignored.
    const raw = await reportMail("x.xml.gz", "application/gzip", gzipSync(reportXml("r-9", [{ ip: "203.0.113.1", count: 50, dkim: "fail", spf: "fail" }], "someone-else.example")));
    expect((await sendSmtp(port, { from: "a@b.example", to: ["dmarc@bounces.reports.example"], raw })).ok).toBe(true);
    expect((await summary()).total).toBe(before);
  });

  test("the parser ignores what is not an aggregate report", () => {
    expect(parseDmarcXml("<html><body>hi</body></html>")).toBeNull();
    expect(parseDmarcXml("not xml at all <<<")).toBeNull();
    const r = parseDmarcXml(reportXml("u-1", [{ ip: "2001:db8::1", count: 4, dkim: "pass", spf: "fail" }]))!;
    expect(r).toMatchObject({ orgName: "google.com", reportId: "u-1", domain: "reports.example", rows: [{ sourceIp: "2001:db8::1", count: 4, dkim: "pass", spf: "fail", disposition: "none" }] });
  });
});

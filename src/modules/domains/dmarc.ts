// DMARC aggregate reports of a project's sender domains: stored as they arrive over inbound SMTP
// (the recommended rua is dmarc@<bounce domain>, whose MX is this server) and summed per source IP.
import { sql } from "kysely";
import type { AppContext } from "../../context";
import type { DmarcAggregate } from "../feedback/inbound/dmarc-report";
import type { DomainRow } from "./service";

/**
 * Stores a report for the named domain in each of `projectIds` that has it. A report seen before
 * (same reporter and report id) is not counted twice. Returns how many domains it was stored for.
 */
export async function storeDmarcReport(ctx: AppContext, projectIds: string[], report: DmarcAggregate): Promise<number> {
  if (!projectIds.length) return 0;
  const domains = await ctx.db.selectFrom("domains").select(["id"]).where("domain", "=", report.domain).where("project_id", "in", projectIds).execute();
  let stored = 0;
  const now = ctx.clock.now();
  for (const d of domains) {
    const inserted = await ctx.db.transaction().execute(async (trx) => {
      const dup = await trx
        .selectFrom("dmarc_reports")
        .select("id")
        .where("domain_id", "=", d.id)
        .where("org_name", "=", report.orgName)
        .where("report_id", "=", report.reportId)
        .executeTakeFirst();
      if (dup) return false;
      const id = Bun.randomUUIDv7();
      await trx
        .insertInto("dmarc_reports")
        .values({ id, domain_id: d.id, org_name: report.orgName, report_id: report.reportId, begin_at: report.beginMs, end_at: report.endMs, received_at: now })
        .execute();
      if (report.rows.length) {
        await trx
          .insertInto("dmarc_report_rows")
          .values(report.rows.map((r) => ({ report_id: id, domain_id: d.id, source_ip: r.sourceIp, count: r.count, disposition: r.disposition, dkim: r.dkim, spf: r.spf })))
          .execute();
      }
      return true;
    });
    if (inserted) stored++;
  }
  return stored;
}

/**
 * GET /domains/:id/dmarc: messages reported per source IP. A message passes DMARC when its aligned
 * DKIM or its aligned SPF passed (RFC 7489 section 4.2).
 */
export async function dmarcSummary(ctx: AppContext, domain: DomainRow) {
  const pass = sql<number>`sum(case when ${sql.ref("dkim")} = 'pass' or ${sql.ref("spf")} = 'pass' then ${sql.ref("count")} else 0 end)`;
  const rows = await ctx.db
    .selectFrom("dmarc_report_rows")
    .select((eb) => [
      "source_ip",
      eb.fn.sum<number>("count").as("total"),
      pass.as("pass"),
      sql<number>`sum(case when ${sql.ref("dkim")} = 'pass' then ${sql.ref("count")} else 0 end)`.as("dkim_pass"),
      sql<number>`sum(case when ${sql.ref("spf")} = 'pass' then ${sql.ref("count")} else 0 end)`.as("spf_pass"),
    ])
    .where("domain_id", "=", domain.id)
    .groupBy("source_ip")
    .orderBy("total", "desc")
    .orderBy("source_ip")
    .execute();
  const reports = await ctx.db
    .selectFrom("dmarc_reports")
    .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.min<number>("begin_at").as("from"), eb.fn.max<number>("end_at").as("to")])
    .where("domain_id", "=", domain.id)
    .executeTakeFirstOrThrow();
  const sources = rows.map((r) => {
    const total = Number(r.total ?? 0);
    const p = Number(r.pass ?? 0);
    return { sourceIp: r.source_ip, count: total, pass: p, fail: total - p, dkimPass: Number(r.dkim_pass ?? 0), spfPass: Number(r.spf_pass ?? 0) };
  });
  const n = Number(reports.n);
  return {
    domainId: domain.id,
    domain: domain.domain,
    reports: n,
    from: n && reports.from ? new Date(Number(reports.from)).toISOString() : null,
    to: n && reports.to ? new Date(Number(reports.to)).toISOString() : null,
    total: sources.reduce((a, s) => a + s.count, 0),
    pass: sources.reduce((a, s) => a + s.pass, 0),
    fail: sources.reduce((a, s) => a + s.fail, 0),
    sources,
  };
}

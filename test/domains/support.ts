// Helpers for tests that need a sender domain (also usable by other modules' tests):
// publish a domain's records in the test DNS and verify it through the API.
import type { TestDns } from "../support/dns";
import type { Api } from "../support/server";

export interface DomainRecord {
  type: "TXT" | "MX";
  name: string;
  value: string;
  priority?: number;
  purpose: "dkim" | "spf" | "return-path" | "dmarc";
  required: boolean;
  status: "PENDING" | "VERIFIED" | "FAILED";
  detail?: string;
}

export interface DomainView {
  id: string;
  domain: string;
  projectId: string;
  verified: boolean;
  status: "PENDING" | "VERIFIED" | "FAILED";
  selector: string;
  bounceDomain: string;
  records: DomainRecord[];
  /** The server's own records (SPF of MAILSVC_HOSTNAME), shown with every domain. */
  serverRecords: DomainRecord[];
  verifiedAt: string | null;
  lastCheckedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export const recordOf = (d: DomainView, purpose: DomainRecord["purpose"]) => d.records.find((r) => r.purpose === purpose)!;

/** Publishes the records the API asked for (all of them, or only the listed purposes). */
export function publishRecords(dns: TestDns, d: DomainView, purposes: DomainRecord["purpose"][] = ["dkim", "spf", "return-path", "dmarc"]) {
  const txt = new Map<string, (string | string[])[]>();
  for (const r of d.records) {
    if (!purposes.includes(r.purpose)) continue;
    if (r.type === "MX") dns.set(r.name, "MX", [{ exchange: r.value, priority: r.priority ?? 10 }]);
    else {
      // A 2048-bit DKIM value is longer than one 255-byte TXT string: publish it as several, like a real zone.
      const chunks: string[] = [];
      for (let i = 0; i < r.value.length; i += 255) chunks.push(r.value.slice(i, i + 255));
      txt.set(r.name, [...(txt.get(r.name) ?? []), chunks.length > 1 ? chunks : chunks[0]!]);
    }
  }
  for (const [name, values] of txt) dns.set(name, "TXT", values);
}

/** Adds `domain` to the project, publishes its records and verifies it; returns the VERIFIED domain. */
export async function addVerifiedDomain(api: Api, dns: TestDns, auth: { secretKey: string; projectId: string }, domain: string): Promise<DomainView> {
  const created = await api<DomainView>("/domains", { key: auth.secretKey, body: { projectId: auth.projectId, domain } });
  if (created.status !== 201) throw new Error(`add domain failed: ${created.status} ${created.text}`);
  publishRecords(dns, created.body);
  const verified = await api<DomainView>(`/domains/${created.body.id}/verify`, { key: auth.secretKey });
  if (verified.body.status !== "VERIFIED") throw new Error(`domain did not verify: ${verified.text}`);
  return verified.body;
}

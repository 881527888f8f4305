// Sandbox test helpers: a project turned into a sandbox through the API, a sender domain added but
// never verified, and mailauth's DKIM verdict with the domain's records served by the test's DNS
// only for that check.
import { Resolver } from "node:dns/promises";
import { dkimVerify } from "mailauth/lib/dkim/verify";
import type { DomainView } from "../domains/support";
import { publishRecords } from "../domains/support";
import type { DeliveryEnv } from "../support/delivery";
import type { Account, Api } from "../support/server";

/** PATCH /users/@me/projects/:id { sandbox } as the project's owner; returns the project object. */
export async function setSandbox(api: Api, acct: Account, sandbox: boolean) {
  const r = await api(`/users/@me/projects/${acct.projectId}`, { method: "PATCH", cookie: acct.cookie, body: { sandbox } });
  if (r.status !== 200) throw new Error(`PATCH sandbox: ${r.status} ${r.text}`);
  return r.body as { id: string; sandbox: boolean; [k: string]: unknown };
}

/** POST /domains without publishing anything: the domain stays PENDING. */
export async function addUnverifiedDomain(api: Api, acct: Account, domain: string): Promise<DomainView> {
  const r = await api<DomainView>("/domains", { key: acct.secretKey, body: { projectId: acct.projectId, domain } });
  if (r.status !== 201) throw new Error(`add domain: ${r.status} ${r.text}`);
  return r.body;
}

/**
 * mailauth's DKIM results for `raw`, the domain's records published in the test DNS for this
 * check and removed after it (the sandbox itself never looked them up).
 */
export async function dkimWithPublishedRecords(env: DeliveryEnv, domain: DomainView, raw: Buffer) {
  publishRecords(env.dns, domain, ["dkim"]);
  try {
    const r = new Resolver();
    r.setServers([env.dns.server]);
    const resolver = async (name: string, type: string): Promise<unknown> => {
      if (type === "TXT") return [[(await r.resolveTxt(name)).flat().join("")]];
      return r.resolve(name, type as "MX");
    };
    const res = (await dkimVerify(raw, { resolver } as never)) as { results: { status: { result: string }; signingDomain: string; selector: string }[] };
    return res.results;
  } finally {
    for (const rec of domain.records) if (rec.purpose === "dkim") env.dns.remove(rec.name, "TXT");
  }
}

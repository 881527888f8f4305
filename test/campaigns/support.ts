// Campaign test helpers: contacts through the API, a campaign body, waiting for a status.
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER } from "../send/support";

export { RCPT, SENDER };

export async function addContacts(env: DeliveryEnv, list: { email: string; subscribed?: boolean; data?: Record<string, unknown> }[]) {
  const ids: string[] = [];
  for (const c of list) {
    const r = await env.srv.api("/contacts", { key: env.acct.secretKey, body: c });
    if (r.status !== 200 && r.status !== 201) throw new Error(`contact ${c.email}: ${r.status} ${r.text}`);
    ids.push(r.body.id);
  }
  return ids;
}

export function campaignBody(over: Record<string, unknown> = {}) {
  return {
    name: "Spring news",
    subject: "Hello {{firstName ?? \"there\"}}",
    body: "<html><body><p>Hi {{firstName}}, plan {{plan}}. <a href=\"https://example.com/spring\">Read</a></p></body></html>",
    from: `news@${SENDER}`,
    fromName: "News",
    audienceType: "ALL",
    ...over,
  };
}

export async function createCampaign(env: DeliveryEnv, over: Record<string, unknown> = {}) {
  const r = await env.srv.api("/campaigns", { key: env.acct.secretKey, body: campaignBody(over) });
  if (r.status !== 201) throw new Error(`create campaign: ${r.status} ${r.text}`);
  return r.body.data as { id: string; status: string; [k: string]: unknown };
}

export async function getCampaign(env: DeliveryEnv, id: string) {
  const r = await env.srv.api(`/campaigns/${id}`, { key: env.acct.secretKey });
  if (r.status !== 200) throw new Error(`get campaign: ${r.status} ${r.text}`);
  return r.body;
}

export async function waitForCampaign(env: DeliveryEnv, id: string, status: string, timeoutMs = 15_000) {
  const t0 = Date.now();
  for (;;) {
    const c = await getCampaign(env, id);
    if (c.status === status) return c;
    if (Date.now() - t0 > timeoutMs) throw new Error(`campaign ${id}: expected ${status}, still ${c.status}`);
    await Bun.sleep(25);
  }
}

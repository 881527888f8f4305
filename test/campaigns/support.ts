// Campaign test helpers: contacts through the API, a campaign body, waiting for a status.
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER } from "../send/support";
import { waitFor } from "../support/wait";

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

/** Polls until the campaign reaches `status`; returns it. */
export function waitForCampaign(env: DeliveryEnv, id: string, status: string, timeoutMs = 15_000) {
  return waitFor(() => getCampaign(env, id), { until: (c) => c.status === status, timeoutMs, what: `campaign ${id} ${status}` });
}

// Campaign sends and workflow emails charge their billing category (decisions.md "Billing"):
// a campaign send over the cap is 402 before any fan-out; a workflow email over the cap fails its step.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { expectEnvelope } from "../blackbox/support";
import { addContacts, createCampaign, getCampaign, waitForCampaign } from "../campaigns/support";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv } from "../send/support";
import { waitFor } from "../support/wait";

setDefaultTimeout(30_000);

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

const limits = (body: Record<string, number | null>) =>
  env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-limits`, { method: "PUT", cookie: env.acct.cookie, body });

test("a campaign whose audience would pass the campaigns cap is refused with 402 and sends nothing; within the cap it goes", async () => {
  const key = env.acct.secretKey;
  await addContacts(env, [1, 2, 3].map((i) => ({ email: `cap${i}@${RCPT}` })));
  expect((await limits({ campaigns: 2 })).status).toBe(200);
  const c = await createCampaign(env);
  const r = await env.srv.api(`/campaigns/${c.id}/send`, { key, method: "POST" });
  expectEnvelope(r, 402, "BILLING_LIMIT_EXCEEDED");
  expect(r.body.error.details).toMatchObject({ category: "campaigns", used: 0, limit: 2 });
  expect((await getCampaign(env, c.id)).status).toBe("DRAFT");
  expect((await env.srv.api(`/emails?campaignId=${c.id}`, { key })).body.data).toEqual([]);

  expect((await limits({ campaigns: 3 })).status).toBe(200);
  expect((await env.srv.api(`/campaigns/${c.id}/send`, { key, method: "POST" })).status).toBe(200);
  await waitForCampaign(env, c.id, "SENT");
  const used = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-consumption`, { cookie: env.acct.cookie });
  expect(used.body.campaigns).toMatchObject({ used: 3, limit: 3 });
});

test("a workflow email over the workflows cap fails its step; nothing is queued", async () => {
  const key = env.acct.secretKey;
  expect((await limits({ workflows: 0 })).status).toBe(200);
  const tpl = await env.srv.api("/templates", { key, body: { name: "Welcome", subject: "Hi", body: "<p>Hi</p>", from: `hello@${SENDER}`, type: "TRANSACTIONAL" } });
  expect(tpl.status).toBe(201);
  const wf = (await env.srv.api("/workflows", { key, body: { name: "Welcome", triggerConfig: { eventName: "signup" } } })).body;
  expect((await env.srv.api(`/workflows/${wf.id}/steps`, { key, body: { type: "SEND_EMAIL", config: { templateId: tpl.body.id } } })).status).toBe(201);
  expect((await env.srv.api(`/workflows/${wf.id}`, { key, method: "PATCH", body: { enabled: true } })).status).toBe(200);
  await addContacts(env, [{ email: `wfcap@${RCPT}` }]);
  const ex = await env.srv.api(`/workflows/${wf.id}/executions`, { key, body: { email: `wfcap@${RCPT}` } });
  expect(ex.status).toBe(201);
  const execution = async () => {
    await env.srv.drainJobs();
    return (await env.srv.api(`/workflows/${wf.id}/executions/${ex.body.id}`, { key })).body;
  };
  const got = await waitFor(execution, { until: (e) => e.status === "FAILED" || e.status === "COMPLETED", intervalMs: 50, what: "the execution to end" });
  expect(got.status).toBe("FAILED");
  expect(got.steps[0]).toMatchObject({ type: "SEND_EMAIL", status: "FAILED" });
  expect(got.steps[0].error).toContain("cap");
  expect((await env.srv.api(`/emails?to=wfcap@${RCPT}`, { key })).body.data).toEqual([]);
});

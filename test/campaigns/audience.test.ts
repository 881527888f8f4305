// SEGMENT and FILTERED audiences (through the condition compiler): exact recipient sets at the
// sink, 422 paths for bad trees, empty audience 400, unsubscribed contacts never in MARKETING.
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { sendEnv } from "../send/support";
import { addContacts, createCampaign, RCPT, waitForCampaign } from "./support";

let env: DeliveryEnv;
let key: string;
let ids: string[];
beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
  ids = await addContacts(env, [
    { email: `p1@${RCPT}`, data: { plan: "pro", seats: 10 } },
    { email: `p2@${RCPT}`, data: { plan: "pro", seats: 2 } },
    { email: `f1@${RCPT}`, data: { plan: "free", seats: 1 } },
    { email: `pu@${RCPT}`, subscribed: false, data: { plan: "pro", seats: 50 } },
  ]);
});
afterAll(() => env.close());

const api = (path: string, opts: Parameters<DeliveryEnv["srv"]["api"]>[1] = {}) => env.srv.api(path, { key, ...opts });
const proTree = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };

/** A STATIC segment of these contacts, through the API. */
async function staticSegment(name: string, contactIds: string[]): Promise<string> {
  const r = await api("/segments", { body: { name, type: "STATIC" } });
  expect(r.status).toBe(201);
  const emails = (await env.srv.ctx.db.selectFrom("contacts").select("email").where("id", "in", contactIds).execute()).map((c) => c.email);
  const members = await api(`/segments/${r.body.id}/members`, { body: { emails } });
  expect(members.body).toEqual({ added: emails.length, created: 0, notFound: [] });
  return r.body.id;
}

test("FILTERED: the contacts matching audienceCondition at fan-out time, subscribed only for MARKETING", async () => {
  env.sink.reset();
  const c = await createCampaign(env, { audienceType: "FILTERED", audienceCondition: proTree });
  expect(c.audienceCondition).toEqual(proTree);
  await api(`/campaigns/${c.id}/send`, { method: "POST" });
  const done = await waitForCampaign(env, c.id, "SENT");
  expect(env.sink.messages.flatMap((m) => m.to).sort()).toEqual([`p1@${RCPT}`, `p2@${RCPT}`]);
  expect(done.totalRecipients).toBe(2);

  env.sink.reset();
  const gt = { logic: "AND", groups: [{ filters: [{ field: "data.seats", operator: "greaterThan", value: 5 }] }] };
  const t = await createCampaign(env, { type: "TRANSACTIONAL", audienceType: "FILTERED", audienceCondition: gt });
  await api(`/campaigns/${t.id}/send`, { method: "POST" });
  await waitForCampaign(env, t.id, "SENT");
  expect(env.sink.messages.flatMap((m) => m.to).sort()).toEqual([`p1@${RCPT}`, `pu@${RCPT}`]);
}, 30_000);

test("FILTERED validation: 422 with errors[].field under audienceCondition; empty match is 400 on send", async () => {
  const bad = await api("/campaigns", {
    body: { name: "x", subject: "s", body: "<p>b</p>", from: "news@sender.test", audienceType: "FILTERED", audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "nope", value: 1 }] }] } },
  });
  expect(bad.status).toBe(422);
  expect(bad.body.error.errors[0].field).toBe("audienceCondition.groups[0].filters[0].operator");
  const none = await createCampaign(env, { audienceType: "FILTERED", audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "enterprise" }] }] } });
  const r = await api(`/campaigns/${none.id}/send`, { method: "POST" });
  expect(r.status).toBe(400);
  expect((await api(`/campaigns/${none.id}`)).body.status).toBe("DRAFT");
});

test("SEGMENT: the segment's members (subscribed ones for MARKETING); segment delete refused while the campaign is active", async () => {
  env.sink.reset();
  const seg = await staticSegment("Picked", [ids[0]!, ids[2]!, ids[3]!]);
  const bad = await api("/campaigns", { body: { name: "x", subject: "s", body: "<p>b</p>", from: "news@sender.test", audienceType: "SEGMENT", segmentId: "0190a0a0-0000-7000-8000-000000000000" } });
  expect(bad.status).toBe(422);
  expect(bad.body.error.errors[0].field).toBe("segmentId");

  const c = await createCampaign(env, { audienceType: "SEGMENT", segmentId: seg });
  expect(c.segmentId).toBe(seg);
  const at = new Date(env.srv.clock.now() + 60_000).toISOString();
  expect((await api(`/campaigns/${c.id}/send`, { body: { scheduledFor: at } })).status).toBe(200);
  const del = await api(`/segments/${seg}`, { method: "DELETE" });
  expect(del.status).toBe(409);
  expect(del.body.error.code).toBe("INVALID_STATE");
  env.srv.clock.advance(61_000);
  env.srv.ctx.jobs.wake();
  await waitForCampaign(env, c.id, "SENT");
  expect(env.sink.messages.flatMap((m) => m.to).sort()).toEqual([`f1@${RCPT}`, `p1@${RCPT}`]);
}, 30_000);

test("segment delete refused while a FILTERED campaign's condition uses it (memberOfSegment); allowed once the campaign is cancelled", async () => {
  const seg = await staticSegment("Referenced", [ids[0]!]);
  const tree = { logic: "AND", groups: [{ filters: [{ field: `segment.${seg}`, operator: "memberOfSegment" }] }] };
  const c = await createCampaign(env, { audienceType: "FILTERED", audienceCondition: tree });
  // A DRAFT does not hold the segment.
  const at = new Date(env.srv.clock.now() + 3_600_000).toISOString();
  expect((await api(`/campaigns/${c.id}/send`, { body: { scheduledFor: at } })).status).toBe(200);
  const del = await api(`/segments/${seg}`, { method: "DELETE" });
  expect(del.status).toBe(409);
  expect(del.body.error.code).toBe("INVALID_STATE");
  expect((await api(`/segments/${seg}`)).status).toBe(200);
  expect((await api(`/campaigns/${c.id}/cancel`, { method: "POST" })).status).toBe(200);
  expect((await api(`/segments/${seg}`, { method: "DELETE" })).status).toBe(200);
  expect((await api(`/segments/${seg}`)).status).toBe(404);
});

test("usage endpoints name the campaigns: field, event, template", async () => {
  const tree = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }, { field: "event.signup", operator: "triggered" }] }] };
  const tpl = await api("/templates", { body: { name: "T", subject: "s", body: "<p>b</p>", from: "news@sender.test" } });
  expect(tpl.status).toBe(201);
  const c = await createCampaign(env, { name: "Uses", audienceType: "FILTERED", audienceCondition: tree, templateId: tpl.body.id });
  const field = await api("/contacts/fields/plan/usage");
  expect(field.body.campaigns).toContainEqual({ id: c.id, name: "Uses", status: "DRAFT" });
  const ev = await api("/events/signup/usage");
  expect(ev.body.campaigns).toContainEqual({ id: c.id, name: "Uses", status: "DRAFT" });
  const t = await api(`/templates/${tpl.body.id}/usage`);
  expect(t.body.campaigns).toContainEqual({ id: c.id, name: "Uses", status: "DRAFT" });
});

test("only the audience a campaign sends to holds a segment: a segmentId or condition kept from another audienceType does not block its delete", async () => {
  const seg = await staticSegment("Left behind", [ids[0]!]);
  const tree = { logic: "AND", groups: [{ filters: [{ field: `segment.${seg}`, operator: "memberOfSegment" }] }] };
  // SEGMENT then switched to ALL, keeping the segmentId and a condition naming the segment.
  const c = await createCampaign(env, { audienceType: "SEGMENT", segmentId: seg });
  expect((await api(`/campaigns/${c.id}`, { method: "PUT", body: { audienceType: "ALL", audienceCondition: tree } })).status).toBe(200);
  const at = new Date(env.srv.clock.now() + 3_600_000).toISOString();
  expect((await api(`/campaigns/${c.id}/send`, { body: { scheduledFor: at } })).status).toBe(200);
  expect((await api(`/segments/${seg}`, { method: "DELETE" })).status).toBe(200);
  expect((await api(`/campaigns/${c.id}/cancel`, { method: "POST" })).status).toBe(200);
});

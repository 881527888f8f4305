// Event triggers (client and system events through the event feed), WAIT_FOR_EVENT both ways,
// re-entry on triggers, and the welcome email rendered with the triggering event's data.
import { rawAll } from "../../src/db/raw";
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv } from "../send/support";
import { addStep, chain, contact, createWorkflow, executions, link, must, waitForExecution, waitForExecutions, type Ctx } from "./support";

let env: DeliveryEnv;
let c: Ctx;
let templateId: string;

beforeAll(async () => {
  env = await sendEnv();
  c = { api: env.srv.api, key: env.acct.secretKey };
  templateId = (
    await must(c.api("/templates", { key: c.key, body: { name: "Welcome", subject: "Welcome {{firstName ?? \"there\"}}", body: "<p>Thanks for {{event.plan}} order {{event.orderId}}</p>", from: `hello@${SENDER}`, type: "TRANSACTIONAL" } }), 201)
  ).id;
}, 30_000);
afterAll(() => env?.close());

const track = (email: string, event: string, data: Record<string, unknown> = {}) =>
  must(c.api("/v1/track", { key: env.acct.publicKey, body: { email, event, data } }), 200);

test("a tracked event starts the enabled workflow: the welcome email is rendered with the event data", async () => {
  const wf = await chain(c, [["SEND_EMAIL", { templateId }]], { eventName: "signed-up" });
  const disabled = await chain(c, [["SEND_EMAIL", { templateId }]], { eventName: "signed-up", enable: false });
  await track(`welcome@${RCPT}`, "signed-up", { firstName: "Grace", plan: { value: "pro", persistent: false }, orderId: 42 });
  const list = await waitForExecutions(c, wf.id, 1);
  const ex = await waitForExecution(c, wf.id, list.data[0].id, "COMPLETED");
  expect(ex.triggerEvent).toMatchObject({ name: "signed-up", data: { plan: "pro", orderId: 42 } });
  const [msg] = await env.sink.waitFor(1);
  const parsed = await msg!.parse();
  expect(parsed.subject).toBe("Welcome Grace");
  expect(parsed.html).toContain("Thanks for pro order 42");
  // The disabled workflow did not start; an unrelated event starts nothing.
  await track(`welcome@${RCPT}`, "other-event");
  await env.srv.drainJobs();
  expect((await executions(c, disabled.id)).total).toBe(0);
  expect((await executions(c, wf.id)).total).toBe(1);
});

test("CONDITION on event.* of the triggering event: both branches", async () => {
  const wf = await createWorkflow(c, { triggerConfig: { eventName: "order" } });
  const cond = await addStep(c, wf.id, "CONDITION", { field: "event.total", operator: "greaterThan", value: 100 });
  const big = await addStep(c, wf.id, "UPDATE_CONTACT", { updates: { segment: "big" } });
  const small = await addStep(c, wf.id, "UPDATE_CONTACT", { updates: { segment: "small" } });
  await link(c, wf.id, cond.id, big.id, "yes");
  await link(c, wf.id, cond.id, small.id, "no");
  await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { enabled: true, allowReentry: true } }), 200);
  await track(`big@${RCPT}`, "order", { total: { value: 250, persistent: false } });
  await track(`small@${RCPT}`, "order", { total: { value: 20, persistent: false } });
  const list = await waitForExecutions(c, wf.id, 2, "COMPLETED");
  expect(list.total).toBe(2);
  const segOf = async (email: string) => (await must(c.api(`/contacts?search=${email}`, { key: c.key }), 200)).data[0].data.segment;
  expect(await segOf("big@")).toBe("big");
  expect(await segOf("small@")).toBe("small");
});

test("system events trigger workflows: contact.unsubscribed from PATCH /contacts", async () => {
  const wf = await chain(c, [["UPDATE_CONTACT", { updates: { churned: true } }]], { eventName: "contact.unsubscribed" });
  const ct = await contact(c, `leaver@${RCPT}`);
  await must(c.api(`/contacts/${ct.id}`, { method: "PATCH", key: c.key, body: { subscribed: false } }), 200);
  const list = await waitForExecutions(c, wf.id, 1);
  await waitForExecution(c, wf.id, list.data[0].id, "COMPLETED");
  expect((await must(c.api(`/contacts/${ct.id}`, { key: c.key }), 200)).data).toMatchObject({ churned: true });
});

test("a workflow's UPDATE_CONTACT moves the contact into a tracked segment, whose entry event starts another workflow", async () => {
  const seg = await must(c.api("/segments", { key: c.key, body: { name: "Pro users", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } } }), 201);
  expect(seg.slug).toBe("pro-users");
  const upgrade = await chain(c, [["UPDATE_CONTACT", { updates: { plan: "pro" } }]], { eventName: "upgraded" });
  const welcome = await chain(c, [["UPDATE_CONTACT", { updates: { welcomedPro: true } }]], { eventName: "segment.pro-users.entry" });
  await track(`upgrader@${RCPT}`, "upgraded");
  await waitForExecutions(c, upgrade.id, 1, "COMPLETED");
  await waitForExecutions(c, welcome.id, 1, "COMPLETED", 15_000);
  const ct = (await must(c.api(`/contacts?search=upgrader@`, { key: c.key }), 200)).data[0];
  expect(ct.data).toMatchObject({ plan: "pro", welcomedPro: true });
});

test("re-entry on triggers: off starts once per contact, on starts again after the first finished", async () => {
  const once = await chain(c, [["EXIT", {}]], { eventName: "visit" });
  const again = await chain(c, [["EXIT", {}]], { eventName: "visit", allowReentry: true });
  await track(`visitor@${RCPT}`, "visit");
  await waitForExecutions(c, once.id, 1, "EXITED");
  await waitForExecutions(c, again.id, 1, "EXITED");
  await track(`visitor@${RCPT}`, "visit");
  await waitForExecutions(c, again.id, 2, "EXITED");
  await env.srv.drainJobs();
  expect((await executions(c, once.id)).total).toBe(1);
  expect((await executions(c, again.id)).total).toBe(2);
});

test("a start committed while the starts job is still running is walked too (sequential and burst starts)", async () => {
  // Each start is tracked as soon as the previous one has exited: it lands while the job that walked
  // the previous one may still be finishing (its last look, its pause). Then bursts of concurrent tracks.
  const wf = await chain(c, [["EXIT", {}]], { eventName: "burst", allowReentry: true });
  let sent = 0;
  for (let i = 0; i < 12; i++) {
    await track(`seq${i}@${RCPT}`, "burst");
    await waitForExecutions(c, wf.id, ++sent, "EXITED");
  }
  for (let round = 0; round < 4; round++) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => track(`burst${round}-${i}@${RCPT}`, "burst")));
    sent += 10;
  }
  await waitForExecutions(c, wf.id, sent, "EXITED");
});

test("WAIT_FOR_EVENT: the awaited event of the same contact takes the event branch; the timeout takes the other", async () => {
  const wf = await createWorkflow(c, { triggerConfig: { eventName: "trial-started" } });
  const wait = await addStep(c, wf.id, "WAIT_FOR_EVENT", { eventName: "paid", timeout: 3600 });
  const thanks = await addStep(c, wf.id, "UPDATE_CONTACT", { updates: { outcome: "paid" } });
  const nudge = await addStep(c, wf.id, "UPDATE_CONTACT", { updates: { outcome: "timeout" } });
  await link(c, wf.id, wait.id, thanks.id, "event");
  await link(c, wf.id, wait.id, nudge.id, "timeout");
  await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { enabled: true } }), 200);

  // A "paid" event before the trial started does not count.
  await track(`payer@${RCPT}`, "paid");
  await track(`payer@${RCPT}`, "trial-started");
  await track(`idle@${RCPT}`, "trial-started");
  const list = await waitForExecutions(c, wf.id, 2);
  const byEmail = async (email: string) => {
    const ct = (await must(c.api(`/contacts?search=${email}`, { key: c.key }), 200)).data[0];
    return list.data.find((e: any) => e.contactId === ct.id);
  };
  const payer = await byEmail("payer@");
  const idle = await byEmail("idle@");
  await waitForExecution(c, wf.id, payer.id, "WAITING");
  const w2 = await waitForExecution(c, wf.id, idle.id, "WAITING");
  expect(w2.waitingFor).toBe("paid");
  await env.srv.drainJobs();
  expect((await must(c.api(`/workflows/${wf.id}/executions/${payer.id}`, { key: c.key }), 200)).status).toBe("WAITING");

  // Another contact's "paid" resumes nobody else; the payer's own does.
  await track(`someone@${RCPT}`, "paid");
  await track(`payer@${RCPT}`, "paid", { amount: 10 });
  const paid = await waitForExecution(c, wf.id, payer.id, "COMPLETED");
  expect(paid.steps.map((s: any) => [s.type, s.status])).toEqual([
    ["WAIT_FOR_EVENT", "COMPLETED"],
    ["UPDATE_CONTACT", "COMPLETED"],
  ]);
  expect(paid.steps[0].output.event.name).toBe("paid");
  expect((await must(c.api(`/workflows/${wf.id}/executions/${idle.id}`, { key: c.key }), 200)).status).toBe("WAITING");

  env.srv.clock.advance(3601 * 1000);
  const timedOut = await waitForExecution(c, wf.id, idle.id, "COMPLETED");
  expect(timedOut.steps[0].output).toEqual({ timedOut: true });
  const idleContact = (await must(c.api(`/contacts?search=idle@`, { key: c.key }), 200)).data[0];
  expect(idleContact.data.outcome).toBe("timeout");
  const payerContact = (await must(c.api(`/contacts?search=payer@`, { key: c.key }), 200)).data[0];
  expect(payerContact.data.outcome).toBe("paid");
});

test("deleting a contact deletes its executions, found through an index (no scan of every execution)", async () => {
  const wf = await chain(c, [["EXIT", {}]], { eventName: "to-delete" });
  await track(`gone@${RCPT}`, "to-delete");
  await waitForExecutions(c, wf.id, 1);
  const who = await must(c.api(`/contacts?search=${encodeURIComponent(`gone@${RCPT}`)}`, { key: c.key }), 200);
  const id = who.data[0].id as string;
  await must(c.api(`/contacts/${id}`, { method: "DELETE", key: c.key }), 204);
  expect((await executions(c, wf.id)).total).toBe(0);
  // The cascade looks the executions up by contact_id (migration 018): SQLite's plan says so; on
  // PostgreSQL (whose planner scans a table this small anyway) the index is there to be used.
  const { db, store } = env.srv.ctx;
  if (store.engine === "sqlite") {
    const plan = await rawAll<{ detail: string }>(db, "sqlite", "EXPLAIN QUERY PLAN SELECT id FROM workflow_executions WHERE contact_id = ?", ["x"]);
    expect(plan.map((p) => p.detail).join(" ")).toContain("USING INDEX workflow_executions_contact (contact_id=?)");
  } else {
    const idx = await rawAll<{ indexdef: string }>(db, "postgres", "SELECT indexdef FROM pg_indexes WHERE indexname = 'workflow_executions_contact'");
    expect(idx.map((i) => i.indexdef)).toEqual([expect.stringContaining("(contact_id, ")]);
  }
});

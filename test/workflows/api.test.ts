// Graph CRUD with every validation, the structural lock, manual executions through the engine
// (DELAY, SEND_EMAIL, UPDATE_CONTACT, CONDITION, EXIT), cancel, re-entry, upcoming, isolation.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sendEnv, SENDER, RCPT } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";
import { createAccount } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { addStep, chain, contact, createWorkflow, executions, link, must, start, waitForExecution, type Ctx } from "./support";

let env: DeliveryEnv;
let c: Ctx;
let templateId: string;
let marketingId: string;

beforeAll(async () => {
  env = await sendEnv();
  c = { api: env.srv.api, key: env.acct.secretKey };
  templateId = (
    await must(c.api("/templates", { key: c.key, body: { name: "Welcome", subject: "Hi {{firstName}} ({{workflow.plan}})", body: "<p>Welcome {{email}}, you did {{event.what}}</p>", from: `hello@${SENDER}`, type: "TRANSACTIONAL" } }), 201)
  ).id;
  marketingId = (await must(c.api("/templates", { key: c.key, body: { name: "News", subject: "News", body: "<p>news</p>", from: `hello@${SENDER}` } }), 201)).id;
}, 30_000);
afterAll(() => env?.close());

/** An enabled MANUAL workflow: CONDITION `tree`, then EXIT "yes" or EXIT "no" (the exit reason tells the branch). */
async function yesNo(tree: unknown) {
  const wf = await createWorkflow(c);
  const cond = await addStep(c, wf.id, "CONDITION", tree);
  const yes = await addStep(c, wf.id, "EXIT", { reason: "yes" });
  const no = await addStep(c, wf.id, "EXIT", { reason: "no" });
  await link(c, wf.id, cond.id, yes.id, "yes");
  await link(c, wf.id, cond.id, no.id, "no");
  await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { triggerType: "MANUAL", enabled: true } }), 200);
  return wf;
}

describe("workflow CRUD", () => {
  test("create is always EVENT and disabled; get has steps and transitions", async () => {
    const r = await c.api("/workflows", { key: c.key, body: { name: "W", triggerType: "MANUAL", enabled: true, triggerConfig: { eventName: "signup" } } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: "W", triggerType: "EVENT", enabled: false, allowReentry: false, entryStepId: null, triggerConfig: { eventName: "signup" }, projectId: env.acct.projectId });
    const got = await must(c.api(`/workflows/${r.body.id}`, { key: c.key }), 200);
    expect(got.steps).toEqual([]);
    expect(got.transitions).toEqual([]);
    const list = await must(c.api("/workflows?search=W&enabled=false", { key: c.key }), 200);
    expect(list).toMatchObject({ page: 1, pageSize: 20 });
    expect(list.data.some((w: any) => w.id === r.body.id)).toBe(true);
    expect((await c.api("/workflows?enabled=maybe", { key: c.key })).status).toBe(400);
    expect((await c.api("/workflows", { key: c.key, body: {} })).status).toBe(422);
  });

  test("step validation: 422 for each bad config, unknown type, missing template", async () => {
    const wf = await createWorkflow(c);
    const bad: [string, unknown, string][] = [
      ["SEND_EMAIL", {}, "config.templateId"],
      ["SEND_EMAIL", { templateId: "00000000-0000-0000-0000-000000000000" }, "config.templateId"],
      ["DELAY", { amount: 5 }, "config.unit"],
      ["DELAY", { amount: 400, unit: "days" }, "config.amount"],
      ["WAIT_FOR_EVENT", { timeout: 10 }, "config.eventName"],
      ["CONDITION", { operator: "equals" }, "config.field"],
      ["CONDITION", { field: "segment.00000000-0000-4000-8000-000000000000", operator: "memberOfSegment" }, "config.field"],
      ["CONDITION", { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "exists" }, { field: "segment.00000000-0000-4000-8000-000000000000", operator: "notMemberOfSegment" }] }] }, "config.groups[0].filters[1].field"],
      ["WEBHOOK", { url: "not a url" }, "config.url"],
      ["UPDATE_CONTACT", { subscriptionAction: "toggle" }, "config.subscriptionAction"],
      ["EXIT", { reason: ["x"] }, "config.reason"],
    ];
    for (const [type, config, field] of bad) {
      const r = await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type, config } });
      expect(r.status).toBe(422);
      expect(r.body.error.code).toBe("VALIDATION_ERROR");
      expect(r.body.error.errors.map((e: any) => e.field)).toContain(field);
    }
    const unknown = await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type: "SMS", config: {} } });
    expect(unknown.status).toBe(422);
    expect((await must(c.api(`/workflows/${wf.id}`, { key: c.key }), 200)).steps).toEqual([]);
    // A segment of the project is accepted (the same reference check as segments and campaign audiences).
    const seg = await must(c.api("/segments", { key: c.key, body: { name: "Step audience", type: "STATIC" } }), 201);
    await addStep(c, wf.id, "CONDITION", { field: `segment.${seg.id}`, operator: "memberOfSegment" });
    expect((await c.api(`/segments/${seg.id}`, { method: "DELETE", key: c.key })).status).toBe(200);
  });

  test("first step is the entry step; transitions rules; splice delete", async () => {
    const wf = await createWorkflow(c);
    const a = await addStep(c, wf.id, "DELAY", { amount: 1, unit: "hours" });
    const cond = await addStep(c, wf.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const x = await addStep(c, wf.id, "EXIT", { reason: "done" });
    const u = await addStep(c, wf.id, "UPDATE_CONTACT", { updates: { seen: true } });
    const w = await addStep(c, wf.id, "WAIT_FOR_EVENT", { eventName: "paid", timeout: 60 });
    expect((await must(c.api(`/workflows/${wf.id}`, { key: c.key }), 200)).entryStepId).toBe(a.id);

    const t = async (body: Record<string, unknown>) => c.api(`/workflows/${wf.id}/transitions`, { key: c.key, body });
    const codeOf = async (body: Record<string, unknown>) => {
      const r = await t(body);
      expect(r.status).toBe(422);
      return r.body.error.errors[0].code as string;
    };
    expect(await codeOf({ fromStepId: a.id, toStepId: a.id })).toBe("self_link");
    expect(await codeOf({ fromStepId: a.id, toStepId: cond.id, branch: "yes" })).toBe("invalid_branch");
    expect((await t({ fromStepId: a.id, toStepId: cond.id })).status).toBe(201);
    expect(await codeOf({ fromStepId: a.id, toStepId: x.id })).toBe("too_many_transitions");
    expect(await codeOf({ fromStepId: cond.id, toStepId: x.id })).toBe("invalid_branch");
    expect((await t({ fromStepId: cond.id, toStepId: x.id, branch: "no" })).status).toBe(201);
    expect(await codeOf({ fromStepId: cond.id, toStepId: u.id, branch: "no" })).toBe("duplicate_branch");
    expect((await t({ fromStepId: cond.id, toStepId: u.id, branch: "yes" })).status).toBe(201);
    expect(await codeOf({ fromStepId: x.id, toStepId: u.id })).toBe("exit_step");
    expect(await codeOf({ fromStepId: u.id, toStepId: a.id })).toBe("cycle");
    expect(await codeOf({ fromStepId: w.id, toStepId: x.id, branch: "yes" })).toBe("invalid_branch");
    expect(await codeOf({ fromStepId: "nope", toStepId: x.id })).toBe("not_found");
    expect((await t({ fromStepId: u.id, toStepId: w.id })).status).toBe(201);

    // Splice out the UPDATE_CONTACT: the condition's yes branch now leads to the wait.
    expect((await c.api(`/workflows/${wf.id}/steps/${cond.id}?splice=true`, { method: "DELETE", key: c.key })).status).toBe(422);
    expect((await c.api(`/workflows/${wf.id}/steps/${u.id}?splice=true`, { method: "DELETE", key: c.key })).status).toBe(200);
    const g = await must(c.api(`/workflows/${wf.id}`, { key: c.key }), 200);
    expect(g.steps.map((s: any) => s.id)).not.toContain(u.id);
    expect(g.transitions).toContainEqual(expect.objectContaining({ fromStepId: cond.id, toStepId: w.id, branch: "yes" }));
    // Deleting the entry step with splice: its successor becomes the entry.
    expect((await c.api(`/workflows/${wf.id}/steps/${a.id}?splice=true`, { method: "DELETE", key: c.key })).status).toBe(200);
    expect((await must(c.api(`/workflows/${wf.id}`, { key: c.key }), 200)).entryStepId).toBe(cond.id);
    // Transition delete.
    const tr = (await must(c.api(`/workflows/${wf.id}`, { key: c.key }), 200)).transitions[0];
    expect((await c.api(`/workflows/${wf.id}/transitions/${tr.id}`, { method: "DELETE", key: c.key })).status).toBe(200);
    expect((await c.api(`/workflows/${wf.id}/transitions/${tr.id}`, { method: "DELETE", key: c.key })).status).toBe(404);
    // PATCH entry step to a foreign id.
    const bad = await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { entryStepId: "nope" } });
    expect(bad.status).toBe(422);
    expect((await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { entryStepId: x.id } })).body.entryStepId).toBe(x.id);
  });

  test("enable validation: no entry step, EVENT without eventName", async () => {
    const wf = await createWorkflow(c);
    const r1 = await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { enabled: true } });
    expect(r1.status).toBe(422);
    expect(r1.body.error.errors.map((e: any) => e.field)).toEqual(["entryStepId", "triggerConfig.eventName"]);
    await addStep(c, wf.id, "EXIT", {});
    const r2 = await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { enabled: true } });
    expect(r2.status).toBe(422);
    expect(r2.body.error.errors.map((e: any) => e.field)).toEqual(["triggerConfig.eventName"]);
    const r3 = await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { enabled: true, triggerConfig: { eventName: "signup" } } });
    expect(r3.status).toBe(200);
    expect(r3.body).toMatchObject({ enabled: true, triggerType: "EVENT", triggerConfig: { eventName: "signup" } });
    // An enabled EVENT workflow cannot lose its event name.
    expect((await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { triggerConfig: {} } })).status).toBe(422);
    expect((await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { triggerType: "SMS" } })).status).toBe(422);
  });

  test("manual start on a disabled workflow is 409 INVALID_STATE; missing contact 404; no contact given 422", async () => {
    const wf = await createWorkflow(c);
    await addStep(c, wf.id, "EXIT", {});
    const ct = await contact(c, "disabled@rcpt.test");
    const r = await c.api(`/workflows/${wf.id}/executions`, { key: c.key, body: { contactId: ct.id } });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("INVALID_STATE");
    await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { triggerType: "MANUAL", enabled: true } }), 200);
    expect((await c.api(`/workflows/${wf.id}/executions`, { key: c.key, body: { email: "nobody@rcpt.test" } })).status).toBe(404);
    expect((await c.api(`/workflows/${wf.id}/executions`, { key: c.key, body: {} })).status).toBe(422);
    expect((await c.api(`/workflows/${wf.id}/executions`, { key: c.key, body: { contactId: ct.id, context: [1] } })).status).toBe(422);
    expect((await c.api(`/workflows/${wf.id}/executions?status=BOGUS`, { key: c.key })).status).toBe(400);
  });
});

describe("executions", () => {
  test("DELAY then SEND_EMAIL: waits, shows in upcoming, resumes when due and sends with workflow.* and contact variables", async () => {
    const wf = await chain(c, [
      ["DELAY", { amount: 2, unit: "hours" }],
      ["SEND_EMAIL", { templateId }],
    ]);
    await contact(c, `delay@${RCPT}`, { firstName: "Ada" });
    const ex = await start(c, wf.id, { email: `delay@${RCPT}`, context: { plan: "pro" } });
    expect(ex).toMatchObject({ workflowId: wf.id, status: "RUNNING", currentStepId: wf.steps[0], context: { plan: "pro" }, exitReason: null, completedAt: null });
    const waiting = await waitForExecution(c, wf.id, ex.id, "WAITING");
    expect(waiting.steps).toMatchObject([{ stepId: wf.steps[0], type: "DELAY", status: "WAITING", completedAt: null }]);
    const up = await must(c.api("/activity/upcoming", { key: c.key }), 200);
    const item = (Array.isArray(up) ? up : up.data).find((i: any) => i.id === ex.id);
    expect(item.type).toBe("workflow.execution");
    expect(new Date(item.at).getTime()).toBeGreaterThan(env.srv.clock.now() + 3_500_000);

    // Structural lock while it waits; metadata may change.
    expect((await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type: "EXIT", config: {} } })).status).toBe(409);
    expect((await c.api(`/workflows/${wf.id}/steps/${wf.steps[0]}`, { method: "PATCH", key: c.key, body: { config: { amount: 1, unit: "hours" } } })).status).toBe(409);
    expect((await c.api(`/workflows/${wf.id}/steps/${wf.steps[1]}`, { method: "DELETE", key: c.key })).status).toBe(409);
    const tr = await c.api(`/workflows/${wf.id}/transitions`, { key: c.key, body: { fromStepId: wf.steps[1], toStepId: wf.steps[0] } });
    expect(tr.status).toBe(409);
    expect(tr.body.error.code).toBe("INVALID_STATE");
    expect((await c.api(`/workflows/${wf.id}`, { method: "DELETE", key: c.key })).status).toBe(409);
    expect((await c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { name: "Renamed", allowReentry: true } })).status).toBe(200);

    env.srv.clock.advance(2 * 3_600_000 + 1000);
    const done = await waitForExecution(c, wf.id, ex.id, "COMPLETED");
    expect(done.currentStepId).toBeNull();
    expect(done.steps.map((s: any) => [s.type, s.status])).toEqual([
      ["DELAY", "COMPLETED"],
      ["SEND_EMAIL", "COMPLETED"],
    ]);
    const emailId = done.steps[1].output.emailId;
    const email = await must(c.api(`/emails/${emailId}`, { key: c.key }), 200);
    expect(email).toMatchObject({ sourceType: "WORKFLOW", templateId, to: `delay@${RCPT}` });
    const [msg] = await env.sink.waitFor(1);
    const parsed = await msg!.parse();
    expect(parsed.subject).toBe("Hi Ada (pro)");
    expect(parsed.html).toContain(`Welcome delay@${RCPT}`);
    // Finished: structural edits are allowed again, and delete works.
    expect((await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type: "EXIT", config: {} } })).status).toBe(201);
  });

  test("CONDITION both branches, UPDATE_CONTACT with a subscription flip, EXIT with its reason", async () => {
    const wf = await createWorkflow(c);
    const cond = await addStep(c, wf.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const upd = await addStep(c, wf.id, "UPDATE_CONTACT", { updates: { vip: true, plan: null }, subscriptionAction: "unsubscribe" });
    const ex = await addStep(c, wf.id, "EXIT", { reason: "not pro" });
    await link(c, wf.id, cond.id, upd.id, "yes");
    await link(c, wf.id, cond.id, ex.id, "no");
    await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { triggerType: "MANUAL", enabled: true } }), 200);
    const pro = await contact(c, `pro@${RCPT}`, { plan: "pro" });
    const free = await contact(c, `free@${RCPT}`, { plan: "free" });
    const startedFrom = env.srv.clock.now();
    const e1 = await start(c, wf.id, { contactId: pro.id });
    const e2 = await start(c, wf.id, { contactId: free.id });
    const d1 = await waitForExecution(c, wf.id, e1.id, "COMPLETED");
    expect(d1.steps.map((s: any) => [s.type, s.status, s.output?.result ?? null])).toEqual([
      ["CONDITION", "COMPLETED", true],
      ["UPDATE_CONTACT", "COMPLETED", null],
    ]);
    const after = await must(c.api(`/contacts/${pro.id}`, { key: c.key }), 200);
    expect(after).toMatchObject({ subscribed: false, data: { vip: true } });
    expect(after.data.plan).toBeUndefined();
    const events = await must(c.api(`/events/contact/${pro.id}`, { key: c.key }), 200);
    expect(JSON.stringify(events)).toContain("contact.unsubscribed");
    const d2 = await waitForExecution(c, wf.id, e2.id, "EXITED");
    expect(d2).toMatchObject({ exitReason: "not pro", currentStepId: ex.id });
    expect(d2.steps.map((s: any) => s.status)).toEqual(["COMPLETED", "COMPLETED"]);
    const startedAt = expectTimeBetween(d2.startedAt, startedFrom, env.srv.clock.now());
    expectTimeBetween(d2.completedAt, startedAt, env.srv.clock.now());
  });

  test("CONDITION through the condition compiler: a tree with workflow.* facts and contact fields; invalid trees are 422", async () => {
    const wf = await yesNo({ logic: "OR", groups: [{ filters: [{ field: "workflow.tier", operator: "equals", value: "gold" }] }, { filters: [{ field: "email", operator: "endsWith", value: "@vip.test" }] }] });
    const gold = await contact(c, `gold@${RCPT}`);
    const vip = await contact(c, "boss@vip.test");
    const plain = await contact(c, `plain@${RCPT}`);
    const reasons: string[] = [];
    for (const [ct, context] of [[gold, { tier: "gold" }], [vip, {}], [plain, { tier: "silver" }]] as const) {
      const e = await start(c, wf.id, { contactId: ct.id, context });
      reasons.push((await waitForExecution(c, wf.id, e.id, "EXITED")).exitReason);
    }
    expect(reasons).toEqual(["yes", "yes", "no"]);

    const bad = await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type: "CONDITION", config: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "sortOf", value: 1 }] }] } } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors.map((e: any) => e.field)).toContain("config.groups[0].filters[0].operator");
    const bare = await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type: "CONDITION", config: { field: "data.plan", operator: "sortOf", value: 1 } } });
    expect(bare.status).toBe(422);
    expect(bare.body.error.errors.map((e: any) => e.field)).toContain("config.operator");
    const badField = await c.api(`/workflows/${wf.id}/steps`, { key: c.key, body: { type: "CONDITION", config: { field: "nonsense", operator: "equals", value: 1 } } });
    expect(badField.status).toBe(422);
    expect(badField.body.error.errors.map((e: any) => e.field)).toContain("config.field");
  });

  test("CONDITION over contact data AND an event: decided by the data alone when it can, by the event otherwise", async () => {
    const wf = await yesNo({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }, { field: "event.purchase", operator: "triggered" }] }] });
    // A purchase on a free plan (the data decides: no), a pro that bought (yes), a pro that did not (no).
    const track = (email: string, event: string, data: Record<string, unknown>) => must(c.api("/v1/track", { key: env.acct.publicKey, body: { email, event, data } }), 200);
    await track(`free-buyer@${RCPT}`, "purchase", { plan: "free" });
    await track(`pro-buyer@${RCPT}`, "purchase", { plan: "pro" });
    await track(`pro-browser@${RCPT}`, "page_view", { plan: "pro" });
    const reasons: string[] = [];
    for (const email of [`free-buyer@${RCPT}`, `pro-buyer@${RCPT}`, `pro-browser@${RCPT}`]) {
      const ct = await contact(c, email);
      const e = await start(c, wf.id, { contactId: ct.id });
      reasons.push((await waitForExecution(c, wf.id, e.id, "EXITED")).exitReason);
    }
    expect(reasons).toEqual(["no", "yes", "no"]);
  });

  test("MARKETING email skips an unsubscribed contact and goes on", async () => {
    const wf = await chain(c, [
      ["SEND_EMAIL", { templateId: marketingId }],
      ["UPDATE_CONTACT", { updates: { after: "yes" } }],
    ]);
    const ct = await contact(c, `unsub@${RCPT}`, {}, false);
    const e = await start(c, wf.id, { contactId: ct.id });
    const d = await waitForExecution(c, wf.id, e.id, "COMPLETED");
    expect(d.steps.map((s: any) => s.status)).toEqual(["SKIPPED", "COMPLETED"]);
    const emails = await must(c.api(`/emails?contactId=${ct.id}`, { key: c.key }), 200);
    expect(emails.data).toEqual([]);
  });

  test("re-entry: without it a contact never enters twice (409 CONFLICT); with it only an active execution blocks", async () => {
    const once = await chain(c, [["EXIT", {}]]);
    const ct = await contact(c, `again@${RCPT}`);
    const e = await start(c, once.id, { contactId: ct.id });
    await waitForExecution(c, once.id, e.id, "EXITED");
    const r = await c.api(`/workflows/${once.id}/executions`, { key: c.key, body: { contactId: ct.id } });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("CONFLICT");

    const again = await chain(c, [["DELAY", { amount: 1, unit: "days" }]], { allowReentry: true });
    const a1 = await start(c, again.id, { contactId: ct.id });
    await waitForExecution(c, again.id, a1.id, "WAITING");
    expect((await c.api(`/workflows/${again.id}/executions`, { key: c.key, body: { contactId: ct.id } })).status).toBe(409);
    const cancelled = await must(c.api(`/workflows/${again.id}/executions/${a1.id}`, { method: "DELETE", key: c.key }), 200);
    expect(cancelled.status).toBe("CANCELLED");
    expect(cancelled.steps[0].status).toBe("FAILED");
    expect((await c.api(`/workflows/${again.id}/executions/${a1.id}`, { method: "DELETE", key: c.key })).status).toBe(409);
    const a2 = await start(c, again.id, { contactId: ct.id });
    expect(a2.id).not.toBe(a1.id);
  });

  test("cancel-all cancels every active execution; the resumes never run", async () => {
    const wf = await chain(c, [
      ["DELAY", { amount: 10, unit: "minutes" }],
      ["SEND_EMAIL", { templateId }],
    ]);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const ct = await contact(c, `all${i}@${RCPT}`);
      ids.push((await start(c, wf.id, { contactId: ct.id })).id);
    }
    for (const id of ids) await waitForExecution(c, wf.id, id, "WAITING");
    expect(await must(c.api(`/workflows/${wf.id}/executions/cancel-all`, { key: c.key, method: "POST" }), 200)).toEqual({ cancelled: 3 });
    expect(await must(c.api(`/workflows/${wf.id}/executions/cancel-all`, { key: c.key, method: "POST" }), 200)).toEqual({ cancelled: 0 });
    env.srv.clock.advance(11 * 60_000);
    await env.srv.drainJobs();
    const list = await executions(c, wf.id, "CANCELLED");
    expect(list.total).toBe(3);
    expect((await executions(c, wf.id, "COMPLETED")).total).toBe(0);
    // Nothing active: the workflow can be deleted now.
    expect((await c.api(`/workflows/${wf.id}`, { method: "DELETE", key: c.key })).status).toBe(200);
    expect((await c.api(`/workflows/${wf.id}`, { key: c.key })).status).toBe(404);
  });

  test("template usage names the workflow step; the template cannot be deleted", async () => {
    const usage = await must(c.api(`/templates/${templateId}/usage`, { key: c.key }), 200);
    expect(usage.workflows.length).toBeGreaterThan(0);
    expect(usage.workflows[0]).toHaveProperty("stepId");
    const refused = await c.api(`/templates/${templateId}`, { method: "DELETE", key: c.key });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("INVALID_STATE");
  });

  test("event and field usage name CONDITION steps by what they read: email.<kind> events, not event.<key> of the trigger's data", async () => {
    const wf = await createWorkflow(c, { name: "Usage probe" });
    const opened = await addStep(c, wf.id, "CONDITION", { field: "email.open", operator: "triggered" }, "Opened?");
    const big = await addStep(c, wf.id, "CONDITION", { field: "event.amount", operator: "greaterThan", value: 100 }, "Big order?");
    const tier = await addStep(c, wf.id, "CONDITION", { logic: "AND", groups: [{ filters: [{ field: "data.tier", operator: "equals", value: "gold" }] }] }, "Gold?");
    const mine = (u: { workflows: { id: string; stepId: string }[] }) => u.workflows.filter((w) => w.id === wf.id).map((w) => w.stepId);
    expect(mine(await must(c.api("/events/email.open/usage", { key: c.key }), 200))).toEqual([opened.id]);
    expect(mine(await must(c.api("/events/amount/usage", { key: c.key }), 200))).toEqual([]);
    expect(mine(await must(c.api("/contacts/fields/tier/usage", { key: c.key }), 200))).toEqual([tier.id]);
    expect(big.id).toBeString();
    expect((await c.api(`/workflows/${wf.id}`, { method: "DELETE", key: c.key })).status).toBe(200);
  });

  test("fields lists contact and event fields", async () => {
    const f = await must(c.api("/workflows/fields", { key: c.key }), 200);
    expect(f.standard.map((x: any) => x.name)).toContain("email");
    expect(f.custom.map((x: any) => x.name)).toContain("plan");
  });

  test("tenant isolation: another project sees none of it", async () => {
    const other = await createAccount(c.api, "Other");
    const mine = await createWorkflow(c);
    const step = await addStep(c, mine.id, "EXIT", {});
    const o = { api: c.api, key: other.secretKey };
    expect((await o.api(`/workflows/${mine.id}`, { key: o.key })).status).toBe(404);
    expect((await o.api(`/workflows/${mine.id}`, { method: "PATCH", key: o.key, body: { name: "x" } })).status).toBe(404);
    expect((await o.api(`/workflows/${mine.id}/steps`, { key: o.key, body: { type: "EXIT" } })).status).toBe(404);
    expect((await o.api(`/workflows/${mine.id}/steps/${step.id}`, { method: "DELETE", key: o.key })).status).toBe(404);
    expect((await o.api(`/workflows/${mine.id}/executions`, { key: o.key })).status).toBe(404);
    expect((await o.api("/workflows", { key: o.key })).body.total).toBe(0);
    // A foreign template cannot be used in a step.
    const ow = await createWorkflow(o);
    const r = await o.api(`/workflows/${ow.id}/steps`, { key: o.key, body: { type: "SEND_EMAIL", config: { templateId } } });
    expect(r.status).toBe(422);
    // Nor a foreign contact in a manual start.
    await addStep(o, ow.id, "EXIT", {});
    await must(o.api(`/workflows/${ow.id}`, { method: "PATCH", key: o.key, body: { triggerType: "MANUAL", enabled: true } }), 200);
    const ct = await contact(c, `mine@${RCPT}`);
    expect((await o.api(`/workflows/${ow.id}/executions`, { key: o.key, body: { contactId: ct.id } })).status).toBe(404);
    // The public key is refused.
    expect((await c.api("/workflows", { key: env.acct.publicKey })).status).toBe(401);
  });
});

// Black-box: workflows (records, steps, transitions, executions, the engine's step types, triggers) from
// api-spec.md ("Workflow", "Workflows (sk)"), decisions.md ("Workflows") and the README's "### Workflows".
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManualClock } from "../../src/clock";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { expectEnvelope, expectOffsetPage, expectOk, expectValidation, isIsoDate, newProject, NO_SUCH_ID } from "./support";
import { contactEvents, items } from "../support/api";

const SENDER_DOMAIN = "wf.bb.example";
const FROM = `hello@${SENDER_DOMAIN}`;
const WORKFLOW_KEYS = ["allowReentry", "createdAt", "description", "enabled", "entryStepId", "id", "name", "projectId", "triggerConfig", "triggerType", "updatedAt"];
const EXECUTION_KEYS = ["completedAt", "context", "contactId", "currentStepId", "exitReason", "id", "startedAt", "status", "workflowId"];
const EXECUTION_STATUSES = ["RUNNING", "WAITING", "COMPLETED", "EXITED", "FAILED", "CANCELLED"];

let srv: TestServer;
let dns: TestDns;
let acc: Account;
let hook: ReturnType<typeof Bun.serve>;
const hookRequests: { method: string; url: string; headers: Record<string, string>; body: string }[] = [];
const flaky = new Map<string, number>();

beforeAll(async () => {
  dns = await startDns();
  hook = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      hookRequests.push({ method: req.method, url: req.url, headers: Object.fromEntries(req.headers), body: await req.text() });
      if (url.pathname.startsWith("/bad")) return new Response("nope", { status: 404 });
      if (url.pathname.startsWith("/fail")) return new Response("down", { status: 500 });
      if (url.pathname.startsWith("/flaky")) {
        const n = (flaky.get(url.pathname) ?? 0) + 1;
        flaky.set(url.pathname, n);
        if (n <= 2) return new Response("busy", { status: 503 });
      }
      return new Response(JSON.stringify({ received: true }), { status: 200, headers: { "content-type": "application/json" } });
    },
  });
  srv = await startServer({ config: { dnsServers: [dns.server], allowPrivateWebhooks: true } });
  acc = await createAccount(srv.api, "BB workflows");
  await addVerifiedDomain(srv.api, dns, acc, SENDER_DOMAIN);
});
afterAll(async () => {
  await srv?.close();
  await dns?.close();
  hook?.stop(true);
});

let seq = 0;
const uniq = (p = "w") => `${p}${++seq}-${Date.now()}@wf-bb.example`;

// ---- request helpers (a project is passed explicitly so blocks can spread over projects) ----
const createWf = (body: unknown, who: Account = acc) => srv.api("/workflows", { key: who.secretKey, body });
const getWf = (id: string, who: Account = acc) => srv.api(`/workflows/${id}`, { key: who.secretKey });
const patchWf = (id: string, body: unknown, who: Account = acc) => srv.api(`/workflows/${id}`, { method: "PATCH", key: who.secretKey, body });
const delWf = (id: string, who: Account = acc) => srv.api(`/workflows/${id}`, { method: "DELETE", key: who.secretKey });
const postStep = (wf: string, body: unknown, who: Account = acc) => srv.api(`/workflows/${wf}/steps`, { key: who.secretKey, body });
const patchStep = (wf: string, step: string, body: unknown, who: Account = acc) =>
  srv.api(`/workflows/${wf}/steps/${step}`, { method: "PATCH", key: who.secretKey, body });
const delStep = (wf: string, step: string, splice = false, who: Account = acc) =>
  srv.api(`/workflows/${wf}/steps/${step}${splice ? "?splice=true" : ""}`, { method: "DELETE", key: who.secretKey });
const postLink = (wf: string, body: unknown, who: Account = acc) => srv.api(`/workflows/${wf}/transitions`, { key: who.secretKey, body });
const delLink = (wf: string, id: string, who: Account = acc) => srv.api(`/workflows/${wf}/transitions/${id}`, { method: "DELETE", key: who.secretKey });
const startExec = (wf: string, body: unknown, who: Account = acc) => srv.api(`/workflows/${wf}/executions`, { key: who.secretKey, body });
const getExec = (wf: string, id: string, who: Account = acc) => srv.api(`/workflows/${wf}/executions/${id}`, { key: who.secretKey });
const listExecs = (wf: string, query = "", who: Account = acc) => srv.api(`/workflows/${wf}/executions${query}`, { key: who.secretKey });
const cancelExec = (wf: string, id: string, who: Account = acc) => srv.api(`/workflows/${wf}/executions/${id}`, { method: "DELETE", key: who.secretKey });
const cancelAll = (wf: string, who: Account = acc) => srv.api(`/workflows/${wf}/executions/cancel-all`, { key: who.secretKey, body: {} });

function ok<T = any>(res: { status: number; body: T; text: string }, status?: number): T {
  if (status !== undefined ? res.status !== status : res.status < 200 || res.status > 299) {
    throw new Error(`expected ${status ?? "2xx"}, got ${res.status}: ${res.text}`);
  }
  return res.body;
}

async function wf(body: Record<string, unknown> = {}, who: Account = acc) {
  return ok(await createWf({ name: `Flow ${++seq}`, ...body }, who), 201);
}
async function step(wfId: string, type: string, config: unknown = {}, who: Account = acc, name?: string) {
  return ok(await postStep(wfId, { type, config, ...(name ? { name } : {}) }, who), 201);
}
async function link(wfId: string, fromStepId: string, toStepId: string, branch?: string, who: Account = acc) {
  return ok(await postLink(wfId, { fromStepId, toStepId, ...(branch ? { branch } : {}) }, who), 201);
}
/** A linear workflow of `steps`, enabled (MANUAL unless an eventName is given). */
async function chain(steps: [string, unknown][], opts: { eventName?: string; allowReentry?: boolean; enable?: boolean } = {}, who: Account = acc) {
  const w = await wf({ ...(opts.eventName ? { triggerConfig: { eventName: opts.eventName } } : {}), allowReentry: opts.allowReentry ?? false }, who);
  const ids: string[] = [];
  for (const [type, config] of steps) ids.push((await step(w.id, type, config, who)).id);
  for (let i = 1; i < ids.length; i++) await link(w.id, ids[i - 1]!, ids[i]!, undefined, who);
  if (opts.enable !== false) {
    ok(await patchWf(w.id, opts.eventName ? { enabled: true } : { triggerType: "MANUAL", enabled: true }, who), 200);
  }
  return { id: w.id as string, steps: ids };
}
async function newContact(data: Record<string, unknown> = {}, subscribed = true, who: Account = acc) {
  const res = await srv.api("/contacts", { key: who.secretKey, body: { email: uniq(), data, subscribed } });
  expectOk(res);
  return res.body as { id: string; email: string; data: Record<string, unknown>; subscribed: boolean };
}
const contactOf = async (id: string, who: Account = acc) => ok(await srv.api(`/contacts/${id}`, { key: who.secretKey }), 200);
const eventsOf = (contactId: string, who: Account = acc) => contactEvents(srv.api, who, contactId);

/** Polls the execution (running queued work first) until its status is one of `want`. */
function waitExec(wfId: string, id: string, want: string | string[], who: Account = acc) {
  const statuses = [want].flat();
  return waitFor(
    async () => {
      await srv.drainJobs();
      return ok(await getExec(wfId, id, who), 200);
    },
    { until: (e: any) => statuses.includes(e.status), what: `execution ${id} ${statuses.join("|")}` },
  );
}
/** Polls the execution list of a workflow until `until` holds. */
function waitExecs(wfId: string, until: (rows: any[]) => boolean, who: Account = acc, what = "executions") {
  return waitFor(
    async () => {
      await srv.drainJobs();
      return items(ok(await listExecs(wfId, "?pageSize=100", who), 200));
    },
    { until, what: `${what} of workflow ${wfId}` },
  );
}

// ---------------------------------------------------------------------------------------------------------------

describe("POST /workflows", () => {
  test("201 with the workflow object directly; triggerType EVENT and enabled false whatever the body says; steps [] and transitions []", async () => {
    const from = srv.clock.now();
    const res = await createWf({
      name: "Welcome series",
      description: "new signups",
      triggerType: "MANUAL",
      enabled: true,
      triggerConfig: { eventName: "signed_up" },
      allowReentry: true,
    });
    expect(res.status).toBe(201);
    expect(res.body.success).toBeUndefined();
    for (const k of WORKFLOW_KEYS) expect(res.body).toHaveProperty(k);
    expect(res.body).toMatchObject({
      name: "Welcome series",
      description: "new signups",
      triggerType: "EVENT",
      enabled: false,
      allowReentry: true,
      entryStepId: null,
      projectId: acc.projectId,
    });
    expect(res.body.triggerConfig).toMatchObject({ eventName: "signed_up" });
    expect(typeof res.body.id).toBe("string");
    expectTimeBetween(res.body.createdAt, from, srv.clock.now());
    expect(isIsoDate(res.body.updatedAt)).toBe(true);
    expect(res.body.steps).toEqual([]);
    expect(res.body.transitions).toEqual([]);
  });

  test("allowReentry defaults to false; name is required (422 naming it)", async () => {
    const w = await wf();
    expect(w.allowReentry).toBe(false);
    expect(w.enabled).toBe(false);
    expect(w.triggerType).toBe("EVENT");
    expectValidation(await createWf({ description: "no name" }), "name");
  });

  test("malformed JSON is 400", async () => {
    const res = await srv.api("/workflows", { key: acc.secretKey, raw: "{not json", headers: { "content-type": "application/json" }, method: "POST" });
    expectEnvelope(res, 400);
  });
});

describe("GET /workflows/:id, PATCH, DELETE", () => {
  test("GET adds steps [{ id, type, name, config, createdAt }] and transitions [{ id, fromStepId, toStepId, branch }]", async () => {
    const w = await wf({ triggerConfig: { eventName: "x_event" } });
    const a = await step(w.id, "UPDATE_CONTACT", { updates: { stage: "a" }, subscriptionAction: "none" }, acc, "First");
    const b = await step(w.id, "EXIT", { reason: "done" });
    const t = await link(w.id, a.id, b.id);
    const got = ok(await getWf(w.id), 200);
    for (const k of WORKFLOW_KEYS) expect(got).toHaveProperty(k);
    expect(got.entryStepId).toBe(a.id);
    expect(got.steps.length).toBe(2);
    for (const s of got.steps) {
      for (const k of ["id", "type", "name", "config", "createdAt"]) expect(s).toHaveProperty(k);
      expect(isIsoDate(s.createdAt)).toBe(true);
    }
    const sa = got.steps.find((s: any) => s.id === a.id);
    expect(sa).toMatchObject({ type: "UPDATE_CONTACT", name: "First" });
    expect(sa.config.updates).toEqual({ stage: "a" });
    expect(got.steps.find((s: any) => s.id === b.id)).toMatchObject({ type: "EXIT", config: { reason: "done" } });
    expect(got.transitions).toEqual([{ id: t.id, fromStepId: a.id, toStepId: b.id, branch: null }]);
  });

  test("PATCH changes name, description, allowReentry, triggerConfig and answers the workflow", async () => {
    const w = await wf({ description: "before" });
    const from = srv.clock.now();
    const res = await patchWf(w.id, { name: "Renamed", description: "after", allowReentry: true, triggerConfig: { eventName: "renamed_event" } });
    const body = ok(res, 200);
    expect(body).toMatchObject({ id: w.id, name: "Renamed", description: "after", allowReentry: true });
    expect(body.triggerConfig).toMatchObject({ eventName: "renamed_event" });
    expectTimeBetween(body.updatedAt, from, srv.clock.now());
    expect(ok(await getWf(w.id), 200)).toMatchObject({ name: "Renamed", description: "after", allowReentry: true });
  });

  test("enabling without an entry step is 422", async () => {
    const w = await wf({ triggerConfig: { eventName: "e1" } });
    expectValidation(await patchWf(w.id, { enabled: true }));
    expect(ok(await getWf(w.id), 200).enabled).toBe(false);
  });

  test("enabling an EVENT workflow without eventName is 422; as MANUAL it may be enabled", async () => {
    const w = await wf();
    await step(w.id, "EXIT", {});
    expectValidation(await patchWf(w.id, { enabled: true }));
    expect(ok(await getWf(w.id), 200).enabled).toBe(false);
    const m = ok(await patchWf(w.id, { triggerType: "MANUAL", enabled: true }), 200);
    expect(m).toMatchObject({ triggerType: "MANUAL", enabled: true });
  });

  test("a change that would leave an enabled EVENT workflow without eventName is 422 (README)", async () => {
    const w = await chain([["EXIT", {}]], { eventName: "keeps_name" });
    expectValidation(await patchWf(w.id, { triggerConfig: {} }));
    const m = await chain([["EXIT", {}]]);
    expectValidation(await patchWf(m.id, { triggerType: "EVENT" }));
    expect(ok(await getWf(m.id), 200)).toMatchObject({ triggerType: "MANUAL", enabled: true });
  });

  test("clearing the entry step of an enabled workflow (PATCH or deleting the step) is 422", async () => {
    const w = await chain([["EXIT", {}]]);
    expectValidation(await patchWf(w.id, { entryStepId: null }));
    expectValidation(await delStep(w.id, w.steps[0]!));
    expect(ok(await getWf(w.id), 200).entryStepId).toBe(w.steps[0]);
  });

  test("entryStepId must name a step of this workflow (422)", async () => {
    const w = await wf();
    await step(w.id, "EXIT", {});
    const other = await wf();
    const foreign = await step(other.id, "EXIT", {});
    expectValidation(await patchWf(w.id, { entryStepId: foreign.id }), "entryStepId");
    expectValidation(await patchWf(w.id, { entryStepId: NO_SUCH_ID }), "entryStepId");
  });

  test("an unknown triggerType is 422", async () => {
    const w = await wf();
    expectValidation(await patchWf(w.id, { triggerType: "CRON" }), "triggerType");
  });

  test("the first step added becomes entryStepId; PATCH may change it", async () => {
    const w = await wf();
    const a = await step(w.id, "EXIT", {});
    expect(ok(await getWf(w.id), 200).entryStepId).toBe(a.id);
    const b = await step(w.id, "EXIT", {});
    expect(ok(await getWf(w.id), 200).entryStepId).toBe(a.id);
    expect(ok(await patchWf(w.id, { entryStepId: b.id }), 200).entryStepId).toBe(b.id);
    expect(ok(await getWf(w.id), 200).entryStepId).toBe(b.id);
  });

  test("DELETE removes the workflow; then GET is 404", async () => {
    const w = await wf();
    await step(w.id, "EXIT", {});
    expectOk(await delWf(w.id));
    expectEnvelope(await getWf(w.id), 404, "NOT_FOUND");
    expectEnvelope(await delWf(w.id), 404, "NOT_FOUND");
  });

  test("unknown ids are 404 NOT_FOUND", async () => {
    expectEnvelope(await getWf(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await patchWf(NO_SUCH_ID, { name: "x" }), 404, "NOT_FOUND");
    expectEnvelope(await delWf(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await postStep(NO_SUCH_ID, { type: "EXIT", config: {} }), 404, "NOT_FOUND");
    expectEnvelope(await listExecs(NO_SUCH_ID), 404, "NOT_FOUND");
    const w = await wf();
    expectEnvelope(await patchStep(w.id, NO_SUCH_ID, { config: {} }), 404, "NOT_FOUND");
    expectEnvelope(await delStep(w.id, NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await delLink(w.id, NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await getExec(w.id, NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await cancelExec(w.id, NO_SUCH_ID), 404, "NOT_FOUND");
  });
});

describe("GET /workflows (offset list)", () => {
  test("{ data, page, pageSize, total, totalPages }; search and enabled filters; paging", async () => {
    const other = await newProject(srv.api, acc, "WF list");
    const a = await chain([["EXIT", {}]], { eventName: "list_a" }, other);
    ok(await patchWf(a.id, { name: "Alpha onboarding" }, other), 200);
    const b = await wf({ name: "Beta onboarding" }, other);
    const c = await wf({ name: "Gamma churn" }, other);
    const list = (q: string) => srv.api(`/workflows${q}`, { key: other.secretKey });

    const all = await list("");
    expectOffsetPage(all, 1, 20, 3);
    const ids = all.body.data.map((w: any) => w.id);
    expect(ids.sort()).toEqual([a.id, b.id, c.id].sort());
    for (const w of all.body.data) for (const k of WORKFLOW_KEYS) expect(w).toHaveProperty(k);

    const search = await list("?search=onboarding");
    expectOffsetPage(search, 1, 20, 2);
    expect(search.body.data.map((w: any) => w.id).sort()).toEqual([a.id, b.id].sort());

    const enabled = await list("?enabled=true");
    expectOffsetPage(enabled, 1, 20, 1);
    expect(enabled.body.data[0].id).toBe(a.id);
    const disabled = await list("?enabled=false");
    expectOffsetPage(disabled, 1, 20, 2);
    expect(disabled.body.data.map((w: any) => w.id).sort()).toEqual([b.id, c.id].sort());

    const p1 = await list("?page=1&pageSize=2");
    expectOffsetPage(p1, 1, 2, 3);
    expect(p1.body.data.length).toBe(2);
    const p2 = await list("?page=2&pageSize=2");
    expectOffsetPage(p2, 2, 2, 3);
    expect(p2.body.data.length).toBe(1);
    expect([...p1.body.data, ...p2.body.data].map((w: any) => w.id).sort()).toEqual(ids.sort());
  });
});

describe("steps", () => {
  test("POST answers 201 with the step { id, type, name, config, createdAt } for every step type", async () => {
    const tpl = ok(await srv.api("/templates", { key: acc.secretKey, body: { name: "wf step", subject: "S", body: "<p>B</p>", from: FROM } }), 201);
    const w = await wf();
    const configs: [string, Record<string, unknown>][] = [
      ["SEND_EMAIL", { templateId: tpl.id }],
      ["DELAY", { amount: 3, unit: "days" }],
      ["WAIT_FOR_EVENT", { eventName: "paid", timeout: 3600 }],
      ["CONDITION", { field: "data.plan", operator: "equals", value: "pro" }],
      ["CONDITION", { logic: "AND", groups: [{ filters: [{ field: "email", operator: "contains", value: "@" }] }] }],
      ["WEBHOOK", { url: "https://hooks.example.com/x", method: "POST" }],
      ["UPDATE_CONTACT", { updates: { stage: "x" }, subscriptionAction: "none" }],
      ["EXIT", { reason: "bye" }],
      ["EXIT", {}],
    ];
    for (const [type, config] of configs) {
      const from = srv.clock.now();
      const res = await postStep(w.id, { type, config });
      expect(res.status).toBe(201);
      for (const k of ["id", "type", "name", "config", "createdAt"]) expect(res.body).toHaveProperty(k);
      expect(res.body.type).toBe(type);
      expect(res.body.config).toMatchObject(config);
      expectTimeBetween(res.body.createdAt, from, srv.clock.now());
    }
    expect(ok(await getWf(w.id), 200).steps.length).toBe(configs.length);
  });

  test("DELAY: amount and unit minutes|hours|days, at most 365 days, fractional amounts allowed", async () => {
    const w = await wf();
    for (const config of [{ amount: 365, unit: "days" }, { amount: 8760, unit: "hours" }, { amount: 0.5, unit: "hours" }, { amount: 10, unit: "minutes" }]) {
      expect((await postStep(w.id, { type: "DELAY", config })).status).toBe(201);
    }
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: 366, unit: "days" } }));
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: 8761, unit: "hours" } }));
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: 525_601, unit: "minutes" } }));
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: 2, unit: "fortnights" } }), "config.unit");
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: 2 } }), "config.unit");
    expectValidation(await postStep(w.id, { type: "DELAY", config: { unit: "days" } }), "config.amount");
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: "two", unit: "days" } }), "config.amount");
    expectValidation(await postStep(w.id, { type: "DELAY", config: { amount: -1, unit: "days" } }), "config.amount");
  });

  test("SEND_EMAIL needs a templateId of a template in the project (422)", async () => {
    const w = await wf();
    expectValidation(await postStep(w.id, { type: "SEND_EMAIL", config: {} }), "config.templateId");
    expectValidation(await postStep(w.id, { type: "SEND_EMAIL", config: { templateId: NO_SUCH_ID } }));
  });

  test("WAIT_FOR_EVENT needs an eventName; timeout is optional seconds", async () => {
    const w = await wf();
    expect((await postStep(w.id, { type: "WAIT_FOR_EVENT", config: { eventName: "paid" } })).status).toBe(201);
    expectValidation(await postStep(w.id, { type: "WAIT_FOR_EVENT", config: {} }), "config.eventName");
    expectValidation(await postStep(w.id, { type: "WAIT_FOR_EVENT", config: { eventName: "paid", timeout: "soon" } }), "config.timeout");
    expectValidation(await postStep(w.id, { type: "WAIT_FOR_EVENT", config: { eventName: "paid", timeout: -5 } }), "config.timeout");
  });

  test("CONDITION: a condition tree or { field, operator, value }; invalid ones are 422 naming the filter", async () => {
    const w = await wf();
    for (const config of [
      { field: "workflow.tier", operator: "equals", value: "gold" },
      { field: "event.amount", operator: "greaterThan", value: 100 },
      { field: "event.purchase", operator: "triggered" },
      { logic: "OR", groups: [{ filters: [{ field: "subscribed", operator: "equals", value: true }] }, { filters: [{ field: "data.age", operator: "greaterThan", value: 18 }] }] },
    ]) {
      const res = await postStep(w.id, { type: "CONDITION", config });
      if (res.status !== 201) throw new Error(`${JSON.stringify(config)}: ${res.status} ${res.text}`);
    }
    expectValidation(await postStep(w.id, { type: "CONDITION", config: { field: "data.plan", operator: "isAbout", value: "pro" } }), "config.operator");
    expectValidation(
      await postStep(w.id, { type: "CONDITION", config: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "x" }, { field: "data.plan", operator: "bogus", value: "x" }] }] } }),
      "config.groups[0].filters[1].operator",
    );
    expectValidation(await postStep(w.id, { type: "CONDITION", config: { field: "data.plan", operator: "equals" } }));
    expectValidation(await postStep(w.id, { type: "CONDITION", config: {} }));
  });

  test("WEBHOOK needs a url; method defaults to POST; an unknown method is 422", async () => {
    const w = await wf();
    const s = ok(await postStep(w.id, { type: "WEBHOOK", config: { url: "https://hooks.example.com/a" } }), 201);
    expect(s.config.url).toBe("https://hooks.example.com/a");
    expect(s.config.method ?? "POST").toBe("POST");
    expect((await postStep(w.id, { type: "WEBHOOK", config: { url: "https://hooks.example.com/b", method: "PUT", headers: { "x-a": "1" }, body: "raw" } })).status).toBe(201);
    expect((await postStep(w.id, { type: "WEBHOOK", config: { url: "https://hooks.example.com/c", body: { any: ["json", 1] } } })).status).toBe(201);
    expectValidation(await postStep(w.id, { type: "WEBHOOK", config: {} }), "config.url");
    expectValidation(await postStep(w.id, { type: "WEBHOOK", config: { url: "not a url" } }), "config.url");
    expectValidation(await postStep(w.id, { type: "WEBHOOK", config: { url: "https://hooks.example.com/d", method: "TELEPORT" } }), "config.method");
  });

  test("UPDATE_CONTACT: subscriptionAction none|subscribe|unsubscribe; others 422", async () => {
    const w = await wf();
    for (const subscriptionAction of ["none", "subscribe", "unsubscribe"]) {
      expect((await postStep(w.id, { type: "UPDATE_CONTACT", config: { updates: { a: 1 }, subscriptionAction } })).status).toBe(201);
    }
    expectValidation(await postStep(w.id, { type: "UPDATE_CONTACT", config: { subscriptionAction: "maybe" } }), "config.subscriptionAction");
    expectValidation(await postStep(w.id, { type: "UPDATE_CONTACT", config: { updates: "plan=pro", subscriptionAction: "none" } }), "config.updates");
  });

  test("an unknown step type is 422", async () => {
    const w = await wf();
    expectValidation(await postStep(w.id, { type: "TELEPORT", config: {} }), "type");
    expect(ok(await getWf(w.id), 200).steps).toEqual([]);
  });

  test("PATCH step updates its config and name; an invalid config is 422 and leaves it unchanged", async () => {
    const w = await wf();
    const s = await step(w.id, "DELAY", { amount: 1, unit: "hours" });
    const res = ok(await patchStep(w.id, s.id, { config: { amount: 2, unit: "days" } }), 200);
    expect(res.config).toMatchObject({ amount: 2, unit: "days" });
    expect(ok(await patchStep(w.id, s.id, { name: "Wait two days" }), 200).name).toBe("Wait two days");
    expectValidation(await patchStep(w.id, s.id, { config: { amount: 400, unit: "days" } }));
    const got = ok(await getWf(w.id), 200).steps.find((x: any) => x.id === s.id);
    expect(got.config).toMatchObject({ amount: 2, unit: "days" });
    expect(got.name).toBe("Wait two days");
  });
});

describe("transitions", () => {
  test("POST answers 201 with { id, fromStepId, toStepId, branch }; DELETE removes it", async () => {
    const w = await wf();
    const a = await step(w.id, "UPDATE_CONTACT", { updates: {}, subscriptionAction: "none" });
    const b = await step(w.id, "EXIT", {});
    const res = await postLink(w.id, { fromStepId: a.id, toStepId: b.id });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ fromStepId: a.id, toStepId: b.id, branch: null });
    expect(typeof res.body.id).toBe("string");
    expectOk(await delLink(w.id, res.body.id));
    expect(ok(await getWf(w.id), 200).transitions).toEqual([]);
    expectEnvelope(await delLink(w.id, res.body.id), 404, "NOT_FOUND");
  });

  test("CONDITION: one transition per yes/no branch; a missing, foreign or repeated branch is 422", async () => {
    const w = await wf();
    const c = await step(w.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const y = await step(w.id, "EXIT", { reason: "yes" });
    const n = await step(w.id, "EXIT", { reason: "no" });
    const z = await step(w.id, "EXIT", {});
    expectValidation(await postLink(w.id, { fromStepId: c.id, toStepId: y.id }));
    const e1 = expectValidation(await postLink(w.id, { fromStepId: c.id, toStepId: y.id, branch: "timeout" }));
    expect(e1.map((e) => e.code)).toContain("invalid_branch");
    expect(ok(await postLink(w.id, { fromStepId: c.id, toStepId: y.id, branch: "yes" }), 201).branch).toBe("yes");
    expect(ok(await postLink(w.id, { fromStepId: c.id, toStepId: n.id, branch: "no" }), 201).branch).toBe("no");
    const dup = expectValidation(await postLink(w.id, { fromStepId: c.id, toStepId: z.id, branch: "yes" }));
    expect(dup.map((e) => e.code)).toContain("duplicate_branch");
    expect(ok(await getWf(w.id), 200).transitions.length).toBe(2);
  });

  test("WAIT_FOR_EVENT: one transition per event/timeout branch; yes/no is 422", async () => {
    const w = await wf();
    const s = await step(w.id, "WAIT_FOR_EVENT", { eventName: "paid", timeout: 60 });
    const a = await step(w.id, "EXIT", {});
    const b = await step(w.id, "EXIT", {});
    const bad = expectValidation(await postLink(w.id, { fromStepId: s.id, toStepId: a.id, branch: "yes" }));
    expect(bad.map((e) => e.code)).toContain("invalid_branch");
    await link(w.id, s.id, a.id, "event");
    await link(w.id, s.id, b.id, "timeout");
    const dup = expectValidation(await postLink(w.id, { fromStepId: s.id, toStepId: b.id, branch: "event" }));
    expect(dup.map((e) => e.code)).toContain("duplicate_branch");
  });

  test("other steps: at most one outgoing transition and no branch", async () => {
    const w = await wf();
    const a = await step(w.id, "DELAY", { amount: 1, unit: "minutes" });
    const b = await step(w.id, "EXIT", {});
    const c = await step(w.id, "EXIT", {});
    const br = expectValidation(await postLink(w.id, { fromStepId: a.id, toStepId: b.id, branch: "yes" }));
    expect(br.map((e) => e.code)).toContain("invalid_branch");
    await link(w.id, a.id, b.id);
    const many = expectValidation(await postLink(w.id, { fromStepId: a.id, toStepId: c.id }));
    expect(many.map((e) => e.code)).toContain("too_many_transitions");
  });

  test("no transition out of EXIT; self-links and cycles are 422; merging paths is allowed", async () => {
    const w = await wf();
    const cond = await step(w.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const a = await step(w.id, "UPDATE_CONTACT", { updates: { a: 1 }, subscriptionAction: "none" });
    const b = await step(w.id, "UPDATE_CONTACT", { updates: { b: 1 }, subscriptionAction: "none" });
    const c = await step(w.id, "DELAY", { amount: 1, unit: "minutes" });
    const x = await step(w.id, "EXIT", {});
    const fromExit = expectValidation(await postLink(w.id, { fromStepId: x.id, toStepId: a.id }));
    expect(fromExit.map((e) => e.code)).toContain("exit_step");
    const self = expectValidation(await postLink(w.id, { fromStepId: a.id, toStepId: a.id }));
    expect(self.map((e) => e.code)).toContain("self_link");
    // Diamond: cond -yes-> a -> c, cond -no-> b -> c: two paths join, no cycle.
    await link(w.id, cond.id, a.id, "yes");
    await link(w.id, cond.id, b.id, "no");
    await link(w.id, a.id, c.id);
    await link(w.id, b.id, c.id);
    const cycle = expectValidation(await postLink(w.id, { fromStepId: c.id, toStepId: cond.id }));
    expect(cycle.map((e) => e.code)).toContain("cycle");
    expect(ok(await getWf(w.id), 200).transitions.length).toBe(4);
  });

  test("a step that does not exist in this workflow is 422 not_found", async () => {
    const w = await wf();
    const other = await wf();
    const a = await step(w.id, "DELAY", { amount: 1, unit: "minutes" });
    const foreign = await step(other.id, "EXIT", {});
    const e1 = expectValidation(await postLink(w.id, { fromStepId: a.id, toStepId: NO_SUCH_ID }));
    expect(e1.map((e) => e.code)).toContain("not_found");
    const e2 = expectValidation(await postLink(w.id, { fromStepId: a.id, toStepId: foreign.id }));
    expect(e2.map((e) => e.code)).toContain("not_found");
  });
});

describe("DELETE step", () => {
  test("without splice: the step and its transitions go", async () => {
    const w = await wf();
    const a = await step(w.id, "UPDATE_CONTACT", { updates: {}, subscriptionAction: "none" });
    const b = await step(w.id, "DELAY", { amount: 1, unit: "minutes" });
    const c = await step(w.id, "EXIT", {});
    await link(w.id, a.id, b.id);
    await link(w.id, b.id, c.id);
    expectOk(await delStep(w.id, b.id));
    const got = ok(await getWf(w.id), 200);
    expect(got.steps.map((s: any) => s.id).sort()).toEqual([a.id, c.id].sort());
    expect(got.transitions).toEqual([]);
  });

  test("?splice=true connects the predecessor to the single successor (keeping the predecessor's branch)", async () => {
    const w = await wf();
    const cond = await step(w.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const a = await step(w.id, "UPDATE_CONTACT", { updates: {}, subscriptionAction: "none" });
    const b = await step(w.id, "DELAY", { amount: 1, unit: "minutes" });
    const c = await step(w.id, "EXIT", {});
    await link(w.id, cond.id, a.id, "yes");
    await link(w.id, a.id, b.id);
    await link(w.id, b.id, c.id);
    expectOk(await delStep(w.id, b.id, true));
    let got = ok(await getWf(w.id), 200);
    expect(got.steps.map((s: any) => s.id)).not.toContain(b.id);
    expect(got.transitions.map((t: any) => [t.fromStepId, t.toStepId, t.branch]).sort()).toEqual([[cond.id, a.id, "yes"], [a.id, c.id, null]].sort());
    expectOk(await delStep(w.id, a.id, true));
    got = ok(await getWf(w.id), 200);
    expect(got.transitions.map((t: any) => [t.fromStepId, t.toStepId, t.branch])).toEqual([[cond.id, c.id, "yes"]]);
  });

  test("splicing the entry step makes its successor the entry; a step with two successors cannot be spliced (422)", async () => {
    const w = await wf();
    const a = await step(w.id, "UPDATE_CONTACT", { updates: {}, subscriptionAction: "none" });
    const cond = await step(w.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const y = await step(w.id, "EXIT", {});
    const n = await step(w.id, "EXIT", {});
    await link(w.id, a.id, cond.id);
    await link(w.id, cond.id, y.id, "yes");
    await link(w.id, cond.id, n.id, "no");
    expectValidation(await delStep(w.id, cond.id, true));
    expect(ok(await getWf(w.id), 200).steps.length).toBe(4);
    expect(ok(await getWf(w.id), 200).entryStepId).toBe(a.id);
    expectOk(await delStep(w.id, a.id, true));
    const got = ok(await getWf(w.id), 200);
    expect(got.entryStepId).toBe(cond.id);
    expect(got.transitions.length).toBe(2);
  });
});

describe("executions: manual start, listing, cancelling", () => {
  test("a disabled workflow refuses a manual start with 409 INVALID_STATE", async () => {
    const w = await chain([["EXIT", {}]], { enable: false });
    const c = await newContact();
    expectEnvelope(await startExec(w.id, { contactId: c.id }), 409, "INVALID_STATE");
    expect(items(ok(await listExecs(w.id), 200))).toEqual([]);
  });

  test("start by contactId: 201 with the execution; it runs to COMPLETED at the end of the graph", async () => {
    const w = await chain([["UPDATE_CONTACT", { updates: { stage: "started" }, subscriptionAction: "none" }]]);
    const c = await newContact();
    const from = srv.clock.now();
    const res = await startExec(w.id, { contactId: c.id, context: { source: "api", n: 2 } });
    const to = srv.clock.now();
    expect(res.status).toBe(201);
    for (const k of EXECUTION_KEYS) expect(res.body).toHaveProperty(k);
    expect(res.body).toMatchObject({ workflowId: w.id, contactId: c.id, context: { source: "api", n: 2 } });
    expect(EXECUTION_STATUSES).toContain(res.body.status);
    expectTimeBetween(res.body.startedAt, from, to);
    const done = await waitExec(w.id, res.body.id, ["COMPLETED", "FAILED", "EXITED"]);
    expect(done.status).toBe("COMPLETED");
    expect(done.currentStepId).toBeNull();
    expect(done.exitReason).toBeNull();
    expectTimeBetween(done.completedAt, from, srv.clock.now());
    expect((await contactOf(c.id)).data.stage).toBe("started");
  });

  test("start by email of an existing contact", async () => {
    const w = await chain([["EXIT", { reason: "by email" }]]);
    const c = await newContact();
    const res = ok(await startExec(w.id, { email: c.email }), 201);
    expect(res.contactId).toBe(c.id);
    expect((await waitExec(w.id, res.id, ["EXITED", "COMPLETED", "FAILED"])).status).toBe("EXITED");
  });

  test("neither contactId nor email is 422; an unknown contact is 404", async () => {
    const w = await chain([["EXIT", {}]]);
    expectValidation(await startExec(w.id, { context: {} }));
    expectValidation(await startExec(w.id, { email: "not-an-email" }), "email");
    expectEnvelope(await startExec(w.id, { contactId: NO_SUCH_ID }), 404, "NOT_FOUND");
    expectEnvelope(await startExec(w.id, { email: uniq("nobody") }), 404, "NOT_FOUND");
    expect(items(ok(await listExecs(w.id), 200))).toEqual([]);
  });

  test("context must be a JSON object (422); an unknown status filter is 400", async () => {
    const w = await chain([["EXIT", {}]]);
    const c = await newContact();
    expectValidation(await startExec(w.id, { contactId: c.id, context: [1, 2] }), "context");
    expectEnvelope(await listExecs(w.id, "?status=SLEEPING"), 400, "BAD_REQUEST");
  });

  test("an EVENT workflow may be started by hand while enabled", async () => {
    const w = await chain([["EXIT", { reason: "by hand" }]], { eventName: `bb_hand_${seq++}` });
    const c = await newContact();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    expect((await waitExec(w.id, e.id, ["EXITED", "COMPLETED", "FAILED"])).exitReason).toBe("by hand");
  });

  test("allowReentry false: a contact who ever entered does not enter again (409 CONFLICT)", async () => {
    const w = await chain([["EXIT", {}]]);
    const c = await newContact();
    const first = ok(await startExec(w.id, { contactId: c.id }), 201);
    await waitExec(w.id, first.id, "EXITED");
    expectEnvelope(await startExec(w.id, { contactId: c.id }), 409, "CONFLICT");
    expect(items(ok(await listExecs(w.id), 200)).length).toBe(1);
    // A cancelled execution counts as having entered too.
    const waitWf = await chain([["WAIT_FOR_EVENT", { eventName: "never_comes" }]]);
    const e = ok(await startExec(waitWf.id, { contactId: c.id }), 201);
    await waitExec(waitWf.id, e.id, "WAITING");
    ok(await cancelExec(waitWf.id, e.id), 200);
    expectEnvelope(await startExec(waitWf.id, { contactId: c.id }), 409, "CONFLICT");
  });

  test("allowReentry true: only an active execution blocks", async () => {
    const w = await chain([["WAIT_FOR_EVENT", { eventName: "reentry_go" }]], { allowReentry: true });
    const c = await newContact();
    const first = ok(await startExec(w.id, { contactId: c.id }), 201);
    await waitExec(w.id, first.id, "WAITING");
    expectEnvelope(await startExec(w.id, { contactId: c.id }), 409, "CONFLICT");
    ok(await cancelExec(w.id, first.id), 200);
    const second = ok(await startExec(w.id, { contactId: c.id }), 201);
    expect(second.id).not.toBe(first.id);
    ok(await cancelExec(w.id, second.id), 200);
  });

  test("GET executions is an offset list filterable by status; DELETE cancels a WAITING execution; a finished one is 409", async () => {
    const w = await chain([["WAIT_FOR_EVENT", { eventName: "never_comes" }]], { allowReentry: true });
    const c1 = await newContact();
    const c2 = await newContact();
    const e1 = ok(await startExec(w.id, { contactId: c1.id }), 201);
    const e2 = ok(await startExec(w.id, { contactId: c2.id }), 201);
    const waiting = await waitExec(w.id, e1.id, "WAITING");
    expect(waiting.currentStepId).toBe(w.steps[0]);
    await waitExec(w.id, e2.id, "WAITING");

    const all = await listExecs(w.id);
    expectOffsetPage(all, 1, 20, 2);
    for (const e of all.body.data) for (const k of EXECUTION_KEYS) expect(e).toHaveProperty(k);

    const from = srv.clock.now();
    const cancelled = await cancelExec(w.id, e1.id);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ id: e1.id, status: "CANCELLED" });
    const after = ok(await getExec(w.id, e1.id), 200);
    expect(after.status).toBe("CANCELLED");
    expectTimeBetween(after.completedAt, from, srv.clock.now());
    expectEnvelope(await cancelExec(w.id, e1.id), 409, "INVALID_STATE");

    const onlyCancelled = await listExecs(w.id, "?status=CANCELLED");
    expectOffsetPage(onlyCancelled, 1, 20, 1);
    expect(onlyCancelled.body.data[0].id).toBe(e1.id);
    const onlyWaiting = await listExecs(w.id, "?status=WAITING");
    expectOffsetPage(onlyWaiting, 1, 20, 1);
    expect(onlyWaiting.body.data[0].id).toBe(e2.id);
    ok(await cancelExec(w.id, e2.id), 200);
  });

  test("cancel-all answers { cancelled: n }; then a workflow without active executions may be deleted", async () => {
    const w = await chain([["WAIT_FOR_EVENT", { eventName: "never_comes" }]], { allowReentry: true });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(ok(await startExec(w.id, { contactId: (await newContact()).id }), 201).id);
    for (const id of ids) await waitExec(w.id, id, "WAITING");
    expectEnvelope(await delWf(w.id), 409, "INVALID_STATE");
    expect(ok(await getWf(w.id), 200).id).toBe(w.id);
    expect(ok(await cancelAll(w.id), 200)).toEqual({ cancelled: 3 });
    for (const id of ids) expect(ok(await getExec(w.id, id), 200).status).toBe("CANCELLED");
    expect(ok(await cancelAll(w.id), 200)).toEqual({ cancelled: 0 });
    expectOk(await delWf(w.id));
    expectEnvelope(await getWf(w.id), 404, "NOT_FOUND");
  });

  test("GET execution adds steps [{ stepId, type, status, startedAt, completedAt, output, error }] in order", async () => {
    const w = await chain([
      ["UPDATE_CONTACT", { updates: { s: 1 }, subscriptionAction: "none" }],
      ["CONDITION", { field: "data.s", operator: "equals", value: 1 }],
    ]);
    const x = await step(w.id, "EXIT", { reason: "logged" });
    ok(await patchWf(w.id, { enabled: false }), 200);
    await link(w.id, w.steps[1]!, x.id, "yes");
    ok(await patchWf(w.id, { enabled: true }), 200);
    const c = await newContact();
    const from = srv.clock.now();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    const done = await waitExec(w.id, e.id, ["EXITED", "COMPLETED", "FAILED"]);
    expect(done.status).toBe("EXITED");
    expect(done.exitReason).toBe("logged");
    expect(Array.isArray(done.steps)).toBe(true);
    expect(done.steps.map((s: any) => [s.stepId, s.type])).toEqual([
      [w.steps[0], "UPDATE_CONTACT"],
      [w.steps[1], "CONDITION"],
      [x.id, "EXIT"],
    ]);
    for (const s of done.steps) {
      for (const k of ["stepId", "type", "status", "startedAt", "completedAt", "output", "error"]) expect(s).toHaveProperty(k);
      expect(s.status).toBe("COMPLETED");
      expect(s.error).toBeNull();
      expectTimeBetween(s.startedAt, from, srv.clock.now());
      expectTimeBetween(s.completedAt, from, srv.clock.now());
    }
  });
});

describe("structural edits while executions are active", () => {
  test("steps, transitions and the entry step are refused with 409; name, description, enabled, allowReentry and step names may change", async () => {
    const w = await chain([["WAIT_FOR_EVENT", { eventName: "never_comes" }]], { enable: false });
    const exit = await step(w.id, "EXIT", {});
    await link(w.id, w.steps[0]!, exit.id, "event");
    w.steps.push(exit.id);
    ok(await patchWf(w.id, { triggerType: "MANUAL", enabled: true }), 200);
    const spare = await step(w.id, "EXIT", {}); // added before any execution exists
    const c = await newContact();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    await waitExec(w.id, e.id, "WAITING");
    const links = ok(await getWf(w.id), 200).transitions;

    expectEnvelope(await postStep(w.id, { type: "EXIT", config: {} }), 409, "INVALID_STATE");
    expectEnvelope(await patchStep(w.id, w.steps[0]!, { config: { eventName: "other" } }), 409, "INVALID_STATE");
    expectEnvelope(await delStep(w.id, spare.id), 409, "INVALID_STATE");
    expectEnvelope(await delStep(w.id, w.steps[1]!, true), 409, "INVALID_STATE");
    expectEnvelope(await postLink(w.id, { fromStepId: w.steps[1]!, toStepId: spare.id }), 409, "INVALID_STATE");
    expectEnvelope(await delLink(w.id, links[0].id), 409, "INVALID_STATE");
    expectEnvelope(await patchWf(w.id, { entryStepId: spare.id }), 409, "INVALID_STATE");
    expectEnvelope(await delWf(w.id), 409, "INVALID_STATE");

    const got = ok(await getWf(w.id), 200);
    expect(got.steps.length).toBe(3);
    expect(got.transitions.length).toBe(1);
    expect(got.entryStepId).toBe(w.steps[0]);

    expect(ok(await patchWf(w.id, { name: "Still editable", description: "d", allowReentry: true }), 200)).toMatchObject({ name: "Still editable", allowReentry: true });
    expect(ok(await patchStep(w.id, w.steps[0]!, { name: "Renamed step" }), 200).name).toBe("Renamed step");
    expect(ok(await patchWf(w.id, { enabled: false }), 200).enabled).toBe(false);

    ok(await cancelExec(w.id, e.id), 200);
    expect((await postStep(w.id, { type: "EXIT", config: {} })).status).toBe(201);
    expectOk(await delWf(w.id));
  });
});

describe("the engine", () => {
  test("EVENT trigger: /v1/track with the public key starts the enabled workflow for that contact", async () => {
    const name = `bb_signup_${seq++}`;
    const w = await chain([["UPDATE_CONTACT", { updates: { welcomed: "yes" }, subscriptionAction: "none" }]], { eventName: name });
    const email = uniq();
    const tracked = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email, event: name } }), 200);
    const rows = await waitExecs(w.id, (r) => r.length === 1 && r[0].status === "COMPLETED");
    expect(rows[0].contactId).toBe(tracked.data.contact);
    expect((await contactOf(tracked.data.contact)).data.welcomed).toBe("yes");
    // allowReentry false: the same event again starts nothing.
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email, event: name } }), 200);
    await srv.drainJobs();
    expect(items(ok(await listExecs(w.id), 200)).length).toBe(1);
  });

  test("a disabled workflow is not started by its event; allowReentry true starts again after the first finished", async () => {
    const name = `bb_again_${seq++}`;
    const w = await chain([["EXIT", { reason: "once" }]], { eventName: name, allowReentry: true });
    ok(await patchWf(w.id, { enabled: false }), 200);
    const email = uniq();
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email, event: name } }), 200);
    await srv.drainJobs();
    expect(items(ok(await listExecs(w.id), 200))).toEqual([]);
    ok(await patchWf(w.id, { enabled: true }), 200);
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email, event: name } }), 200);
    await waitExecs(w.id, (r) => r.length === 1 && r[0].status === "EXITED");
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email, event: name } }), 200);
    const rows = await waitExecs(w.id, (r) => r.length === 2 && r.every((e) => e.status === "EXITED"));
    expect(rows.every((e) => e.exitReason === "once")).toBe(true);
  });

  test("a system event triggers: contact.unsubscribed from PATCH /contacts/:id", async () => {
    const w = await chain([["UPDATE_CONTACT", { updates: { left: "yes" }, subscriptionAction: "none" }]], { eventName: "contact.unsubscribed" });
    const c = await newContact();
    ok(await srv.api(`/contacts/${c.id}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: false } }), 200);
    const rows = await waitExecs(w.id, (r) => r.length === 1 && r[0].status === "COMPLETED");
    expect(rows[0].contactId).toBe(c.id);
    expect((await contactOf(c.id)).data.left).toBe("yes");
    ok(await patchWf(w.id, { enabled: false }), 200);
  });

  test("a segment entry event triggers: segment.<slug>.entry of a tracked segment, with the event as triggerEvent", async () => {
    const segName = `WF Pro ${seq++}`;
    const seg = ok(
      await srv.api("/segments", {
        key: acc.secretKey,
        body: { name: segName, trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.wfseg", operator: "equals", value: "in" }] }] } },
      }),
      201,
    );
    const w = await chain([["EXIT", { reason: "joined" }]], { eventName: `segment.${seg.slug}.entry` });
    const contactId = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: "wf_any", data: { wfseg: "in" } } }), 200).data.contact;
    const rows = await waitExecs(w.id, (r) => r.length === 1 && r[0].status === "EXITED");
    expect(rows[0]).toMatchObject({ contactId, exitReason: "joined" });
    ok(await patchWf(w.id, { enabled: false }), 200);
  });

  test("every enabled workflow with that eventName starts, once per event", async () => {
    const name = `bb_multi_${seq++}`;
    const w1 = await chain([["EXIT", { reason: "one" }]], { eventName: name });
    const w2 = await chain([["EXIT", { reason: "two" }]], { eventName: name });
    const contactId = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name } }), 200).data.contact;
    for (const w of [w1, w2]) {
      const rows = await waitExecs(w.id, (r) => r.length === 1 && r[0].status === "EXITED");
      expect(rows[0].contactId).toBe(contactId);
    }
  });

  test("WAIT_FOR_EVENT resumes on a system event (contact.unsubscribed) of the same contact", async () => {
    const w = await wf();
    ok(await patchWf(w.id, { triggerType: "MANUAL" }), 200);
    const wait = await step(w.id, "WAIT_FOR_EVENT", { eventName: "contact.unsubscribed" });
    const x = await step(w.id, "EXIT", { reason: "left" });
    await link(w.id, wait.id, x.id, "event");
    ok(await patchWf(w.id, { enabled: true }), 200);
    const c = await newContact();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    await waitExec(w.id, e.id, "WAITING");
    ok(await srv.api(`/contacts/${c.id}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: false } }), 200);
    expect((await waitExec(w.id, e.id, ["EXITED", "COMPLETED", "FAILED"])).exitReason).toBe("left");
  });

  test("UPDATE_CONTACT moves tracked segments (entry event recorded on the contact)", async () => {
    const seg = ok(
      await srv.api("/segments", {
        key: acc.secretKey,
        body: { name: `WF VIP ${seq++}`, trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.wfvip", operator: "equals", value: "yes" }] }] } },
      }),
      201,
    );
    const w = await chain([["UPDATE_CONTACT", { updates: { wfvip: "yes" }, subscriptionAction: "none" }]]);
    const c = await newContact();
    await waitExec(w.id, ok(await startExec(w.id, { contactId: c.id }), 201).id, "COMPLETED");
    const entry = await waitFor(async () => (await eventsOf(c.id)).find((ev) => ev.name === `segment.${seg.slug}.entry`), { what: "the segment entry event" });
    expect(entry.data).toMatchObject({ segmentId: seg.id });
  });

  test("a MANUAL workflow is not started by events, even with an eventName left in triggerConfig", async () => {
    const name = `bb_left_${seq++}`;
    const w = await chain([["EXIT", {}]], { eventName: name });
    ok(await patchWf(w.id, { triggerType: "MANUAL" }), 200);
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name } }), 200);
    await srv.drainJobs();
    expect(items(ok(await listExecs(w.id), 200))).toEqual([]);
  });

  test("CONDITION yes/no: data fields, the triggering event's data (event.<key>) and a missing branch ends the execution", async () => {
    const name = `bb_order_${seq++}`;
    const w = await wf({ triggerConfig: { eventName: name }, allowReentry: true });
    const cond = await step(w.id, "CONDITION", { logic: "AND", groups: [{ filters: [{ field: "event.amount", operator: "greaterThan", value: 100 }] }] });
    const yes = await step(w.id, "UPDATE_CONTACT", { updates: { tier: "big" }, subscriptionAction: "none" });
    await link(w.id, cond.id, yes.id, "yes"); // "no" has no transition: the end
    ok(await patchWf(w.id, { enabled: true }), 200);
    const big = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name, data: { amount: 150 } } }), 200).data.contact;
    const small = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name, data: { amount: 50 } } }), 200).data.contact;
    const rows = await waitExecs(w.id, (r) => r.length === 2 && r.every((e) => e.status === "COMPLETED"));
    expect(rows.map((r) => r.contactId).sort()).toEqual([big, small].sort());
    expect((await contactOf(big)).data.tier).toBe("big");
    expect((await contactOf(small)).data.tier).toBeUndefined();
    const smallExec = rows.find((r) => r.contactId === small);
    const view = ok(await getExec(w.id, smallExec.id), 200);
    expect(view.steps.map((s: any) => s.type)).toEqual(["CONDITION"]);
  });

  test("CONDITION on contact data and on the context (workflow.<key>) takes the yes or the no branch", async () => {
    const w = await wf({ triggerType: "MANUAL", allowReentry: true });
    ok(await patchWf(w.id, { triggerType: "MANUAL" }), 200);
    const c1 = await step(w.id, "CONDITION", { field: "data.plan", operator: "equals", value: "pro" });
    const c2 = await step(w.id, "CONDITION", { field: "workflow.tier", operator: "equals", value: "gold" });
    const proGold = await step(w.id, "EXIT", { reason: "pro-gold" });
    const proOther = await step(w.id, "EXIT", { reason: "pro-other" });
    const notPro = await step(w.id, "EXIT", { reason: "not-pro" });
    await link(w.id, c1.id, c2.id, "yes");
    await link(w.id, c1.id, notPro.id, "no");
    await link(w.id, c2.id, proGold.id, "yes");
    await link(w.id, c2.id, proOther.id, "no");
    ok(await patchWf(w.id, { enabled: true }), 200);
    const run = async (data: Record<string, unknown>, context: Record<string, unknown>) => {
      const c = await newContact(data);
      const e = ok(await startExec(w.id, { contactId: c.id, context }), 201);
      return (await waitExec(w.id, e.id, ["EXITED", "COMPLETED", "FAILED"])).exitReason;
    };
    expect(await run({ plan: "pro" }, { tier: "gold" })).toBe("pro-gold");
    expect(await run({ plan: "pro" }, { tier: "silver" })).toBe("pro-other");
    expect(await run({ plan: "free" }, { tier: "gold" })).toBe("not-pro");
    expect(await run({}, {})).toBe("not-pro");
  });

  test("CONDITION on an event the contact triggered (triggered operator)", async () => {
    const name = `bb_bought_${seq++}`;
    const w = await wf({ allowReentry: true });
    ok(await patchWf(w.id, { triggerType: "MANUAL" }), 200);
    const c = await step(w.id, "CONDITION", { field: `event.${name}`, operator: "triggered" });
    const y = await step(w.id, "EXIT", { reason: "buyer" });
    const n = await step(w.id, "EXIT", { reason: "browser" });
    await link(w.id, c.id, y.id, "yes");
    await link(w.id, c.id, n.id, "no");
    ok(await patchWf(w.id, { enabled: true }), 200);
    const buyer = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name } }), 200).data.contact;
    const browser = (await newContact()).id;
    const e1 = ok(await startExec(w.id, { contactId: buyer }), 201);
    const e2 = ok(await startExec(w.id, { contactId: browser }), 201);
    expect((await waitExec(w.id, e1.id, ["EXITED", "COMPLETED", "FAILED"])).exitReason).toBe("buyer");
    expect((await waitExec(w.id, e2.id, ["EXITED", "COMPLETED", "FAILED"])).exitReason).toBe("browser");
  });

  test("UPDATE_CONTACT applies the data rules (null deletes, empty string ignored, reserved keys dropped) and unsubscribes with the event", async () => {
    const w = await chain([
      ["UPDATE_CONTACT", { updates: { plan: "pro", old: null, city: "", email: "hijack@evil.example", id: "x", score: 7, vip: true }, subscriptionAction: "unsubscribe" }],
    ]);
    const c = await newContact({ plan: "free", old: "x", city: "Rome" });
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    expect((await waitExec(w.id, e.id, ["COMPLETED", "FAILED"])).status).toBe("COMPLETED");
    const after = await contactOf(c.id);
    expect(after.data).toEqual({ plan: "pro", city: "Rome", score: 7, vip: true });
    expect(after.email).toBe(c.email);
    expect(after.id).toBe(c.id);
    expect(after.subscribed).toBe(false);
    const names = (await eventsOf(c.id)).map((ev) => ev.name);
    expect(names.filter((n) => n === "contact.unsubscribed").length).toBe(1);
  });

  test("UPDATE_CONTACT subscribe resubscribes and emits contact.subscribed; none leaves the subscription alone", async () => {
    const w = await chain([["UPDATE_CONTACT", { updates: {}, subscriptionAction: "subscribe" }]]);
    const c = await newContact({}, false);
    await waitExec(w.id, ok(await startExec(w.id, { contactId: c.id }), 201).id, "COMPLETED");
    expect((await contactOf(c.id)).subscribed).toBe(true);
    expect((await eventsOf(c.id)).filter((ev) => ev.name === "contact.subscribed").length).toBe(1);

    const w2 = await chain([["UPDATE_CONTACT", { updates: { k: "v" }, subscriptionAction: "none" }]]);
    const c2 = await newContact({}, false);
    await waitExec(w2.id, ok(await startExec(w2.id, { contactId: c2.id }), 201).id, "COMPLETED");
    const after = await contactOf(c2.id);
    expect(after.subscribed).toBe(false);
    expect(after.data.k).toBe("v");
    expect((await eventsOf(c2.id)).filter((ev) => ev.name.startsWith("contact.")).length).toBe(0);
  });

  test("EXIT ends the execution as EXITED with its reason; later steps do not run", async () => {
    const w = await chain([
      ["EXIT", { reason: "not interested" }],
    ]);
    const c = await newContact();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    const done = await waitExec(w.id, e.id, ["EXITED", "COMPLETED", "FAILED"]);
    expect(done.status).toBe("EXITED");
    expect(done.exitReason).toBe("not interested");
    expect(isIsoDate(done.completedAt)).toBe(true);
  });

  test("SEND_EMAIL writes a WORKFLOW email rendered with contact data, event.* and workflow.*", async () => {
    const tpl = ok(
      await srv.api("/templates", {
        key: acc.secretKey,
        body: { name: "wf mail", subject: "Hi {{firstName}}|{{workflow.coupon}}|{{event.item}}", body: "<p>{{event.item}}</p>", from: FROM, type: "TRANSACTIONAL" },
      }),
      201,
    );
    const name = `bb_cart_${seq++}`;
    const w = await chain([["SEND_EMAIL", { templateId: tpl.id }]], { eventName: name });
    const email = uniq();
    const contactId = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email, event: name, data: { firstName: "Ann", item: "Shoes" } } }), 200).data.contact;
    const rows = await waitExecs(w.id, (r) => r.length === 1 && ["COMPLETED", "FAILED"].includes(r[0].status));
    expect(rows[0].status).toBe("COMPLETED");
    const mails = items(ok(await srv.api(`/emails?contactId=${contactId}`, { key: acc.secretKey }), 200));
    expect(mails.length).toBe(1);
    expect(mails[0]).toMatchObject({ sourceType: "WORKFLOW", to: email, subject: "Hi Ann||Shoes" });
    // The context of a manual start is workflow.*
    const w2 = await chain([["SEND_EMAIL", { templateId: tpl.id }]]);
    const c = await newContact({ firstName: "Bo" });
    await waitExec(w2.id, ok(await startExec(w2.id, { contactId: c.id, context: { coupon: "SAVE10" } }), 201).id, "COMPLETED");
    const m2 = items(ok(await srv.api(`/emails?contactId=${c.id}`, { key: acc.secretKey }), 200));
    expect(m2.length).toBe(1);
    expect(m2[0]).toMatchObject({ sourceType: "WORKFLOW", subject: "Hi Bo|SAVE10|" });
  });

  test("SEND_EMAIL of a MARKETING template skips an unsubscribed contact and goes on", async () => {
    const tpl = ok(await srv.api("/templates", { key: acc.secretKey, body: { name: "wf mkt", subject: "News", body: "<p>n</p>", from: FROM, type: "MARKETING" } }), 201);
    const w = await chain([
      ["SEND_EMAIL", { templateId: tpl.id }],
      ["UPDATE_CONTACT", { updates: { after: "send" }, subscriptionAction: "none" }],
    ]);
    const c = await newContact({}, false);
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    const done = await waitExec(w.id, e.id, ["COMPLETED", "FAILED", "EXITED"]);
    expect(done.status).toBe("COMPLETED");
    expect(done.steps.map((s: any) => [s.type, s.status])).toEqual([
      ["SEND_EMAIL", "SKIPPED"],
      ["UPDATE_CONTACT", "COMPLETED"],
    ]);
    expect((await contactOf(c.id)).data.after).toBe("send");
    expect(items(ok(await srv.api(`/emails?contactId=${c.id}`, { key: acc.secretKey }), 200))).toEqual([]);
  });

  test("SEND_EMAIL over the project's workflows billing cap fails its step and sends nothing", async () => {
    const other = await newProject(srv.api, acc, "WF capped");
    await addVerifiedDomain(srv.api, dns, other, SENDER_DOMAIN);
    const tpl = ok(await srv.api("/templates", { key: other.secretKey, body: { name: "capped", subject: "S", body: "<p>b</p>", from: FROM, type: "TRANSACTIONAL" } }), 201);
    ok(
      await srv.api(`/users/@me/projects/${other.projectId}/billing-limits`, {
        method: "PUT",
        cookie: acc.cookie,
        body: { transactional: null, campaigns: null, workflows: 0, inbound: null },
      }),
      200,
    );
    const w = await chain([["SEND_EMAIL", { templateId: tpl.id }]], {}, other);
    const c = await newContact({}, true, other);
    const e = ok(await startExec(w.id, { contactId: c.id }, other), 201);
    const done = await waitExec(w.id, e.id, ["COMPLETED", "FAILED", "EXITED"], other);
    expect(done.status).toBe("FAILED");
    expect(done.steps.map((s: any) => [s.type, s.status])).toEqual([["SEND_EMAIL", "FAILED"]]);
    expect(typeof done.steps[0].error).toBe("string");
    expect(items(ok(await srv.api(`/emails?contactId=${c.id}`, { key: other.secretKey }), 200))).toEqual([]);
  });

  test("WEBHOOK: default body, rendered url/headers/body, Standard Webhooks signature; 2xx continues, 4xx fails", async () => {
    const projects = ok(await srv.api("/users/@me/projects", { cookie: acc.cookie }), 200);
    const secret: string = items(projects).find((p: any) => p.id === acc.projectId).webhookSecret;
    expect(secret).toMatch(/^whsec_/);
    const base = `http://127.0.0.1:${hook.port}`;
    const w = await chain([
      ["WEBHOOK", { url: `${base}/ok?e={{email}}` }],
      ["WEBHOOK", { url: `${base}/custom`, method: "PUT", headers: { "x-tag": "{{workflow.tag}}" }, body: { hello: "{{email}}", plan: "{{plan}}" } }],
    ]);
    const c = await newContact({ plan: "pro" });
    const before = hookRequests.length;
    const e = ok(await startExec(w.id, { contactId: c.id, context: { tag: "T1" } }), 201);
    const done = await waitExec(w.id, e.id, ["COMPLETED", "FAILED", "EXITED"]);
    expect(done.status).toBe("COMPLETED");
    const reqs = hookRequests.slice(before);
    expect(reqs.length).toBe(2);

    const first = reqs[0]!;
    expect(first.method).toBe("POST");
    expect(new URL(first.url).searchParams.get("e")).toBe(c.email);
    const body = JSON.parse(first.body);
    expect(body.contact).toMatchObject({ id: c.id, email: c.email, subscribed: true, data: { plan: "pro" } });
    expect(body.workflow).toMatchObject({ id: w.id });
    expect(typeof body.workflow.name).toBe("string");
    expect(body.execution).toMatchObject({ id: e.id });
    expect(body).toHaveProperty("event");
    // Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body"> keyed by the base64 part of whsec_…
    const id = first.headers["webhook-id"]!;
    const ts = first.headers["webhook-timestamp"]!;
    expect(id).toBeTruthy();
    expect(ts).toMatch(/^\d+$/);
    const expected = createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64")).update(`${id}.${ts}.${first.body}`).digest("base64");
    expect(first.headers["webhook-signature"]!.split(" ")).toContain(`v1,${expected}`);

    const second = reqs[1]!;
    expect(second.method).toBe("PUT");
    expect(second.headers["x-tag"]).toBe("T1");
    expect(JSON.parse(second.body)).toEqual({ hello: c.email, plan: "pro" });

    const hookStep = done.steps[0];
    expect(hookStep).toMatchObject({ type: "WEBHOOK", status: "COMPLETED" });
    expect(JSON.stringify(hookStep.output)).toContain("200");

    const bad = await chain([["WEBHOOK", { url: `${base}/bad` }], ["UPDATE_CONTACT", { updates: { unreachable: 1 }, subscriptionAction: "none" }]]);
    const c2 = await newContact();
    const e2 = ok(await startExec(bad.id, { contactId: c2.id }), 201);
    const failed = await waitExec(bad.id, e2.id, ["COMPLETED", "FAILED", "EXITED"]);
    expect(failed.status).toBe("FAILED");
    expect(typeof failed.exitReason).toBe("string");
    expect(failed.exitReason.length).toBeGreaterThan(0);
    expect(failed.steps.map((s: any) => [s.type, s.status])).toEqual([["WEBHOOK", "FAILED"]]);
    expect(failed.steps[0].error).toBeTruthy();
    expect((await contactOf(c2.id)).data.unreachable).toBeUndefined();
    expect(hookRequests.filter((r) => new URL(r.url).pathname === "/bad").length).toBe(1); // 4xx: no retry
  });

  test("WEBHOOK: GET sends no body, a string body is sent as is; 5xx is retried and may then succeed", async () => {
    const base = `http://127.0.0.1:${hook.port}`;
    const path = `/flaky/${seq++}`;
    const w = await chain([
      ["WEBHOOK", { url: `${base}/get`, method: "GET" }],
      ["WEBHOOK", { url: `${base}/text`, body: "hello {{email}}" }],
      ["WEBHOOK", { url: base + path }],
    ]);
    const c = await newContact();
    const before = hookRequests.length;
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    // Retry waits are server time: move the clock along while waiting.
    const done = await waitFor(
      async () => {
        srv.clock.advance(60_000);
        await srv.drainJobs();
        return ok(await getExec(w.id, e.id), 200);
      },
      { until: (x: any) => ["COMPLETED", "FAILED", "EXITED"].includes(x.status), what: `execution ${e.id} done` },
    );
    expect(done.status).toBe("COMPLETED");
    const reqs = hookRequests.slice(before);
    expect(reqs[0]).toMatchObject({ method: "GET", body: "" });
    expect(reqs[1]).toMatchObject({ method: "POST", body: `hello ${c.email}` });
    const attempts = reqs.filter((r) => new URL(r.url).pathname === path);
    expect(attempts.length).toBe(3);
    expect(new Set(attempts.map((r) => r.headers["webhook-id"])).size).toBe(1);
  });

  test("WEBHOOK: 5xx every time fails the execution after 3 retries", async () => {
    const base = `http://127.0.0.1:${hook.port}`;
    const path = `/fail/${seq++}`;
    const w = await chain([["WEBHOOK", { url: base + path }]]);
    const c = await newContact();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    const done = await waitFor(
      async () => {
        srv.clock.advance(10 * 60_000);
        await srv.drainJobs();
        return ok(await getExec(w.id, e.id), 200);
      },
      { until: (x: any) => ["COMPLETED", "FAILED", "EXITED"].includes(x.status), what: `execution ${e.id} done` },
    );
    expect(done.status).toBe("FAILED");
    expect(done.steps.map((s: any) => [s.type, s.status])).toEqual([["WEBHOOK", "FAILED"]]);
    expect(JSON.stringify(done.steps[0].output)).toContain("500");
    expect(hookRequests.filter((r) => new URL(r.url).pathname === path).length).toBe(4);
  });

  test("WAIT_FOR_EVENT: an event of that name on the same contact after the wait began takes the event branch", async () => {
    const name = `bb_paid_${seq++}`;
    const w = await wf({ allowReentry: true });
    ok(await patchWf(w.id, { triggerType: "MANUAL" }), 200);
    const wait = await step(w.id, "WAIT_FOR_EVENT", { eventName: name, timeout: 3600 });
    const paid = await step(w.id, "EXIT", { reason: "paid" });
    const timedOut = await step(w.id, "EXIT", { reason: "timed out" });
    await link(w.id, wait.id, paid.id, "event");
    await link(w.id, wait.id, timedOut.id, "timeout");
    ok(await patchWf(w.id, { enabled: true }), 200);

    // An event tracked before the wait began does not count.
    const early = ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name } }), 200).data.contact;
    const other = await newContact();
    const eEarly = ok(await startExec(w.id, { contactId: early }), 201);
    const eOther = ok(await startExec(w.id, { contactId: other.id }), 201);
    const waiting = await waitExec(w.id, eEarly.id, "WAITING");
    expect(waiting.currentStepId).toBe(wait.id);
    await waitExec(w.id, eOther.id, "WAITING");

    // The same name on another contact does nothing; on this contact it resumes.
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: uniq(), event: name } }), 200);
    await srv.drainJobs();
    expect(ok(await getExec(w.id, eOther.id), 200).status).toBe("WAITING");
    expect(ok(await getExec(w.id, eEarly.id), 200).status).toBe("WAITING");
    ok(await srv.api("/v1/track", { key: acc.publicKey, body: { email: other.email, event: name } }), 200);
    const resumed = await waitExec(w.id, eOther.id, ["EXITED", "COMPLETED", "FAILED"]);
    expect(resumed.exitReason).toBe("paid");
    expect(resumed.steps.map((s: any) => [s.type, s.status])).toEqual([
      ["WAIT_FOR_EVENT", "COMPLETED"],
      ["EXIT", "COMPLETED"],
    ]);
    expect(ok(await getExec(w.id, eEarly.id), 200).status).toBe("WAITING");

    // The timeout branch after `timeout` seconds (server clock moved).
    srv.clock.advance(3601_000);
    const late = await waitExec(w.id, eEarly.id, ["EXITED", "COMPLETED", "FAILED"]);
    expect(late.exitReason).toBe("timed out");
  });

  test("DELAY: WAITING until amount/unit has passed on the server clock, then the next step runs", async () => {
    const w = await chain([
      ["DELAY", { amount: 2, unit: "hours" }],
      ["UPDATE_CONTACT", { updates: { delayed: "done" }, subscriptionAction: "none" }],
    ]);
    const c = await newContact();
    const from = srv.clock.now();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    const waiting = await waitExec(w.id, e.id, "WAITING");
    const to = srv.clock.now(); // the delay starts when the engine reaches the step
    expect(waiting.currentStepId).toBe(w.steps[0]);
    expect(waiting.steps.map((s: any) => [s.type, s.status])).toEqual([["DELAY", "WAITING"]]);
    if (waiting.resumeAt !== undefined) expectTimeBetween(waiting.resumeAt, from + 2 * 3600_000, to + 2 * 3600_000);

    srv.clock.advance(3600_000);
    await srv.drainJobs();
    expect(ok(await getExec(w.id, e.id), 200).status).toBe("WAITING");
    expect((await contactOf(c.id)).data.delayed).toBeUndefined();

    srv.clock.advance(3600_000 + 1000);
    const done = await waitExec(w.id, e.id, ["COMPLETED", "FAILED"]);
    expect(done.status).toBe("COMPLETED");
    expect(done.steps.map((s: any) => [s.type, s.status])).toEqual([
      ["DELAY", "COMPLETED"],
      ["UPDATE_CONTACT", "COMPLETED"],
    ]);
    expect((await contactOf(c.id)).data.delayed).toBe("done");
  });
});

describe("GET /workflows/fields", () => {
  test("{ standard, custom, events, eventData, workflow }: contact fields, event names as event.<name>, event data keys", async () => {
    const other = await newProject(srv.api, acc, "WF fields");
    ok(await srv.api("/v1/track", { key: other.publicKey, body: { email: uniq(), event: "fields_evt", data: { sku: "A1" } } }), 200);
    const res = await srv.api("/workflows/fields", { key: other.secretKey });
    const body = ok(res, 200);
    for (const k of ["standard", "custom", "events", "eventData", "workflow"]) expect(Array.isArray(body[k])).toBe(true);
    expect(body.standard.map((f: any) => f.name)).toContain("email");
    expect(body.custom).toContainEqual(expect.objectContaining({ name: "sku", path: "data.sku" }));
    expect(body.events).toContainEqual(expect.objectContaining({ name: "fields_evt", path: "event.fields_evt" }));
    expect(body.eventData).toContainEqual(expect.objectContaining({ name: "sku", path: "event.sku" }));
  });
});

describe("usage endpoints name workflows", () => {
  test("template, event and field usage list the workflow steps and triggers that reference them", async () => {
    const tpl = ok(await srv.api("/templates", { key: acc.secretKey, body: { name: "usage", subject: "S", body: "<p>b</p>", from: FROM } }), 201);
    const trig = `usage_trigger_${seq++}`;
    const waited = `usage_waited_${seq++}`;
    const w = await wf({ triggerConfig: { eventName: trig } });
    const send = await step(w.id, "SEND_EMAIL", { templateId: tpl.id });
    await step(w.id, "WAIT_FOR_EVENT", { eventName: waited });
    await step(w.id, "CONDITION", { field: "data.usagefield", operator: "equals", value: "x" });
    const tu = ok(await srv.api(`/templates/${tpl.id}/usage`, { key: acc.secretKey }), 200);
    expect(tu.workflows).toContainEqual(expect.objectContaining({ id: w.id, name: w.name, stepId: send.id }));
    for (const name of [trig, waited]) {
      const eu = ok(await srv.api(`/events/${name}/usage`, { key: acc.secretKey }), 200);
      expect(eu.workflows.map((x: any) => x.id)).toContain(w.id);
    }
    const fu = ok(await srv.api(`/contacts/fields/usagefield/usage`, { key: acc.secretKey }), 200);
    expect(fu.workflows.map((x: any) => x.id)).toContain(w.id);
  });
});

describe("authentication and tenancy", () => {
  test("the public key is 401 INVALID_API_KEY; no key is 401", async () => {
    const w = await wf();
    expectEnvelope(await srv.api("/workflows", { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/workflows", { key: acc.publicKey, body: { name: "x" } }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api(`/workflows/${w.id}`, { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/workflows/fields", { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api(`/workflows/${w.id}/executions`, { key: acc.publicKey, body: { email: uniq() } }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/workflows"), 401);
  });

  test("another project's workflow, steps and executions are 404", async () => {
    const w = await chain([["WAIT_FOR_EVENT", { eventName: "never_comes" }]]);
    const c = await newContact();
    const e = ok(await startExec(w.id, { contactId: c.id }), 201);
    await waitExec(w.id, e.id, "WAITING");
    const other = await newProject(srv.api, acc, "WF intruder");
    expectEnvelope(await getWf(w.id, other), 404, "NOT_FOUND");
    expectEnvelope(await patchWf(w.id, { name: "mine" }, other), 404, "NOT_FOUND");
    expectEnvelope(await delWf(w.id, other), 404, "NOT_FOUND");
    expectEnvelope(await postStep(w.id, { type: "EXIT", config: {} }, other), 404, "NOT_FOUND");
    expectEnvelope(await patchStep(w.id, w.steps[0]!, { name: "x" }, other), 404, "NOT_FOUND");
    expectEnvelope(await delStep(w.id, w.steps[0]!, false, other), 404, "NOT_FOUND");
    expectEnvelope(await listExecs(w.id, "", other), 404, "NOT_FOUND");
    expectEnvelope(await getExec(w.id, e.id, other), 404, "NOT_FOUND");
    expectEnvelope(await cancelExec(w.id, e.id, other), 404, "NOT_FOUND");
    expectEnvelope(await cancelAll(w.id, other), 404, "NOT_FOUND");
    const oc = ok(await srv.api("/contacts", { key: other.secretKey, body: { email: uniq() } }));
    expectEnvelope(await startExec(w.id, { contactId: oc.id }, other), 404, "NOT_FOUND");
    // Nor can this project start a workflow for the other project's contact.
    expectEnvelope(await startExec(w.id, { contactId: oc.id }), 404, "NOT_FOUND");
    expect(ok(await getExec(w.id, e.id), 200).status).toBe("WAITING");
    expect(ok(await getWf(w.id), 200).name).not.toBe("mine");
    ok(await cancelExec(w.id, e.id), 200);
  });
});

describe("durability and address rules (own server)", () => {
  test("a DELAY resumes on time after a restart and runs its next step once; loopback webhooks are refused by default", async () => {
    const dir = mkdtempSync(join(tmpdir(), "wf-bb-"));
    const clock = new ManualClock();
    const dbPath = join(dir, "wf.db");
    let s1: TestServer | undefined = await startServer({ dbPath, clock });
    let s2: TestServer | undefined;
    try {
      const a = await createAccount(s1.api, "WF restart");
      const api = s1.api;
      const w = ok(await api("/workflows", { key: a.secretKey, body: { name: "Durable" } }), 201);
      const d = ok(await api(`/workflows/${w.id}/steps`, { key: a.secretKey, body: { type: "DELAY", config: { amount: 1, unit: "days" } } }), 201);
      const u = ok(await api(`/workflows/${w.id}/steps`, { key: a.secretKey, body: { type: "UPDATE_CONTACT", config: { updates: { visits: 1 }, subscriptionAction: "none" } } }), 201);
      ok(await api(`/workflows/${w.id}/transitions`, { key: a.secretKey, body: { fromStepId: d.id, toStepId: u.id } }), 201);
      ok(await api(`/workflows/${w.id}`, { method: "PATCH", key: a.secretKey, body: { triggerType: "MANUAL", enabled: true } }), 200);
      const c = ok(await api("/contacts", { key: a.secretKey, body: { email: uniq("durable") } }));
      const e = ok(await api(`/workflows/${w.id}/executions`, { key: a.secretKey, body: { contactId: c.id } }), 201);
      await waitFor(async () => (await s1!.api(`/workflows/${w.id}/executions/${e.id}`, { key: a.secretKey })).body, {
        until: (x: any) => x.status === "WAITING",
        what: "WAITING before the restart",
      });
      await s1.close();
      s1 = undefined;

      s2 = await startServer({ dbPath, clock });
      const view = async () => {
        await s2!.drainJobs();
        return (await s2!.api(`/workflows/${w.id}/executions/${e.id}`, { key: a.secretKey })).body;
      };
      expect((await view()).status).toBe("WAITING");
      clock.advance(24 * 3600_000 + 1000);
      const done = await waitFor(view, { until: (x: any) => ["COMPLETED", "FAILED"].includes(x.status), what: "COMPLETED after the restart" });
      expect(done.status).toBe("COMPLETED");
      expect(done.steps.filter((x: any) => x.type === "UPDATE_CONTACT").length).toBe(1);
      expect((await s2.api(`/contacts/${c.id}`, { key: a.secretKey })).body.data).toEqual({ visits: 1 });

      // MAILSVC_ALLOW_PRIVATE_WEBHOOKS is off here: a loopback address fails the step and is never called.
      const before = hookRequests.length;
      const h = ok(await s2.api("/workflows", { key: a.secretKey, body: { name: "Private" } }), 201);
      ok(await s2.api(`/workflows/${h.id}/steps`, { key: a.secretKey, body: { type: "WEBHOOK", config: { url: `http://127.0.0.1:${hook.port}/private` } } }), 201);
      ok(await s2.api(`/workflows/${h.id}`, { method: "PATCH", key: a.secretKey, body: { triggerType: "MANUAL", enabled: true } }), 200);
      const he = ok(await s2.api(`/workflows/${h.id}/executions`, { key: a.secretKey, body: { contactId: c.id } }), 201);
      const failed = await waitFor(
        async () => {
          await s2!.drainJobs();
          return (await s2!.api(`/workflows/${h.id}/executions/${he.id}`, { key: a.secretKey })).body;
        },
        { until: (x: any) => ["COMPLETED", "FAILED"].includes(x.status), what: "the private webhook's execution to end" },
      );
      expect(failed.status).toBe("FAILED");
      expect(hookRequests.length).toBe(before);
    } finally {
      await s1?.close();
      await s2?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

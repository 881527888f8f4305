// Black-box, templates over the API: validation and syntax (README limits), template types in workflow emails
// (decisions.md "Templates, rendering, types"), duplicate, delete, usage and list filters. Written from api-spec.md,
// decisions.md and docs/api.md (the API guide) only; moved here from blackbox/public-api-more.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectEnvelope, expectOffsetPage, expectOk, expectValidation, newProject, rawHeader } from "../blackbox/support";
import { addVerifiedDomain } from "../domains/support";
import { addresses, createTemplate } from "../support/api";
import { deliveryEnv, lastMessageFor, type DeliveryEnv } from "../support/delivery";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";

const SENDER_DOMAIN = "tpl.bb.example";
const RCPT_DOMAIN = "inbox-tpl-bb.example";
const FROM = `hello@${SENDER_DOMAIN}`;

let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;
beforeAll(async () => {
  env = await deliveryEnv({ name: "BB templates", mailDomain: RCPT_DOMAIN, senderDomain: SENDER_DOMAIN });
  ({ srv, dns, sink, acct: acc } = env);
});
afterAll(() => env?.close());

let seq = 0;
const rcpt = addresses(RCPT_DOMAIN, "m");
const send = (body: unknown) => srv.api("/v1/send", { key: acc.secretKey, body });
const mkTemplate = (extra: Record<string, unknown> = {}) => createTemplate(srv.api, acc, { name: "T", subject: "S", body: "<p>B</p>", from: FROM, ...extra });
/** The newest message the sink received for `address` (running queued work meanwhile). */
const messageFor = (address: string) => lastMessageFor(env, address);

describe("templates: validation and syntax (README limits)", () => {
  const base = { name: "V", subject: "S", body: "<p>B</p>", from: FROM };
  const create = (body: unknown) => srv.api("/templates", { key: acc.secretKey, body });

  test("limits: name 200, description 2,000, subject 998, body 2,000,000 characters (422 beyond)", async () => {
    expectOk(await create({ ...base, name: "n".repeat(200), description: "d".repeat(2000), subject: "s".repeat(998) }));
    expectValidation(await create({ ...base, name: "n".repeat(201) }), "name");
    expectValidation(await create({ ...base, description: "d".repeat(2001) }), "description");
    expectValidation(await create({ ...base, subject: "s".repeat(999) }), "subject");
    expectValidation(await create({ ...base, body: "b".repeat(2_000_001) }), "body");
  });

  test("a subject or fromName with a line break is 422 (create and PATCH)", async () => {
    expectValidation(await create({ ...base, subject: "a\nb" }), "subject");
    expectValidation(await create({ ...base, subject: "a\rb" }), "subject");
    expectValidation(await create({ ...base, fromName: "Team\r\nBcc: x@y.example" }), "fromName");
    const t = await mkTemplate();
    expectValidation(await srv.api(`/templates/${t.id}`, { method: "PATCH", key: acc.secretKey, body: { subject: "a\nb" } }), "subject");
    expectValidation(await srv.api(`/templates/${t.id}`, { method: "PATCH", key: acc.secretKey, body: { fromName: "a\nb" } }), "fromName");
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).body.subject).toBe("S");
  });

  test("block helpers, partials and comments are 422 invalid_template", async () => {
    for (const body of ["{{#if vip}}x{{/if}}", "{{> footer}}", "{{! note }}"]) {
      const errs = expectValidation(await create({ ...base, body }));
      expect(errs.map((e) => e.code)).toContain("invalid_template");
    }
  });

  test("a syntax error is 422 invalid_template with details.<field> = { position, line, column }", async () => {
    const err = expectEnvelope(await create({ ...base, body: "<p>ok</p>\n<p>{{name</p>" }), 422, "VALIDATION_ERROR");
    expect(err.errors!.find((e) => e.field === "body")?.code).toBe("invalid_template");
    const pos = err.details!.body as any;
    expect(typeof pos.position).toBe("number");
    expect(pos.line).toBe(2);
    expect(typeof pos.column).toBe("number");
    const sub = expectEnvelope(await create({ ...base, subject: "Hi {{name" }), 422, "VALIDATION_ERROR");
    expect(sub.errors!.find((e) => e.field === "subject")?.code).toBe("invalid_template");
    expect((sub.details!.subject as any).line).toBe(1);
    const t = await mkTemplate();
    const p = expectValidation(await srv.api(`/templates/${t.id}`, { method: "PATCH", key: acc.secretKey, body: { body: "{{#each x}}{{/each}}" } }), "body");
    expect(p.map((e) => e.code)).toContain("invalid_template");
  });

  test("rendering variables (README \"Templates and rendering\"): the template's placeholders use the send's data", async () => {
    const t = await mkTemplate({ subject: "Hi {{ firstName ?? \"there\" }}", body: "<p>{{plan}} / {{{html}}}</p>" });
    const to = rcpt("tplvars");
    expectOk(await send({ to, template: t.id, data: { plan: "<gold>", html: "<i>x</i>" } }));
    const parsed = await (await messageFor(to)).parse();
    expect(parsed.subject).toBe("Hi there");
    expect(String(parsed.html)).toContain("&lt;gold&gt; / <i>x</i>");
  });
});

describe("template types in workflow emails (decisions.md \"Templates, rendering, types\")", () => {
  /** A MANUAL, enabled workflow of one SEND_EMAIL step; runs it for `email` and returns the finished execution. */
  async function runWith(type: string, email: string, body = "<p>Hello {{firstName}}</p>") {
    const t = await mkTemplate({ name: `wf ${type}`, subject: `${type} {{firstName}}`, body, type });
    const w = (await srv.api("/workflows", { key: acc.secretKey, body: { name: `types ${type} ${++seq}` } })).body;
    const st = await srv.api(`/workflows/${w.id}/steps`, { key: acc.secretKey, body: { type: "SEND_EMAIL", config: { templateId: t.id } } });
    expect(st.status).toBe(201);
    expect((await srv.api(`/workflows/${w.id}`, { method: "PATCH", key: acc.secretKey, body: { triggerType: "MANUAL", enabled: true } })).status).toBe(200);
    const ex = await srv.api(`/workflows/${w.id}/executions`, { key: acc.secretKey, body: { email } });
    expect(ex.status).toBe(201);
    return waitFor(
      async () => {
        await srv.drainJobs();
        return (await srv.api(`/workflows/${w.id}/executions/${ex.body.id}`, { key: acc.secretKey })).body;
      },
      { until: (e: any) => ["COMPLETED", "FAILED", "EXITED"].includes(e.status), what: `execution of ${type}` },
    );
  }
  const contact = async (email: string, subscribed: boolean) =>
    expectOk(await srv.api("/contacts", { key: acc.secretKey, body: { email, subscribed, data: { firstName: "Wes" } } }));

  test("HEADLESS skips an unsubscribed contact; TRANSACTIONAL reaches it, without footer or List-Unsubscribe", async () => {
    const to = rcpt("wfunsub");
    await contact(to, false);
    const headless = await runWith("HEADLESS", to);
    expect(headless.steps.map((x: any) => x.status)).toEqual(["SKIPPED"]);
    const tx = await runWith("TRANSACTIONAL", to);
    expect(tx.steps.map((x: any) => x.status)).toEqual(["COMPLETED"]);
    const m = await messageFor(to);
    const parsed = await m.parse();
    expect(parsed.subject).toBe("TRANSACTIONAL Wes");
    expect(String(parsed.html)).not.toContain("/unsubscribe/");
    expect(rawHeader(m, "List-Unsubscribe")).toBeUndefined();
    expect(sink.byRecipient(to).length).toBe(1);
  });

  test("MARKETING adds the footer and List-Unsubscribe(-Post); HEADLESS the headers only", async () => {
    const to = rcpt("wfsub");
    await contact(to, true);
    expect((await runWith("MARKETING", to)).status).toBe("COMPLETED");
    const mk = await messageFor(to);
    expect(String((await mk.parse()).html)).toContain("/unsubscribe/");
    expect(rawHeader(mk, "List-Unsubscribe")).toMatch(/<https?:[^>]+\/unsubscribe\/[^>]+>/);
    expect(rawHeader(mk, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    expect((await runWith("HEADLESS", to)).status).toBe("COMPLETED");
    const hl = await waitFor(async () => {
      await srv.drainJobs();
      return sink.byRecipient(to)[1];
    }, { what: "the HEADLESS message" });
    expect((await hl.parse()).subject).toBe("HEADLESS Wes");
    expect(String((await hl.parse()).html)).not.toContain("/unsubscribe/");
    expect(rawHeader(hl, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
  });
});

describe("templates: duplicate, delete, usage, list filters", () => {
  test("duplicate answers 201 with the whole new template named \"<name> (copy)\" (README)", async () => {
    const t = await mkTemplate({ name: "Dup me", description: "desc", fromName: "FN", replyTo: "r@elsewhere-more.example", type: "TRANSACTIONAL" });
    srv.clock.advance(1000);
    const at = srv.clock.now();
    const res = await srv.api(`/templates/${t.id}/duplicate`, { method: "POST", key: acc.secretKey });
    expect(res.status).toBe(201);
    const copy = res.body;
    expect(copy.id).not.toBe(t.id);
    expect(copy).toMatchObject({
      name: "Dup me (copy)",
      description: "desc",
      subject: t.subject,
      body: t.body,
      from: t.from,
      fromName: "FN",
      replyTo: "r@elsewhere-more.example",
      type: "TRANSACTIONAL",
      projectId: acc.projectId,
    });
    expectTimeBetween(copy.createdAt, at, srv.clock.now());
    expect((await srv.api(`/templates/${copy.id}`, { key: acc.secretKey })).body).toEqual(copy);
  });

  test("PATCH re-checks the sender only when from changes (README); a send with a sender that is no longer verified is 403", async () => {
    const p = await newProject(srv.api, acc, "Tpl failing domain");
    const d = await addVerifiedDomain(srv.api, dns, p, "fading-more.bb.example");
    const t = (await srv.api("/templates", { key: p.secretKey, body: { name: "Fading", subject: "s", body: "b", from: "a@fading-more.bb.example" } })).body;
    // The DKIM record disappears: the domain is no longer verified (decisions.md "Domains").
    dns.remove(d.records.find((r) => r.purpose === "dkim")!.name, "TXT");
    const check = await srv.api(`/domains/${d.id}/verify`, { key: p.secretKey });
    expect(check.body.status).toBe("FAILED");
    const renamed = await srv.api(`/templates/${t.id}`, { method: "PATCH", key: p.secretKey, body: { name: "Renamed", subject: "s2" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: "Renamed", subject: "s2", from: "a@fading-more.bb.example" });
    expectEnvelope(await srv.api(`/templates/${t.id}`, { method: "PATCH", key: p.secretKey, body: { from: "b@fading-more.bb.example" } }), 403, "INTERNAL_SERVER_ERROR");
    expectEnvelope(await srv.api("/v1/send", { key: p.secretKey, body: { to: rcpt(), template: t.id } }), 403, "INTERNAL_SERVER_ERROR");
  });

  test("DELETE answers { success: true }", async () => {
    const t = await mkTemplate();
    const res = await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true });
  });

  test("usage is { campaigns: [{ id, name, status }], workflows: [{ id, name, stepId }] }; DELETE is 409 INVALID_STATE while a step uses it", async () => {
    const t = await mkTemplate({ name: "Used" });
    const camp = await srv.api("/campaigns", {
      key: acc.secretKey,
      body: { name: "From template", subject: "S", body: "<p>B</p>", from: FROM, audienceType: "ALL", templateId: t.id },
    });
    expect(camp.status).toBe(201);
    const wf = await srv.api("/workflows", { key: acc.secretKey, body: { name: "Uses template", triggerConfig: { eventName: "never_x" } } });
    expect(wf.status).toBe(201);
    const step = await srv.api(`/workflows/${wf.body.id}/steps`, { key: acc.secretKey, body: { type: "SEND_EMAIL", config: { templateId: t.id } } });
    expect(step.status).toBe(201);
    const usage = await srv.api(`/templates/${t.id}/usage`, { key: acc.secretKey });
    expect(usage.status).toBe(200);
    expect(Object.keys(usage.body).sort()).toEqual(["campaigns", "workflows"]);
    expect(usage.body.campaigns).toEqual([{ id: camp.body.data.id, name: "From template", status: "DRAFT" }]);
    expect(usage.body.workflows).toEqual([{ id: wf.body.id, name: "Uses template", stepId: step.body.id }]);
    expectEnvelope(await srv.api(`/templates/${t.id}`, { method: "DELETE", key: acc.secretKey }), 409, "INVALID_STATE");
    expect((await srv.api(`/templates/${t.id}`, { key: acc.secretKey })).status).toBe(200);
  });

  test("an unknown type filter is 400; % and _ in search are literal (README)", async () => {
    const p = await newProject(srv.api, acc, "Tpl filters");
    await addVerifiedDomain(srv.api, dns, p, "filters-more.bb.example");
    for (const name of ["100% off", "plain name", "snake_case", "snakeXcase"]) {
      expect((await srv.api("/templates", { key: p.secretKey, body: { name, subject: "s", body: "b", from: "a@filters-more.bb.example" } })).status).toBe(201);
    }
    expectEnvelope(await srv.api("/templates?type=NEWSLETTER", { key: p.secretKey }), 400, "BAD_REQUEST");
    // search covers name, description and subject, not the sender address.
    expectOffsetPage(await srv.api("/templates?search=filters-more", { key: p.secretKey }), 1, 20, 0);
    const pct = await srv.api("/templates?search=%25", { key: p.secretKey });
    expectOffsetPage(pct, 1, 20, 1);
    expect(pct.body.data[0].name).toBe("100% off");
    const us = await srv.api("/templates?search=e_c", { key: p.secretKey });
    expectOffsetPage(us, 1, 20, 1);
    expect(us.body.data[0].name).toBe("snake_case");
  });

  test("the public key is refused on templates (401 INVALID_API_KEY)", async () => {
    expectEnvelope(await srv.api("/templates", { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/templates", { key: acc.publicKey, body: { name: "x", subject: "s", body: "b", from: FROM } }), 401, "INVALID_API_KEY");
  });

  test("a projectId in the body is ignored: the template belongs to the key's project", async () => {
    const other = await newProject(srv.api, acc, "Tpl body project");
    const res = await srv.api("/templates", { key: acc.secretKey, body: { name: "Mine", subject: "s", body: "b", from: FROM, projectId: other.projectId } });
    expect(res.status).toBe(201);
    expect(res.body.projectId).toBe(acc.projectId);
    expectEnvelope(await srv.api(`/templates/${res.body.id}`, { key: other.secretKey }), 404, "NOT_FOUND");
  });

  test("another project's template is 404 for send, get, duplicate and usage", async () => {
    const t = await mkTemplate();
    const other = await newProject(srv.api, acc, "Tpl intruder");
    expectEnvelope(await srv.api(`/templates/${t.id}`, { key: other.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/templates/${t.id}/duplicate`, { method: "POST", key: other.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/templates/${t.id}/usage`, { key: other.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api("/v1/send", { key: other.secretKey, body: { to: rcpt(), template: t.id } }), 404, "NOT_FOUND");
  });
});

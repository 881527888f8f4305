// The sandbox (decisions.md "Sandbox: try everything without DNS"): a sandbox project sends from any
// domain, its mail is built, signed and tracked as for real and captured instead of reaching an MX
// (the sink sees nothing), GET /emails/:id/raw answers the signed message, simulated recipients
// reach their final states through the real bounce/feedback paths and webhooks, nothing counts
// toward reputation, billing or the delivery metrics, and turning it off restores the 403.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { simpleParser } from "mailparser";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { CAPTURED_REPLY, fromSmtpData } from "../../src/mail/outbox/sandbox";
import type { DomainView } from "../domains/support";
import { RCPT, SENDER, emailView, verifyDkim, waitForView } from "../send/support";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import { createAccount } from "../support/server";
import { waitFor } from "../support/wait";
import { startReceiver, type Receiver } from "../webhooks/support";
import { chain, contact, must, start, waitForExecution } from "../workflows/support";
import { addUnverifiedDomain, dkimWithPublishedRecords, setSandbox } from "./support";

setDefaultTimeout(30_000);

const UNVERIFIED = "unverified.test";
const NOT_ADDED = "nowhere.test";

let env: DeliveryEnv;
let rx: Receiver;
let key: string;
let domain: DomainView;
beforeAll(async () => {
  env = await deliveryEnv({ mailDomain: RCPT, senderDomain: SENDER, config: { allowPrivateWebhooks: true } });
  env.dns.mailDomain("sim.test");
  rx = startReceiver();
  key = env.acct.secretKey;
  domain = await addUnverifiedDomain(env.srv.api, env.acct, UNVERIFIED);
}, 60_000);
afterAll(async () => {
  rx.close();
  await env.close();
});

const send = (body: Record<string, unknown>) => env.srv.api("/v1/send", { key, body });
const emailOf = (r: { body: any }) => r.body.data.emails[0].email as string;

async function metric(name: string): Promise<Record<string, number>> {
  const r = await env.srv.api("/metrics");
  expect(r.status).toBe(200);
  const families = parsePrometheusTextFormat(r.text) as { name: string; metrics: { labels?: Record<string, string>; value: string }[] }[];
  const out: Record<string, number> = {};
  for (const m of families.find((f) => f.name === name)?.metrics ?? []) out[m.labels?.result ?? ""] = Number(m.value);
  return out;
}

describe("turning the sandbox on", () => {
  test("a project is not a sandbox until an OWNER/ADMIN PATCHes it; a MEMBER cannot", async () => {
    const list = await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie });
    expect(list.body.find((p: { id: string }) => p.id === env.acct.projectId).sandbox).toBe(false);
    // Not a sandbox: the spec's 403 for a domain that is not verified.
    const refused = await send({ to: `ann@${RCPT}`, from: `hello@${UNVERIFIED}`, subject: "s", body: "<p>b</p>" });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toBe(`The sender domain "${UNVERIFIED}" is not verified for this project`);

    const member = await createAccount(env.srv.api);
    expect((await env.srv.api(`/projects/${env.acct.projectId}/members`, { cookie: env.acct.cookie, body: { email: member.email, role: "MEMBER" } })).status).toBe(201);
    const denied = await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: member.cookie, body: { sandbox: true } });
    expect(denied.status).toBe(403);

    const p = await setSandbox(env.srv.api, env.acct, true);
    expect(p).toMatchObject({ id: env.acct.projectId, sandbox: true });
    const row = await env.srv.ctx.db.selectFrom("projects").select("sandbox").where("id", "=", env.acct.projectId).executeTakeFirstOrThrow();
    expect(row.sandbox).toBe(1);
  });

  test("a project created as a sandbox by POST /users/@me/projects { sandbox: true }", async () => {
    const r = await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie, body: { name: "Try it", sandbox: true } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: "Try it", sandbox: true });
  });
});

describe("capture instead of an MX", () => {
  test("/v1/send from a domain added but not verified: DELIVERED, sandbox, captured; the sink sees nothing; raw is the signed message", async () => {
    env.sink.reset();
    const r = await send({ to: `ann@${RCPT}`, from: { name: "Hello", email: `hello@${UNVERIFIED}` }, subject: "Welcome {{name}}", body: "<p>Hi <b>{{name}}</b></p>", data: { name: "Ann" } });
    expect(r.status).toBe(200);
    const id = emailOf(r);
    const v = await waitForView(env.srv, key, id, "DELIVERED");
    expect(v).toMatchObject({ status: "DELIVERED", sandbox: true, lastReply: CAPTURED_REPLY, attempts: 1 });
    expect(v.mxHost).toBeUndefined();
    expect(env.sink.messages).toHaveLength(0);

    const raw = await env.srv.api(`/emails/${id}/raw`, { key });
    expect(raw.status).toBe(200);
    expect(raw.headers.get("content-type")).toBe("message/rfc822");
    const bytes = Buffer.from(raw.text, "latin1");
    const parsed = await simpleParser(bytes);
    expect(parsed.subject).toBe("Welcome Ann");
    expect(parsed.messageId).toBe(`<${id}@mailsvc.test>`);
    expect(parsed.from!.value[0]).toEqual({ name: "Hello", address: `hello@${UNVERIFIED}` });
    expect(parsed.html).toContain("Hi <b>Ann</b>");
    // Signed with the (unverified) domain's own key: it verifies once the record is published.
    const dkim = await dkimWithPublishedRecords(env, domain, bytes);
    expect(dkim).toHaveLength(1);
    expect(dkim[0]!.status.result).toBe("pass");
    expect(dkim[0]!.signingDomain).toBe(UNVERIFIED);
    expect(dkim[0]!.selector).toBe(domain.selector);

    // The persisted rows: the email marked sandbox, the message kept.
    const row = await env.srv.ctx.db.selectFrom("emails").select(["sandbox", "status", "mx_host"]).where("id", "=", id).executeTakeFirstOrThrow();
    expect(row).toEqual({ sandbox: 1, status: "DELIVERED", mx_host: null });
    const kept = await env.srv.ctx.db.selectFrom("email_raw").select(["project_id", "raw"]).where("email_id", "=", id).executeTakeFirstOrThrow();
    expect(kept.project_id).toBe(env.acct.projectId);
    expect(Buffer.from(kept.raw).equals(bytes)).toBe(true);

    // The dashboard's reading of it: DKIM pass against the domain's key, the domain not yet verified.
    const m = await env.srv.api(`/emails/${id}/message`, { key });
    expect(m.status).toBe(200);
    expect(m.body.message.dkim).toEqual([
      { result: "pass", domain: UNVERIFIED, selector: domain.selector, algorithm: "rsa-sha256", domainVerified: false, detail: "the signature verifies with the domain's DKIM key" },
    ]);
    expect(m.body.message.subject).toBe("Welcome Ann");
    expect(m.body.message.headers.find((h: { name: string }) => h.name === "Message-ID").value).toBe(`<${id}@mailsvc.test>`);
  });

  test("a sender domain the project never added: captured unsigned", async () => {
    const r = await send({ to: `bob@${RCPT}`, from: `app@${NOT_ADDED}`, subject: "Plain", body: "<p>x</p>", attachments: [{ filename: "a.txt", content: Buffer.from("attached").toString("base64") }] });
    expect(r.status).toBe(200);
    const id = emailOf(r);
    await waitForView(env.srv, key, id, "DELIVERED");
    const raw = await env.srv.api(`/emails/${id}/raw`, { key });
    expect(raw.status).toBe(200);
    expect(raw.text).not.toMatch(/^DKIM-Signature:/im);
    const m = await env.srv.api(`/emails/${id}/message`, { key });
    expect(m.body.message.dkim).toEqual([
      { result: "none", domain: null, selector: null, algorithm: null, domainVerified: null, detail: "unsigned: the project has not added the sender domain, so there was no key to sign with" },
    ]);
    expect(m.body.message.attachments).toEqual([{ filename: "a.txt", contentType: "text/plain", size: 8, contentId: null, disposition: "attachment" }]);
    expect(env.sink.messages).toHaveLength(0);
  });

  test("a verified domain in a sandbox is captured too, and signed as for real", async () => {
    const r = await send({ to: `cyd@${RCPT}`, from: `hello@${SENDER}`, subject: "Verified", body: "<p>v</p>" });
    const id = emailOf(r);
    await waitForView(env.srv, key, id, "DELIVERED");
    const raw = await env.srv.api(`/emails/${id}/raw`, { key });
    const dkim = await verifyDkim(env, Buffer.from(raw.text, "latin1"));
    expect(dkim.map((d) => [d.signingDomain, d.status.result])).toContainEqual([SENDER, "pass"]);
    expect(env.sink.messages).toHaveLength(0);
  });

  test("a campaign and its test send from an unverified domain are captured", async () => {
    const contact = await env.srv.api("/contacts", { key, body: { email: `camp@${RCPT}`, subscribed: true } });
    expect([200, 201]).toContain(contact.status);
    const c = await env.srv.api("/campaigns", {
      key,
      body: { name: "Sandbox news", subject: "News", body: "<p>News <a href=\"https://example.com/n\">n</a></p>", from: `news@${UNVERIFIED}`, audienceType: "ALL" },
    });
    expect(c.status).toBe(201);
    const t = await env.srv.api(`/campaigns/${c.body.data.id}/test`, { key, body: { email: `tester@${RCPT}` } });
    expect(t.status).toBe(200);
    const s = await env.srv.api(`/campaigns/${c.body.data.id}/send`, { key, body: {} });
    expect(s.status).toBe(200);
    const rows = await waitFor(
      () => env.srv.ctx.db.selectFrom("emails").select(["to_email", "status", "sandbox"]).where("to_email", "in", [`camp@${RCPT}`, `tester@${RCPT}`]).execute(),
      { until: (rs) => rs.length === 2 && rs.every((x) => x.status === "DELIVERED"), what: "the campaign's and the test send's emails captured" },
    );
    expect(rows.map((x) => x.sandbox)).toEqual([1, 1]);
    expect(env.sink.messages).toHaveLength(0);
  });
});

describe("templates and workflows", () => {
  test("a template from an unverified domain, sent by a workflow: captured, and not held by a workflows cap of 0", async () => {
    const limits = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-limits`, { method: "PUT", cookie: env.acct.cookie, body: { workflows: 0 } });
    expect(limits.status).toBe(200);
    const c = { api: env.srv.api, key };
    const tpl = await must(c.api("/templates", { key, body: { name: "Hello", subject: "Hi {{email}}", body: "<p>Welcome</p>", from: `team@${UNVERIFIED}`, type: "TRANSACTIONAL" } }), 201);
    const wf = await chain(c, [["SEND_EMAIL", { templateId: tpl.id }]]);
    await contact(c, `flow@${RCPT}`);
    const ex = await start(c, wf.id, { email: `flow@${RCPT}` });
    const done = await waitForExecution(c, wf.id, ex.id, "COMPLETED");
    const emailId = done.steps[0].output.emailId as string;
    const v = await waitForView(env.srv, key, emailId, "DELIVERED");
    expect(v).toMatchObject({ sourceType: "WORKFLOW", sandbox: true, from: `team@${UNVERIFIED}` });
    const usage = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-consumption`, { cookie: env.acct.cookie });
    expect(usage.body.workflows).toEqual({ used: 0, limit: 0, percentage: 0 });
    await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-limits`, { method: "PUT", cookie: env.acct.cookie, body: { workflows: null } });
    expect(env.sink.messages).toHaveLength(0);
  });
});

describe("simulated recipients", () => {
  let ep: { secret: string };
  beforeAll(async () => {
    // Opens and clicks are recorded from the message's own pixel and links: track every type.
    expect((await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { tracking: "ENABLED" } })).status).toBe(200);
    ep = (await env.srv.api("/webhook-endpoints", { key, body: { url: rx.url + "/sim", events: ["email.*"] } })).body;
  });
  const simSend = async (local: string) => {
    const r = await send({ to: `${local}@sim.test`, from: `hello@${UNVERIFIED}`, subject: "Sim", body: '<p>Hello <a href="https://example.com/landing">go</a></p>' });
    expect(r.status).toBe(200);
    return emailOf(r);
  };
  const hooksFor = (emailId: string, type: string) => rx.waitFor(1, (x) => x.path === "/sim" && x.json?.type === type && x.json?.data?.emailId === emailId);

  test("bounce@ hard-bounces with 550 5.1.1: BOUNCED, suppressed, unsubscribed, email.bounce webhook", async () => {
    const id = await simSend("bounce");
    const v = await waitForView(env.srv, key, id, "BOUNCED");
    expect(v.lastReply).toBe("550 5.1.1 <bounce@sim.test>: Recipient address rejected: user unknown (sandbox simulation)");
    expect(v.sandbox).toBe(true);
    const sup = await env.srv.ctx.db.selectFrom("suppressions").select(["email", "reason", "email_id"]).where("project_id", "=", env.acct.projectId).where("email", "=", "bounce@sim.test").executeTakeFirstOrThrow();
    expect(sup).toEqual({ email: "bounce@sim.test", reason: "HARD_BOUNCE", email_id: id });
    const [hook] = await hooksFor(id, "email.bounce");
    expect(hook!.json.data).toMatchObject({ emailId: id, code: 550, type: "hard" });
    // Suppressed from now on, as a real hard bounce.
    const again = await simSend("bounce");
    await waitForView(env.srv, key, again, "SUPPRESSED");
  });

  test("softbounce@ defers (450), then delivers on the retry", async () => {
    const id = await simSend("softbounce");
    const d = await waitForView(env.srv, key, id, "DEFERRED");
    expect(d.lastReply).toBe("450 4.2.1 <softbounce@sim.test>: Mailbox temporarily unavailable, try again later (sandbox simulation)");
    expect(d.attempts).toBe(1);
    await hooksFor(id, "email.deferred");
    env.srv.clock.advance(1_500);
    const later = await waitForView(env.srv, key, id, "DELIVERED");
    expect(later).toMatchObject({ attempts: 2, lastReply: CAPTURED_REPLY, sandbox: true });
    await hooksFor(id, "email.delivery");
  });

  test("complaint@ delivers, then complains by ARF: COMPLAINED, suppressed (complaint), unsubscribed, email.complaint webhook", async () => {
    const id = await simSend("complaint");
    const v = await waitForView(env.srv, key, id, "COMPLAINED");
    expect(v.sandbox).toBe(true);
    expect(typeof v.deliveredAt).toBe("string");
    const sup = await env.srv.ctx.db.selectFrom("suppressions").select(["reason", "detail"]).where("email", "=", "complaint@sim.test").executeTakeFirstOrThrow();
    expect(sup).toEqual({ reason: "COMPLAINT", detail: "abuse from mailsvc-sandbox/1.0" });
    const [hook] = await hooksFor(id, "email.complaint");
    expect(hook!.json.data).toMatchObject({ emailId: id, feedbackType: "abuse" });
    const contact = await env.srv.api(`/contacts/${v.contactId}`, { key });
    expect(contact.body.subscribed).toBe(false);
  });

  test("open@ opens (the message's pixel) and click@ clicks (its tracked link): OPENED, CLICKED, webhooks", async () => {
    const opened = await simSend("open");
    await waitForView(env.srv, key, opened, "OPENED");
    await hooksFor(opened, "email.open");
    const clicked = await simSend("click");
    await waitForView(env.srv, key, clicked, "CLICKED");
    const [hook] = await hooksFor(clicked, "email.click");
    expect(hook!.json.data).toMatchObject({ emailId: clicked, link: "https://example.com/landing" });
    expect(ep.secret).toMatch(/^whsec_/);
  });

  test("no reputation, billing or delivery-metric count; the sandbox has its own counter", async () => {
    const sec = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/security`, { cookie: env.acct.cookie });
    expect(sec.body).toMatchObject({ sends: 0, bounces: 0, complaints: 0, bounceRate: 0, complaintRate: 0, disabled: false });
    const usage = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-consumption`, { cookie: env.acct.cookie });
    expect(usage.body.transactional.used).toBe(0);
    expect(usage.body.campaigns.used).toBe(0);
    expect(await metric("mailsvc_delivery_attempts_total")).toEqual({});
    const captured = await metric("mailsvc_sandbox_captured_total");
    expect(captured.bounced).toBe(1);
    expect(captured.deferred).toBe(1);
    expect(captured.delivered).toBeGreaterThanOrEqual(8);
    expect(env.sink.messages).toHaveLength(0);
  });
});

describe("turning the sandbox off", () => {
  test("restores the 403 for an unverified domain; a verified domain's mail reaches the MX and its raw is not kept", async () => {
    // Queued while the project was a sandbox: still captured after the switch, never sent.
    const queued = await send({ to: "softbounce@sim.test", from: `hello@${UNVERIFIED}`, subject: "Queued", body: "<p>q</p>" });
    await waitForView(env.srv, key, emailOf(queued), "DEFERRED");
    const p = await setSandbox(env.srv.api, env.acct, false);
    expect(p.sandbox).toBe(false);
    env.srv.clock.advance(1_500);
    expect(await waitForView(env.srv, key, emailOf(queued), "DELIVERED")).toMatchObject({ sandbox: true, lastReply: CAPTURED_REPLY, attempts: 2 });
    expect(env.sink.messages).toHaveLength(0);
    const refused = await send({ to: `ann@${RCPT}`, from: `hello@${UNVERIFIED}`, subject: "s", body: "<p>b</p>" });
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toBe(`The sender domain "${UNVERIFIED}" is not verified for this project`);

    env.sink.reset();
    const r = await send({ to: `real@${RCPT}`, from: `hello@${SENDER}`, subject: "Real", body: "<p>r</p>" });
    const id = emailOf(r);
    const v = await waitForView(env.srv, key, id, "DELIVERED");
    expect(v.sandbox).toBeUndefined();
    expect(env.sink.byRecipient(`real@${RCPT}`)).toHaveLength(1);
    const raw = await env.srv.api(`/emails/${id}/raw`, { key });
    expect(raw.status).toBe(404);
    expect(raw.body.error.code).toBe("NOT_FOUND");
    // Real mail counts again.
    expect((await metric("mailsvc_delivery_attempts_total")).delivered).toBe(1);
    const usage = await env.srv.api(`/users/@me/projects/${env.acct.projectId}/billing-consumption`, { cookie: env.acct.cookie });
    expect(usage.body.transactional.used).toBe(1);
    // Captured mail stays readable after the switch.
    const earlier = await env.srv.ctx.db.selectFrom("emails").select("id").where("to_email", "=", `ann@${RCPT}`).where("sandbox", "=", 1).executeTakeFirstOrThrow();
    expect((await env.srv.api(`/emails/${earlier.id}/raw`, { key })).status).toBe(200);
    expect((await emailView(env.srv, key, earlier.id)).sandbox).toBe(true);
  });
});

describe("MAILSVC_SANDBOX and MAILSVC_KEEP_RAW", () => {
  test("MAILSVC_SANDBOX=true: every project is a sandbox", async () => {
    const e = await deliveryEnv({ mailDomain: RCPT, config: { sandbox: true } });
    try {
      const list = await e.srv.api("/users/@me/projects", { cookie: e.acct.cookie });
      expect(list.body[0].sandbox).toBe(true);
      const r = await e.srv.api("/v1/send", { key: e.acct.secretKey, body: { to: `x@${RCPT}`, from: `a@${NOT_ADDED}`, subject: "s", body: "<p>b</p>" } });
      expect(r.status).toBe(200);
      const v = await waitForView(e.srv, e.acct.secretKey, emailOf(r), "DELIVERED");
      expect(v).toMatchObject({ sandbox: true, lastReply: CAPTURED_REPLY });
      expect(e.sink.messages).toHaveLength(0);
    } finally {
      await e.close();
    }
  });

  test("MAILSVC_KEEP_RAW=true: GET /emails/:id/raw of real mail is the exact message the MX received", async () => {
    const e = await deliveryEnv({ mailDomain: RCPT, senderDomain: SENDER, config: { keepRaw: true } });
    try {
      const r = await e.srv.api("/v1/send", { key: e.acct.secretKey, body: { to: `x@${RCPT}`, from: `a@${SENDER}`, subject: "Kept", body: "<p>.leading dot\n.line</p>" } });
      const id = emailOf(r);
      const v = await waitForView(e.srv, e.acct.secretKey, id, "DELIVERED");
      expect(v.sandbox).toBeUndefined();
      const [msg] = await e.sink.waitFor(1);
      const raw = await e.srv.api(`/emails/${id}/raw`, { key: e.acct.secretKey });
      expect(raw.status).toBe(200);
      expect(Buffer.from(raw.text, "latin1").equals(msg!.raw)).toBe(true);
    } finally {
      await e.close();
    }
  });
});

test("fromSmtpData undoes SMTP dot-stuffing and nothing else", () => {
  expect(fromSmtpData(Buffer.from("a.b\r\n..lead\r\n...two\r\nend.")).toString()).toBe("a.b\r\n.lead\r\n..two\r\nend.");
});

describe("mailsvc user create --sandbox", () => {
  test("creates the user's first project as a sandbox", async () => {
    const db = `${env.srv.dir}/cli.db`;
    const proc = Bun.spawn([process.execPath, `${import.meta.dir}/../../src/main.ts`, "user", "create", "--email", "eve@example.com", "--password", "long enough pw", "--db", db, "--sandbox"], {
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, MAILSVC_SANDBOX: "" },
    });
    const out = await new Response(proc.stdout).text();
    expect(await proc.exited).toBe(0);
    const j = JSON.parse(out);
    expect(j.user.email).toBe("eve@example.com");
    expect(j.project).toMatchObject({ name: "Sandbox", sandbox: true, role: "OWNER" });
    const sqlite = new Database(db);
    expect(sqlite.query("SELECT name, sandbox FROM projects").all()).toEqual([{ name: "Sandbox", sandbox: 1 }]);
    sqlite.close();
  });
});

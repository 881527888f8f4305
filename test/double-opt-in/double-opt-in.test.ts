// Double opt-in (decisions.md): a public-key subscribe is held, one confirmation email reaches the sink,
// its link subscribes the contact once (contact.confirmed, the outbound webhook, a workflow triggered by
// it, a segment on it), a second subscribe within 10 minutes sends nothing, an expired, reused or
// tampered link is refused with a page that says so, and secret-key writes are not held.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv } from "../send/support";
import { createAccount } from "../support/server";
import { waitFor } from "../support/wait";
import { startReceiver, verify, type Receiver } from "../webhooks/support";
import { chain, executions, waitForExecutions } from "../workflows/support";

setDefaultTimeout(30_000);

let env: DeliveryEnv;
let rx: Receiver;
let key: string;
let pk: string;
let endpointSecret: string;
let templateId: string;
let welcomeWf: string;

const patchProject = (body: unknown, cookie = env.acct.cookie) => env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie, body });

beforeAll(async () => {
  env = await sendEnv({ config: { allowPrivateWebhooks: true } });
  rx = startReceiver();
  key = env.acct.secretKey;
  pk = env.acct.publicKey;
  const tpl = await env.srv.api("/templates", {
    key,
    body: { name: "Confirm", subject: "Confirm for {{email}}", body: `<p>Hi {{data.firstName ?? "there"}}, <a href="{{confirmUrl}}">confirm</a></p>`, from: `news@${SENDER}`, type: "MARKETING" },
  });
  expect(tpl.status).toBe(201);
  templateId = tpl.body.id;
  const welcome = await env.srv.api("/templates", { key, body: { name: "Welcome", subject: "Welcome aboard", body: "<p>Welcome</p>", from: `news@${SENDER}`, type: "MARKETING" } });
  const ep = await env.srv.api("/webhook-endpoints", { key, body: { url: rx.url + "/c", events: ["contact.confirmed", "contact.subscribed"] } });
  expect(ep.status).toBe(201);
  endpointSecret = ep.body.secret;
  welcomeWf = (await chain({ api: env.srv.api, key }, [["SEND_EMAIL", { templateId: welcome.body.id }]], { eventName: "contact.confirmed" })).id;
}, 60_000);
afterAll(async () => {
  rx.close();
  await env.close();
});

const track = (email: string, body: Record<string, unknown> = {}, k = pk) => env.srv.api("/v1/track", { key: k, body: { email, event: "signup", ...body } });
const contactOf = async (email: string) => (await env.srv.api(`/contacts?search=${encodeURIComponent(email)}`, { key })).body.data[0];
/** Subscription and pending state (`pendingConfirmation` is absent unless true). */
const stateOf = async (email: string) => {
  const c = await contactOf(email);
  return { subscribed: c.subscribed, pending: c.pendingConfirmation ?? false };
};
const emailsTo = async (email: string) => (await env.srv.api(`/emails?to=${encodeURIComponent(email)}`, { key })).body.data as any[];
async function confirmUrlFor(email: string, n = 1): Promise<string> {
  const msgs = await waitFor(() => env.sink.byRecipient(email), { until: (m) => m.length >= n, what: `${n} confirmation emails to ${email}` });
  const parsed = await msgs[n - 1]!.parse();
  const m = /href="([^"]*\/confirm\/[^"]+)"/.exec(String(parsed.html));
  if (!m) throw new Error("no confirm link in " + parsed.html);
  return m[1]!.replace(/&amp;/g, "&");
}
const open = (url: string) => fetch(url, { redirect: "manual" });

describe("double opt-in", () => {
  test("the setting: in the project object, PATCH by OWNER, template checked, redirect URL checked", async () => {
    const before = (await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie })).body[0];
    expect(before.doubleOptIn).toEqual({ enabled: false, templateId: null, redirectUrl: null });
    const bad = await patchProject({ doubleOptIn: { enabled: true, templateId: "00000000-0000-0000-0000-000000000000" } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe("doubleOptIn.templateId");
    const badUrl = await patchProject({ doubleOptIn: { redirectUrl: "javascript:alert(1)" } });
    expect(badUrl.status).toBe(422);
    const r = await patchProject({ doubleOptIn: { enabled: true, templateId } });
    expect(r.status).toBe(200);
    expect(r.body.doubleOptIn).toEqual({ enabled: true, templateId, redirectUrl: null });
    expect((await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie })).body[0].doubleOptIn).toEqual({ enabled: true, templateId, redirectUrl: null });
  });

  test("public subscribe -> held + one confirmation email -> the link subscribes, records contact.confirmed, webhook, workflow; reuse refused", async () => {
    const to = `ann@${RCPT}`;
    const r = await track(to, { subscribed: true, data: { firstName: "Ann" } });
    expect(r.status).toBe(200);
    const held = await contactOf(to);
    expect(held).toMatchObject({ email: to, subscribed: false, pendingConfirmation: true, data: { firstName: "Ann" } });
    const url = await confirmUrlFor(to);
    const msg = await env.sink.byRecipient(to)[0]!.parse();
    expect(msg.subject).toBe(`Confirm for ${to}`);
    expect(String(msg.html)).toContain("Hi Ann");
    expect(msg.headers.get("list-unsubscribe")).toBeUndefined();
    expect(url.startsWith(env.srv.url + "/confirm/")).toBe(true);
    // A second subscribe before confirmation, within 10 minutes: no second email.
    expect((await track(to, { subscribed: true })).status).toBe(200);
    const sent = await emailsTo(to);
    expect(sent).toHaveLength(1);
    expect((await contactOf(to)).pendingConfirmation).toBe(true);

    const page = await open(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Subscription confirmed");
    const after = await contactOf(to);
    // Exact shape: pendingConfirmation is present only while it is true.
    expect(after).toEqual({ id: held.id, email: to, subscribed: true, data: { firstName: "Ann" }, createdAt: held.createdAt, updatedAt: expect.any(String) });
    const evs = (await env.srv.api(`/events/contact/${after.id}`, { key })).body.data.map((e: any) => [e.name, e.data]);
    expect(evs).toContainEqual(["contact.confirmed", { confirmationId: expect.any(String), emailId: sent[0].id }]);
    expect(evs).toContainEqual(["contact.subscribed", { source: "confirmation" }]);
    const [hook] = await rx.waitFor(1, (x) => x.json?.type === "contact.confirmed");
    expect(verify(endpointSecret, hook!)).toMatchObject({ type: "contact.confirmed", data: { contactId: after.id, contactEmail: to } });
    // The workflow triggered by contact.confirmed runs: its welcome email reaches the sink.
    await waitForExecutions({ api: env.srv.api, key }, welcomeWf, 1, "COMPLETED");
    expect((await executions({ api: env.srv.api, key }, welcomeWf)).data[0].contactId).toBe(after.id);
    const welcome = await waitFor(() => env.sink.byRecipient(to), { until: (m) => m.length >= 2, what: "welcome email" });
    expect((await welcome[1]!.parse()).subject).toBe("Welcome aboard");
    // A segment on the event sees it.
    const seg = await env.srv.api("/segments", { key, body: { name: "Confirmed", condition: { logic: "AND", groups: [{ filters: [{ field: "event.contact.confirmed", operator: "triggered" }] }] } } });
    expect(seg.status).toBe(201);
    expect((await env.srv.api(`/segments/${seg.body.id}/contacts`, { key })).body.data.map((c: any) => c.email)).toEqual([to]);

    const again = await open(url);
    expect(again.status).toBe(410);
    expect(await again.text()).toContain("already been used");
    // Clients cannot track the reserved name.
    const reserved = await track(to, { event: "contact.confirmed" });
    expect(reserved.status).toBe(422);
    expect(reserved.body.error.errors[0].code).toBe("reserved_event");
  });

  test("secret-key writes are trusted: subscribed at once, no confirmation email", async () => {
    const a = `trusted@${RCPT}`;
    expect((await track(a, { subscribed: true }, key)).status).toBe(200);
    expect(await stateOf(a)).toEqual({ subscribed: true, pending: false });
    const b = `direct@${RCPT}`;
    expect((await env.srv.api("/contacts", { key, body: { email: b } })).status).toBe(201);
    expect(await stateOf(b)).toEqual({ subscribed: true, pending: false });
    // A public track of an already subscribed contact changes nothing either; one that unsubscribes is not held.
    expect((await track(a, { subscribed: true })).status).toBe(200);
    expect((await track(b, { subscribed: false })).status).toBe(200);
    expect(await stateOf(b)).toEqual({ subscribed: false, pending: false });
    expect(await emailsTo(a)).toHaveLength(0);
    expect(await emailsTo(b)).toHaveLength(0);
    // A pending contact subscribed with the secret key (track or PATCH) is no longer pending, also after a later unsubscribe.
    for (const [i, viaPatch] of [[0, false], [1, true]] as const) {
      const c = `pending${i}@${RCPT}`;
      expect((await track(c, { subscribed: true })).status).toBe(200);
      const held = await contactOf(c);
      expect(held).toMatchObject({ subscribed: false, pendingConfirmation: true });
      if (viaPatch) expect((await env.srv.api(`/contacts/${held.id}`, { key, method: "PATCH", body: { subscribed: true } })).status).toBe(200);
      else expect((await track(c, { subscribed: true }, key)).status).toBe(200);
      expect(await stateOf(c)).toEqual({ subscribed: true, pending: false });
      expect((await env.srv.api(`/contacts/${held.id}`, { key, method: "PATCH", body: { subscribed: false } })).status).toBe(200);
      expect(await stateOf(c)).toEqual({ subscribed: false, pending: false });
    }
  });

  test("redirectUrl: the link answers 303 to it; the plain default email when templateId is null", async () => {
    expect((await patchProject({ doubleOptIn: { templateId: null, redirectUrl: "https://example.com/thanks" } })).status).toBe(200);
    const to = `bob@${RCPT}`;
    expect((await track(to, { subscribed: true })).status).toBe(200);
    const url = await confirmUrlFor(to);
    const msg = await env.sink.byRecipient(to)[0]!.parse();
    expect(msg.subject).toBe("Please confirm your subscription to Test project");
    expect(msg.from?.value[0]?.address).toBe(`no-reply@${SENDER}`);
    const r = await open(url);
    expect(r.status).toBe(303);
    expect(r.headers.get("location")).toBe("https://example.com/thanks");
    expect(await stateOf(to)).toEqual({ subscribed: true, pending: false });
  });

  test("switched off, a public subscribe subscribes at once", async () => {
    expect((await patchProject({ doubleOptIn: { enabled: false } })).body.doubleOptIn).toEqual({ enabled: false, templateId: null, redirectUrl: "https://example.com/thanks" });
    const to = `carl@${RCPT}`;
    expect((await track(to, { subscribed: true })).status).toBe(200);
    expect(await stateOf(to)).toEqual({ subscribed: true, pending: false });
    expect(await emailsTo(to)).toHaveLength(0);
  });
  test("over the monthly transactional cap: the contact is held, no confirmation email is queued", async () => {
    expect((await patchProject({ doubleOptIn: { enabled: true, templateId, redirectUrl: null } })).status).toBe(200);
    const billing = `/users/@me/projects/${env.acct.projectId}`;
    const used = (await env.srv.api(`${billing}/billing-consumption`, { cookie: env.acct.cookie })).body.transactional.used;
    expect(used).toBe(4); // the confirmation emails so far (ann, pending0, pending1, bob) count as transactional mail
    expect((await env.srv.api(`${billing}/billing-limits`, { method: "PUT", cookie: env.acct.cookie, body: { transactional: used } })).status).toBe(200);
    const to = `capped@${RCPT}`;
    expect((await track(to, { subscribed: true })).status).toBe(200);
    expect(await stateOf(to)).toEqual({ subscribed: false, pending: true });
    expect(await emailsTo(to)).toHaveLength(0);
    expect((await env.srv.api(`${billing}/billing-limits`, { method: "PUT", cookie: env.acct.cookie, body: { transactional: null } })).status).toBe(200);
  });

  test("a sandbox project: the plain default comes from its unverified domain, is captured, and its link works", async () => {
    const other = await createAccount(env.srv.api, "Sandbox shop");
    const patch = (body: unknown) => env.srv.api(`/users/@me/projects/${other.projectId}`, { method: "PATCH", cookie: other.cookie, body });
    expect((await patch({ sandbox: true, doubleOptIn: { enabled: true } })).status).toBe(200);
    expect((await env.srv.api("/domains", { key: other.secretKey, body: { projectId: other.projectId, domain: "unverified.test" } })).status).toBe(201);
    const to = "dora@anywhere.test";
    expect((await env.srv.api("/v1/track", { key: other.publicKey, body: { email: to, event: "signup", subscribed: true } })).status).toBe(200);
    const list = async () => (await env.srv.api(`/emails?to=${encodeURIComponent(to)}`, { key: other.secretKey })).body.data as any[];
    const [email] = await waitFor(list, { until: (l) => l.length === 1 && l[0].status === "DELIVERED", what: "the captured confirmation email" });
    expect(email).toMatchObject({ from: "no-reply@unverified.test", subject: "Please confirm your subscription to Sandbox shop", sandbox: true });
    const raw = (await env.srv.api(`/emails/${email.id}/raw`, { key: other.secretKey })).text.replace(/=\r?\n/g, "");
    const m = /href=(?:3D)?"([^"]*\/confirm\/[^"]+)"/.exec(raw);
    expect(m).not.toBeNull();
    expect(env.sink.byRecipient(to)).toHaveLength(0);
    expect((await open(m![1]!)).status).toBe(200);
    const c = (await env.srv.api(`/contacts?search=dora`, { key: other.secretKey })).body.data[0];
    expect(c.subscribed).toBe(true);
  });

  test("a tampered link is refused; an expired one too, with a page that says so, and the contact stays pending", async () => {
    expect((await patchProject({ doubleOptIn: { enabled: true, templateId, redirectUrl: null } })).status).toBe(200);
    const to = `late@${RCPT}`;
    expect((await track(to)).status).toBe(200); // a new contact defaults to subscribed: held too
    expect(await stateOf(to)).toEqual({ subscribed: false, pending: true });
    const url = await confirmUrlFor(to);
    const tampered = url.slice(0, -3) + (url.endsWith("AAA") ? "BBB" : "AAA");
    const bad = await open(tampered);
    expect(bad.status).toBe(404);
    expect(await bad.text()).toContain("not valid");
    expect((await open(env.srv.url + "/confirm/garbage")).status).toBe(404);
    env.srv.clock.advance(7 * 24 * 3_600_000 + 60_000);
    const expired = await open(url);
    expect(expired.status).toBe(410);
    expect(await expired.text()).toContain("expired");
    expect(await stateOf(to)).toEqual({ subscribed: false, pending: true });
    // Past 10 minutes, subscribing again sends a new link, which works.
    expect((await track(to, { subscribed: true })).status).toBe(200);
    const fresh = await confirmUrlFor(to, 2);
    expect(fresh).not.toBe(url);
    expect((await open(fresh)).status).toBe(200);
    expect(await stateOf(to)).toEqual({ subscribed: true, pending: false });
  });
});

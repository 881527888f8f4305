// List mail (MARKETING, HEADLESS) as the recipient gets it: the text part ends with the unsubscribe and
// preferences links (the same URLs as the HTML footer), a fragment body arrives as a complete HTML
// document, and `trackOpens` on the campaign, template and SEND_EMAIL step decides the open pixel.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { ParsedMail } from "mailparser";
import { lastMessageFor, type DeliveryEnv } from "../support/delivery";
import { sendEnv } from "../send/support";
import { waitFor } from "../support/wait";
import { addContacts, createCampaign, RCPT, SENDER, waitForCampaign } from "../campaigns/support";
import { chain, start, waitForExecution } from "../workflows/support";
import { hrefs, imgSrcs } from "./support";
import { addresses } from "../support/api";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

const api = (path: string, opts: Parameters<DeliveryEnv["srv"]["api"]>[1] = {}) => env.srv.api(path, { key: env.acct.secretKey, ...opts });
const base = () => env.srv.ctx.config.publicUrl;
const ours = (u: string) => u.startsWith(base());
const FRAGMENT = '<h1>News</h1><p>Hi {{firstName}}, <a href="https://example.com/spring">read the spring news</a>.</p>';

const rcpt = addresses(RCPT);

async function campaignMessage(to: string, over: Record<string, unknown> = {}): Promise<{ m: ParsedMail; campaign: any }> {
  await addContacts(env, [{ email: to, data: { firstName: "Ann" } }]);
  const campaign = await createCampaign(env, { body: FRAGMENT, audienceType: "FILTERED", audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "equals", value: to }] }] }, ...over });
  expect((await api(`/campaigns/${campaign.id}/send`, { method: "POST" })).status).toBe(200);
  await waitForCampaign(env, campaign.id, "SENT");
  return { m: await (await lastMessageFor(env, to)).parse(), campaign };
}

async function template(over: Record<string, unknown> = {}) {
  const r = await api("/templates", { body: { name: "Welcome", subject: "Welcome {{firstName}}", body: FRAGMENT, from: `hello@${SENDER}`, ...over } });
  expect(r.status).toBe(201);
  return r.body.data ?? r.body;
}

async function workflowMessage(to: string, templateId: string, stepConfig: Record<string, unknown> = {}): Promise<ParsedMail> {
  await addContacts(env, [{ email: to, data: { firstName: "Lee" } }]);
  const c = { api: env.srv.api, key: env.acct.secretKey };
  const wf = await chain(c, [["SEND_EMAIL", { templateId, ...stepConfig }]]);
  const ex = await start(c, wf.id, { email: to });
  await waitForExecution(c, wf.id, ex.id ?? ex.data?.id, "COMPLETED");
  return (await lastMessageFor(env, to)).parse();
}

/** The unsubscribe and preferences URLs at the end of a text part. */
function textFooter(text: string, to: string) {
  const m = /\n---\nThis email was sent to (\S+) because you subscribed to it\.\nUnsubscribe: (\S+)\nManage preferences: (\S+)\s*$/.exec(text);
  expect(m).not.toBeNull();
  expect(m![1]).toBe(to);
  return { unsubscribe: m![2]!, manage: m![3]! };
}

const subscribed = async (email: string) => (await api("/contacts/lookup", { body: { emails: [email] } })).body.found[0].subscribed as boolean;

async function followUnsubscribe(url: string, email: string) {
  // GET shows the confirmation page and changes nothing; the page's form POSTs.
  const page = await fetch(url);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain("<form");
  expect(await subscribed(email)).toBe(true);
  const post = await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "" });
  expect(post.status).toBe(200);
  await post.text();
  await waitFor(() => subscribed(email), { until: (s) => s === false, what: `${email} unsubscribed` });
}

describe("the text part of list mail", () => {
  test("a MARKETING campaign: the text ends with the HTML footer's unsubscribe and preferences URLs; following the text's unsubscribe URL unsubscribes", async () => {
    const to = rcpt("ann");
    const { m } = await campaignMessage(to);
    const text = String(m.text);
    expect(text.startsWith("News\n\nHi Ann, read the spring news (https://example.com/spring).")).toBe(true);
    const { unsubscribe, manage } = textFooter(text, to);
    expect(unsubscribe.startsWith(`${base()}/unsubscribe/`)).toBe(true);
    expect(manage.startsWith(`${base()}/manage/`)).toBe(true);
    // The same links as the HTML footer.
    const html = String(m.html);
    expect(hrefs(html).filter((h) => h.includes("/unsubscribe/") || h.includes("/manage/"))).toEqual([unsubscribe, manage]);
    expect(html).toContain(`This email was sent to ${to} because you subscribed to it.`);
    expect((await fetch(manage)).status).toBe(200);
    await followUnsubscribe(unsubscribe, to);
  });

  test("a workflow email from a default-type (MARKETING) template: the same footer in the text part; its unsubscribe URL unsubscribes", async () => {
    const tpl = await template();
    expect(tpl.type).toBe("MARKETING");
    const to = rcpt("lee");
    const m = await workflowMessage(to, tpl.id);
    const { unsubscribe, manage } = textFooter(String(m.text), to);
    expect(hrefs(String(m.html)).filter((h) => h.includes("/unsubscribe/") || h.includes("/manage/"))).toEqual([unsubscribe, manage]);
    await followUnsubscribe(unsubscribe, to);
  });

  test("HEADLESS: no HTML footer, but the text part ends with the links", async () => {
    const to = rcpt("hal");
    const { m } = await campaignMessage(to, { type: "HEADLESS" });
    const { unsubscribe } = textFooter(String(m.text), to);
    expect(unsubscribe.startsWith(`${base()}/unsubscribe/`)).toBe(true);
    expect(hrefs(String(m.html)).some((h) => h.includes("/unsubscribe/") || h.includes("/manage/"))).toBe(false);
  });

  test("a body that places {{unsubscribeUrl}} itself gets no footer in either part", async () => {
    const to = rcpt("own");
    const { m } = await campaignMessage(to, { body: '<p>Hi. <a href="{{unsubscribeUrl}}">Leave the list</a></p>' });
    const text = String(m.text);
    expect(text).not.toContain("Manage preferences:");
    expect(text).toMatch(new RegExp(`^Hi\\. Leave the list \\(${base().replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}/unsubscribe/\\S+\\)$`));
    expect(String(m.html)).not.toContain("Manage preferences");
  });

  test("TRANSACTIONAL: no footer in the text part", async () => {
    const to = rcpt("tx");
    const { m } = await campaignMessage(to, { type: "TRANSACTIONAL" });
    expect(String(m.text)).toBe("News\n\nHi Ann, read the spring news (https://example.com/spring).");
  });
});

describe("the project's postal address", () => {
  test("set in the project settings, it ends both footers of MARKETING mail; cleared, it is gone", async () => {
    const patch = (postalAddress: string | null) => env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { postalAddress } });
    const r = await patch("Acme Lda.\nRua das Flores 12\n4050-262 Porto, Portugal");
    expect(r.status).toBe(200);
    expect(r.body.postalAddress).toBe("Acme Lda., Rua das Flores 12, 4050-262 Porto, Portugal");
    try {
      const to = rcpt("postal");
      const { m } = await campaignMessage(to);
      const text = String(m.text).trimEnd();
      expect(text.endsWith("\nAcme Lda., Rua das Flores 12, 4050-262 Porto, Portugal")).toBe(true);
      const { unsubscribe } = textFooter(text.slice(0, text.lastIndexOf("\n")), to);
      expect(unsubscribe.startsWith(`${base()}/unsubscribe/`)).toBe(true);
      expect(String(m.html)).toContain(">Manage preferences</a><br>Acme Lda., Rua das Flores 12, 4050-262 Porto, Portugal</div>");
    } finally {
      expect((await patch(null)).body.postalAddress).toBeNull();
    }
    const { m } = await campaignMessage(rcpt("no-postal"));
    expect(String(m.html)).not.toContain("Rua das Flores");
    expect(String(m.text)).not.toContain("Rua das Flores");
  });
});

describe("a fragment body is sent as a complete HTML document", () => {
  test("doctype, head and body around the content, footer and pixel inside the body's column", async () => {
    const to = rcpt("doc");
    const { m } = await campaignMessage(to);
    const html = String(m.html);
    expect(html.startsWith("<!DOCTYPE html>\n<html ")).toBe(true);
    expect(html.trimEnd().endsWith("</body>\n</html>")).toBe(true);
    const body = html.slice(html.indexOf("<body"), html.indexOf("</body>"));
    expect(body).toContain("<h1>News</h1><p>Hi Ann, ");
    const pixel = imgSrcs(html).filter(ours);
    expect(pixel.length).toBe(1);
    expect(body.indexOf("Manage preferences")).toBeLessThan(body.indexOf(pixel[0]!.replace(/&/g, "&amp;")));
    // SpamAssassin's HTML_IMAGE_ONLY_* count the whole HTML part: the document takes it past their 3200 bytes less often.
    expect(Buffer.byteLength(html.slice(0, html.indexOf("<h1>")))).toBeGreaterThan(1000);
  });

  test("a body that is a document already is left as it is", async () => {
    const to = rcpt("own-doc");
    const { m } = await campaignMessage(to, { body: "<html><body><p>Hi {{firstName}}</p></body></html>" });
    const html = String(m.html);
    expect(html.startsWith("<html><body><p>Hi Ann</p><div")).toBe(true);
    expect(html).not.toContain("<!DOCTYPE");
  });
});

describe("trackOpens", () => {
  test("campaign: null by default; false leaves the pixel out (links still tracked); PUT back to null", async () => {
    const c = await createCampaign(env);
    expect(c.trackOpens).toBeNull();
    const to = rcpt("noopen");
    const { m, campaign } = await campaignMessage(to, { trackOpens: false });
    expect(campaign.trackOpens).toBe(false);
    const html = String(m.html);
    expect(imgSrcs(html).filter(ours)).toEqual([]);
    expect(hrefs(html).filter((h) => h.startsWith(`${base()}/t/c/`)).length).toBe(1);
    const got = await api(`/campaigns/${campaign.id}`);
    expect(got.body.trackOpens).toBe(false);
    const draft = await createCampaign(env, { trackOpens: true });
    expect(draft.trackOpens).toBe(true);
    const patched = await api(`/campaigns/${draft.id}`, { method: "PUT", body: { trackOpens: null } });
    expect(patched.status).toBe(200);
    expect((await api(`/campaigns/${draft.id}`)).body.trackOpens).toBeNull();
  });

  test("campaign: trackOpens true keeps the pixel and the open is recorded", async () => {
    const to = rcpt("open");
    const { m } = await campaignMessage(to, { trackOpens: true });
    const pixel = imgSrcs(String(m.html)).filter(ours);
    expect(pixel.length).toBe(1);
    expect((await fetch(pixel[0]!)).status).toBe(200);
    const emails = await api(`/emails?to=${encodeURIComponent(to)}`);
    const id = emails.body.data.find((e: any) => e.to === to).id;
    await waitFor(async () => (await api(`/emails/${id}`)).body, { until: (e: any) => e.status === "OPENED", what: "OPENED" });
  });

  test("template: trackOpens in the API object, on create and update; a workflow email of a template with false has no pixel", async () => {
    const tpl = await template({ trackOpens: false });
    expect(tpl.trackOpens).toBe(false);
    expect((await api(`/templates/${tpl.id}`)).body.trackOpens).toBe(false);
    const m = await workflowMessage(rcpt("wf-off"), tpl.id);
    expect(imgSrcs(String(m.html)).filter(ours)).toEqual([]);
    // The step's trackOpens wins over the template's.
    const m2 = await workflowMessage(rcpt("wf-on"), tpl.id, { trackOpens: true });
    expect(imgSrcs(String(m2.html)).filter(ours).length).toBe(1);
    const up = await api(`/templates/${tpl.id}`, { method: "PATCH", body: { trackOpens: null } });
    expect(up.status).toBe(200);
    expect((await api(`/templates/${tpl.id}`)).body.trackOpens).toBeNull();
    // null: the project's mode (MARKETING_ONLY tracks MARKETING mail).
    const m3 = await workflowMessage(rcpt("wf-default"), tpl.id);
    expect(imgSrcs(String(m3.html)).filter(ours).length).toBe(1);
  });

  test("a step config whose trackOpens is not a boolean or null is refused with its field", async () => {
    const tpl = await template();
    const wf = await api("/workflows", { body: { name: "Bad" } });
    const r = await api(`/workflows/${wf.body.id ?? wf.body.data.id}/steps`, { body: { type: "SEND_EMAIL", config: { templateId: tpl.id, trackOpens: "yes" } } });
    expect(r.status).toBe(422);
    expect(r.body.error.errors.map((e: any) => e.field)).toEqual(["config.trackOpens"]);
  });
});

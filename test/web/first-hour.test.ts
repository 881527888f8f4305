// The first hour of a newcomer, in a real browser: sign up, first project, the Overview checklist
// and its links, the server's configuration warnings with their fix, an error that links to the page
// that fixes it, a two-step workflow built through the step forms, the webhook "Send test" outcome,
// a scheduled campaign edited and sent now, readable activity, and the phone layout (390 px). The
// whole journey logs no console error and meets no 5xx; each main page is photographed at 1400 px
// and 390 px wide for the README.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { startServer, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { startReceiver, type Receiver } from "../webhooks/support";
import { launchBrowser, screenshot } from "./browser";

let srv: TestServer;
let dns: TestDns;
let sink: SmtpSink;
let hook: Receiver;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const email = `first${Date.now()}@example.com`;
const password = "correct horse battery";
let projectId = "";
let secretKey = "";

/** Console errors and 5xx answers seen by the journey's page; `allowed` counts the failures a test provokes on purpose. */
const consoleErrors: string[] = [];
const serverErrors: string[] = [];
let allowed: number[] = [];

beforeAll(async () => {
  dns = await startDns();
  sink = await startSmtpSink();
  hook = startReceiver();
  // A bare hostname and the loopback public URL of a test server: both configuration warnings are on.
  srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port, hostname: "mailbox", allowPrivateWebhooks: true } });
  expect((await fetch(srv.url + "/")).status).toBe(200);
  browser = await launchBrowser();
  context = await browser.newContext({ baseURL: srv.url, viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e}`));
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const text = m.text();
    // A failure a test provokes on purpose (a 422 the form then shows) is the one allowed error.
    const status = /status of (\d{3})/.exec(text)?.[1];
    const i = status ? allowed.indexOf(Number(status)) : -1;
    if (i >= 0) allowed.splice(i, 1);
    else consoleErrors.push(text);
  });
  page.on("response", (r) => {
    if (r.status() >= 500) serverErrors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await sink?.close();
  await dns?.close();
  hook?.close();
});

async function sessionApi(path: string, init: { method?: string; body?: unknown } = {}) {
  const token = (await context.cookies()).find((c) => c.name === "token")?.value;
  const headers: Record<string, string> = { cookie: `token=${token}` };
  if (projectId) headers["x-project-id"] = projectId;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(srv.url + path, { method: init.method ?? "GET", headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) });
  return { status: r.status, body: await r.json().catch(() => null) };
}

const heading = (name: string) => page.getByRole("heading", { name, exact: true, level: 1 });
const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });

describe("the first hour", () => {
  test("a visitor's first load asks for the session without an error; sign up; the first project opens on Overview", async () => {
    await page.goto("/");
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    // No 401 probe: the session status answers 200 with null.
    const status = await fetch(srv.url + "/auth/session");
    expect(status.status).toBe(200);
    expect(await status.json()).toEqual({ user: null });
    expect(consoleErrors).toEqual([]);

    await page.getByRole("link", { name: "Sign up" }).click();
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign up" }).click();
    await page.getByRole("heading", { name: "Create a project" }).waitFor();
    await page.getByLabel("Project name").fill("First hour");
    await page.getByRole("button", { name: "Create project" }).click();
    await heading("Overview").waitFor();
    const projects = (await sessionApi("/users/@me/projects")).body;
    projectId = projects[0].id;
    secretKey = projects[0].secret;
    expect((await sessionApi("/auth/session")).body.user.email).toBe(email);
  }, 30_000);

  test("Overview: the checklist names domain, contact, first email and campaign, and each links to its page; the empty chart says so", async () => {
    const list = page.getByRole("list", { name: "Getting started" });
    await list.waitFor();
    expect(await list.getByRole("listitem").locator("strong").allInnerTexts()).toEqual([
      "Verify a sending domain",
      "Add your first contact",
      "Send your first email",
      "Create your first campaign",
    ]);
    expect(await page.getByText("0 of 4 done.").isVisible()).toBe(true);
    await page.getByText("No emails in this period yet").waitFor();
    await screenshot(page, "first-hour-overview");

    for (const [link, title] of [["Go to Domains", "Domains"], ["Go to Contacts", "Contacts"], ["Go to Templates", "Templates"], ["Go to Campaigns", "Campaigns"]] as const) {
      await nav("Overview").click();
      await list.getByRole("link", { name: link }).click();
      await heading(title).waitFor();
    }

    // A first contact ticks its item.
    expect((await srv.api("/contacts", { key: secretKey, body: { email: "ada@people.example", data: { firstName: "Ada" } } })).status).toBe(201);
    await nav("Overview").click();
    await page.getByText("1 of 4 done.").waitFor();
    expect(await list.locator('[data-step="contact"]').getAttribute("class")).toBe("done");
  }, 30_000);

  test("the server's configuration warnings are shown with their fix on Overview and Domains", async () => {
    for (const where of ["Overview", "Domains"]) {
      await nav(where).click();
      await heading(where).waitFor();
      const card = page.getByRole("region", { name: "Server configuration needs attention" });
      await card.waitFor();
      const text = await card.innerText();
      expect(text).toContain("The server's name is not a full domain name");
      expect(text).toContain("Set MAILSVC_HOSTNAME");
      expect(text).toContain("Links in your emails point to this machine only");
      expect(text).toContain("Set MAILSVC_PUBLIC_URL");
      expect(text.match(/How to fix it:/g)).toHaveLength(2);
    }
    await screenshot(page, "first-hour-warnings");
  }, 30_000);

  test("an error whose fix is on another page links to it, in words", async () => {
    await nav("Templates").click();
    await page.getByRole("button", { name: "New template" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Welcome");
    await page.getByLabel("Subject").fill("Hi {{firstName}}");
    await page.getByLabel("From address").fill("hello@unverified.example");
    allowed = [403];
    await page.getByRole("button", { name: "Create template" }).click();
    const alert = page.getByRole("alert").filter({ hasText: "is not verified" });
    await alert.waitFor();
    expect(await alert.innerText()).not.toMatch(/POST \/|GET \//);
    await alert.getByRole("link", { name: "open Domains" }).click();
    await heading("Domains").waitFor();
    expect(allowed).toEqual([]);

    // Verified, the same template saves (the fix worked).
    dns.mailDomain("people.example");
    await addVerifiedDomain(srv.api, dns, { secretKey, projectId }, "send.first.example");
    const tpl = await srv.api("/templates", { key: secretKey, body: { name: "Welcome", subject: "Hi {{firstName}}", body: "<p>Hi {{firstName}}</p>", from: "hi@send.first.example", type: "MARKETING" } });
    expect(tpl.status).toBe(201);
  }, 30_000);

  test("workflow editor: a two-step workflow (Send email, then Wait) built through the forms; an old error goes away after a success", async () => {
    await nav("Workflows").click();
    await page.getByRole("button", { name: "New workflow" }).click();
    const dialog = page.getByRole("dialog", { name: "New workflow" });
    await dialog.getByLabel("Workflow name").fill("Onboarding");
    await dialog.getByLabel("Trigger event name").fill("signed_up");
    await dialog.getByRole("button", { name: "Create workflow" }).click();
    await page.getByRole("heading", { name: "Workflow: Onboarding" }).waitFor();

    // Step types in words.
    const typeOptions = await page.getByLabel("Step type").locator("option").allInnerTexts();
    expect(typeOptions).toContain("Send email");
    expect(typeOptions).toContain("Wait");
    expect(typeOptions.join(" ")).not.toContain("SEND_EMAIL");

    await page.getByLabel("Step type").selectOption({ label: "Send email" });
    await page.getByRole("button", { name: "Add step" }).click();
    let editor = page.getByRole("form", { name: "Configure step" });
    await editor.getByRole("heading", { name: "Send email" }).waitFor();
    await editor.getByLabel("Email template").selectOption({ label: "Welcome" });
    await editor.getByLabel("Step name").fill("Say hello");
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();

    await page.getByLabel("Step type").selectOption({ label: "Wait" });
    await page.getByRole("button", { name: "Add step" }).click();
    editor = page.getByRole("form", { name: "Configure step" });
    await editor.getByRole("heading", { name: "Wait" }).waitFor();
    // No JSON on the form: the raw configuration is behind "Advanced".
    expect(await editor.getByLabel("Configuration (JSON)").count()).toBe(0);
    // A wrong amount: the API's message is shown; fixed, it goes away.
    await editor.getByLabel("Wait for").fill("0");
    allowed = [422];
    await editor.getByRole("button", { name: "Save step" }).click();
    await page.getByRole("alert").filter({ hasText: "amount" }).waitFor();
    expect(allowed).toEqual([]);
    await editor.getByLabel("Wait for").fill("2");
    await editor.getByLabel("Unit").selectOption("days");
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);

    // The Wait step follows Send email already: nothing else to connect it to (Send email would make a loop).
    expect(await editor.getByLabel("Connect to").count()).toBe(0);
    // The Advanced toggle shows the same configuration as JSON.
    await editor.getByLabel("Advanced: edit the configuration as JSON").check();
    expect(JSON.parse(await editor.getByLabel("Configuration (JSON)").inputValue())).toEqual({ amount: 2, unit: "days" });
    await page.locator(".react-flow__node").filter({ hasText: "Say hello" }).waitFor();
    await page.locator(".react-flow__node").filter({ hasText: "2 days" }).waitFor();
    await screenshot(page, "workflow-forms");

    const wfs = (await sessionApi("/workflows")).body.data;
    const wf = (await sessionApi(`/workflows/${wfs[0].id}`)).body;
    const send = wf.steps.find((s: any) => s.type === "SEND_EMAIL");
    const wait = wf.steps.find((s: any) => s.type === "DELAY");
    expect(send).toMatchObject({ name: "Say hello", config: { templateId: expect.any(String) } });
    expect(wait.config).toEqual({ amount: 2, unit: "days" });
    expect(wf.entryStepId).toBe(send.id);
    expect(wf.transitions).toHaveLength(1);
    expect(wf.transitions[0]).toMatchObject({ fromStepId: send.id, toStepId: wait.id, branch: null });
  }, 45_000);

  test("workflow editor: a condition built with the segments' builder; Connect to offers only steps that make no loop, and free branches only", async () => {
    // The Wait step is selected: a new step is chained after it.
    await page.getByLabel("Step type").selectOption({ label: "Check a condition" });
    await page.getByRole("button", { name: "Add step" }).click();
    const editor = page.getByRole("form", { name: "Configure step" });
    await editor.getByRole("heading", { name: "Check a condition" }).waitFor();
    // A new condition starts from one sample filter; it is edited in place.
    const filter = editor.getByRole("group", { name: "Filter 1.1" });
    await filter.getByLabel("Field").fill("data.plan");
    await filter.getByLabel("Operator").selectOption("equals");
    await filter.getByLabel("Value").fill("vip");
    expect(await editor.getByRole("group", { name: "Filter 1.2" }).count()).toBe(0);
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();
    // Every other step leads to this one: connecting to any of them would make a loop.
    await editor.getByText("Add another step to connect this one to it.").waitFor();

    // An "End the workflow" step added while the condition is selected is not chained (a condition needs a branch).
    await page.getByLabel("Step type").selectOption({ label: "End the workflow" });
    await page.getByRole("button", { name: "Add step" }).click();
    await editor.getByRole("heading", { name: "End the workflow" }).waitFor();
    await page.getByRole("complementary", { name: "Steps" }).getByRole("button", { name: /^Check a condition/ }).click();
    await editor.getByRole("heading", { name: "Check a condition" }).waitFor();
    const targets = await editor.getByLabel("Connect to").locator("option").allInnerTexts();
    expect(targets).toHaveLength(2);
    expect(targets[1]).toMatch(/^End the workflow/);
    await editor.getByLabel("Connect to").selectOption({ index: 1 });
    await editor.getByLabel("Branch").selectOption({ label: "Yes" });
    await editor.getByRole("button", { name: "Connect", exact: true }).click();
    await editor.getByText(/^Yes →/).waitFor();
    // The "yes" branch is taken: only "No" is left.
    expect(await editor.getByLabel("Branch").locator("option").allInnerTexts()).toEqual(["Choose…", "No"]);

    const wf = (await sessionApi(`/workflows/${(await sessionApi("/workflows")).body.data[0].id}`)).body;
    const cond = wf.steps.find((s: any) => s.type === "CONDITION");
    const exit = wf.steps.find((s: any) => s.type === "EXIT");
    expect(cond.config).toEqual({ logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "vip" }] }] });
    expect(wf.transitions.find((t: any) => t.fromStepId === cond.id)).toMatchObject({ toStepId: exit.id, branch: "yes" });
    expect(wf.transitions).toHaveLength(3);
  }, 45_000);

  test("workflow editor: webhook (URL, method, headers, body) and update-contact (fields, subscription) steps through their forms", async () => {
    await nav("Workflows").click();
    await page.getByRole("button", { name: "New workflow" }).click();
    const dialog = page.getByRole("dialog", { name: "New workflow" });
    await dialog.getByLabel("Workflow name").fill("Sync");
    await dialog.getByRole("button", { name: "Create workflow" }).click();
    await page.getByRole("heading", { name: "Workflow: Sync" }).waitFor();

    await page.getByLabel("Step type").selectOption({ label: "Call a webhook" });
    await page.getByRole("button", { name: "Add step" }).click();
    const editor = page.getByRole("form", { name: "Configure step" });
    await editor.getByRole("heading", { name: "Call a webhook" }).waitFor();
    await editor.getByLabel("URL").fill("https://crm.example.com/people");
    await editor.getByLabel("Method").selectOption("PUT");
    await editor.getByRole("button", { name: "Add header" }).click();
    await editor.getByLabel("Header", { exact: true }).fill("X-Token");
    await editor.getByLabel("Header value").fill("abc");
    await editor.getByLabel("Body").fill('{"email": "{{email}}", "source": "mailsvc"}');
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();

    await page.getByLabel("Step type").selectOption({ label: "Update the contact" });
    await page.getByRole("button", { name: "Add step" }).click();
    await editor.getByRole("heading", { name: "Update the contact" }).waitFor();
    for (const [i, [k, v]] of [["plan", "pro"], ["score", "1.5"]].entries()) {
      await editor.getByRole("button", { name: "Add field" }).click();
      const row = editor.getByRole("group", { name: `Contact fields to set ${i + 1}` });
      await row.getByLabel("Field", { exact: true }).fill(k!);
      await row.getByLabel("Value").fill(v!);
    }
    // A half-typed number stays as typed.
    expect(await editor.getByRole("group", { name: "Contact fields to set 2" }).getByLabel("Value").inputValue()).toBe("1.5");
    await editor.getByLabel("Subscription").selectOption({ label: "Unsubscribe" });
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();

    const wf = (await sessionApi("/workflows")).body.data.find((w: any) => w.name === "Sync");
    const full = (await sessionApi(`/workflows/${wf.id}`)).body;
    expect(full.steps.find((s: any) => s.type === "WEBHOOK").config).toEqual({ url: "https://crm.example.com/people", method: "PUT", headers: { "X-Token": "abc" }, body: { email: "{{email}}", source: "mailsvc" } });
    expect(full.steps.find((s: any) => s.type === "UPDATE_CONTACT").config).toEqual({ updates: { plan: "pro", score: 1.5 }, subscriptionAction: "unsubscribe" });
    expect(full.transitions).toHaveLength(1);
  }, 45_000);

  test("webhooks: Send test shows the delivery's real outcome (the status code, then a success)", async () => {
    await nav("Webhooks").click();
    await page.getByLabel("Endpoint URL").fill(`${hook.url}/hooks`);
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const card = page.getByRole("region", { name: `Endpoint ${hook.url}/hooks` });
    await card.waitFor();

    hook.answers = [500];
    await card.getByRole("button", { name: "Send test" }).click();
    const result = card.getByRole("status", { name: "Test result" });
    await result.filter({ hasText: "Test failed: your endpoint answered 500" }).waitFor();
    await screenshot(page, "webhook-test-failed");

    await card.getByRole("button", { name: "Send test" }).click();
    await result.filter({ hasText: "Test delivered: your endpoint answered 200" }).waitFor();
    const got = hook.at("/hooks");
    expect(got).toHaveLength(2);
    expect(got[1]!.json.type).toBe("webhook.test");
  }, 30_000);

  test("a scheduled campaign can be edited and sent now; Activity shows the send in words", async () => {
    const created = await srv.api("/campaigns", { key: secretKey, body: { name: "Launch", subject: "Launch day", body: "<p>Hello {{firstName}}</p>", from: "news@send.first.example", type: "MARKETING", audienceType: "ALL" } });
    expect(created.status).toBe(201);
    const id = created.body.data?.id ?? created.body.id;
    const at = new Date(srv.clock.now() + 7 * 86_400_000).toISOString();
    const scheduled = await srv.api(`/campaigns/${id}/send`, { key: secretKey, body: { scheduledFor: at } });
    expect(scheduled.text).toContain('"SCHEDULED"');

    await nav("Campaigns").click();
    await page.getByRole("link", { name: "Launch" }).click();
    await page.getByRole("heading", { name: "Campaign: Launch" }).waitFor();
    await page.getByRole("status", { name: "Schedule" }).getByText("Scheduled for").waitFor();
    await page.getByLabel("Subject").fill("Launch day is here");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Changes saved; the schedule is unchanged.").waitFor();
    const saved = (await srv.api(`/campaigns/${id}`, { key: secretKey })).body;
    expect(saved.data ?? saved).toMatchObject({ status: "SCHEDULED", subject: "Launch day is here" });
    await screenshot(page, "campaign-scheduled");

    await page.getByRole("button", { name: "Send now…" }).click();
    await page.getByRole("dialog", { name: "Send this campaign now?" }).getByRole("button", { name: "Send to everyone" }).click();
    await sink.waitFor(1, 20_000);
    const after = await waitFor(async () => (await srv.api(`/campaigns/${id}`, { key: secretKey })).body, { until: (b) => (b.data ?? b).status === "SENT", timeoutMs: 20_000, intervalMs: 100, what: "the campaign SENT" });
    expect((after.data ?? after).sentCount).toBe(1);

    await nav("Activity").click();
    await heading("Activity").waitFor();
    const table = page.getByRole("region", { name: "Activity feed" });
    await waitFor(
      async () => {
        const n = await table.getByText("Email sent").count();
        if (!n) await page.getByRole("button", { name: "Refresh" }).click();
        return n;
      },
      { until: (n) => n > 0, intervalMs: 200, timeoutMs: 15_000, what: "Email sent in the activity" },
    );
    const text = await table.innerText();
    expect(text).not.toContain("{");
    expect(text).toContain("Sent by: a campaign");
    expect(text).toContain("Server reply: 250");
  }, 60_000);

  test("phone (390 px): the navigation collapses behind a menu button; every main page fits the screen width", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await nav("Overview").click().catch(() => {});
    const menu = page.getByRole("button", { name: "Menu" });
    await menu.waitFor();
    expect(await page.getByRole("navigation", { name: "Main" }).isVisible()).toBe(false);
    await menu.click();
    await nav("Contacts").click();
    await heading("Contacts").waitFor();
    // Choosing a page closes the menu again.
    expect(await page.getByRole("navigation", { name: "Main" }).isVisible()).toBe(false);

    for (const [path, title, shot] of PAGES) {
      // A full load (not a hash change), so "networkidle" waits for the page's own requests.
      await page.goto(`/?page=${shot}#${path}`, { waitUntil: "networkidle" });
      await heading(title).waitFor();
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect({ page: title, overflow }).toEqual({ page: title, overflow: 0 });
      await screenshot(page, `phone-${shot}`);
    }
    // The editors too: the workflow graph and its step form, the campaign composer.
    for (const [list, link, title, shot] of [["/workflows", "Onboarding", "Workflow: Onboarding", "workflow-editor"], ["/campaigns", "Launch", "Campaign: Launch", "campaign"]] as const) {
      await page.goto(`/?page=${shot}#${list}`, { waitUntil: "networkidle" });
      await page.getByRole("link", { name: link, exact: true }).click();
      await page.getByRole("heading", { name: title }).waitFor();
      await page.waitForLoadState("networkidle");
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      expect({ page: title, overflow }).toEqual({ page: title, overflow: 0 });
      await screenshot(page, `phone-${shot}`);
    }
    await page.getByRole("button", { name: "Menu" }).click();
    await screenshot(page, "phone-menu");
  }, 90_000);

  test("wide (1400 px): each main page, for the README", async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    for (const [path, title, shot] of PAGES) {
      // A full load (not a hash change), so "networkidle" waits for the page's own requests.
      await page.goto(`/?page=${shot}#${path}`, { waitUntil: "networkidle" });
      await heading(title).waitFor();
      await screenshot(page, `wide-${shot}`);
    }
  }, 90_000);

  test("phone: log out from the menu; the login and sign-up pages fit the screen", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("button", { name: "Menu" }).click();
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByRole("heading", { name: "Log in" }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBe(0);
    await screenshot(page, "phone-login");
    await page.getByRole("link", { name: "Sign up" }).click();
    await page.getByRole("button", { name: "Sign up" }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)).toBe(0);
    expect((await fetch(srv.url + "/auth/session", { headers: { cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ") } }).then((r) => r.json())).user).toBeNull();
  }, 30_000);

  test("the whole journey logged no console error and met no 5xx", () => {
    expect(consoleErrors).toEqual([]);
    expect(serverErrors).toEqual([]);
  });
});

const PAGES: [string, string, string][] = [
  ["/", "Overview", "overview"],
  ["/contacts", "Contacts", "contacts"],
  ["/segments", "Segments", "segments"],
  ["/campaigns", "Campaigns", "campaigns"],
  ["/workflows", "Workflows", "workflows"],
  ["/templates", "Templates", "templates"],
  ["/emails", "Emails", "emails"],
  ["/activity", "Activity", "activity"],
  ["/domains", "Domains", "domains"],
  ["/webhooks", "Webhooks", "webhooks"],
  ["/billing", "Billing and limits", "billing"],
  ["/settings", "Project settings", "settings"],
];

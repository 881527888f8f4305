// The audience and automation pages in a real browser: build a segment with the condition builder
// (live count), send a campaign to it that reaches the SMTP sink and watch its stats move after an
// open, then build and enable a workflow that sends when a tracked event arrives.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { startSmtpSink, type SmtpSink } from "../support/smtp-sink";
import { waitFor } from "../support/wait";
import { MODULES } from "../../src/modules";
import { launchBrowser, newPage, openDashboard, pageErrors, screenshot } from "./browser";

// These pages drive the segments, campaigns and workflows modules: a build without one of them skips the
// suite with a warning naming what is missing.
const NEEDED = ["segments", "campaigns", "workflows"];
const missing = NEEDED.filter((n) => !MODULES.some((m) => m.name === n));
if (missing.length) console.warn(`test/web/automation.test.ts SKIPPED: this build has no ${missing.join(", ")} module(s) yet`);

let srv: TestServer;
let dns: TestDns;
let sink: SmtpSink;
let browser: Browser;
let page: Page;
let acc: Account;
let templateId = "";

beforeAll(async () => {
  if (missing.length) return;
  dns = await startDns();
  sink = await startSmtpSink();
  srv = await startServer({ config: { dnsServers: [dns.server], mxPort: sink.port, hostname: "mta.mailsvc.test" } });
  expect((await fetch(srv.url + "/")).status).toBe(200);
  acc = await createAccount(srv.api, "Automation");
  await addVerifiedDomain(srv.api, dns, acc, "send.acme.example");
  dns.mailDomain("people.example");
  for (const [email, plan] of [["pro1@people.example", "pro"], ["pro2@people.example", "pro"], ["free@people.example", "free"]]) {
    expect((await srv.api("/contacts", { key: acc.secretKey, body: { email, data: { plan, firstName: email.split("@")[0] } } })).status).toBe(201);
  }
  const tpl = await srv.api("/templates", {
    key: acc.secretKey,
    body: { name: "Welcome", subject: "Welcome {{firstName}}", body: "<p>Hi {{firstName}}</p>", from: "hi@send.acme.example", type: "TRANSACTIONAL" },
  });
  templateId = tpl.body.id;

  browser = await launchBrowser();
  page = await newPage(browser, srv.url, acc.cookie);
  await openDashboard(page, "/");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await sink?.close();
  await dns?.close();
});

const key = () => acc.secretKey;

describe.skipIf(missing.length > 0)("audience and automation", () => {
  test("segments: build a condition with a live count, save it, see its members", async () => {
    await page.getByRole("link", { name: "Segments" }).click();
    await page.getByRole("button", { name: "New segment" }).click();
    await page.getByLabel("Segment name").fill("Pro users");
    await page.getByRole("button", { name: "Add filter" }).click();
    const filter = page.getByRole("group", { name: "Filter 1.1" });
    await filter.getByLabel("Field").fill("data.plan");
    await filter.getByLabel("Operator").selectOption("equals");
    await filter.getByLabel("Value").fill("pro");
    await page.getByTestId("live-count").filter({ hasText: /^2$/ }).waitFor();
    await page.getByRole("button", { name: "Create segment" }).click();
    await page.getByRole("heading", { name: "Segment: Pro users" }).waitFor();
    await page.getByRole("link", { name: "pro1@people.example" }).waitFor();
    expect(await page.getByRole("link", { name: "free@people.example" }).count()).toBe(0);
    await screenshot(page, "segment");

    const segments = (await srv.api("/segments", { key: key() })).body;
    expect(segments).toHaveLength(1);
    expect(segments[0]).toMatchObject({ name: "Pro users", type: "DYNAMIC" });
    expect(segments[0].condition.groups[0].filters[0]).toMatchObject({ field: "data.plan", operator: "equals", value: "pro" });
  }, 30_000);

  test("campaigns: compose for the segment, confirm the send, mail reaches the sink, stats move after an open", async () => {
    await page.getByRole("link", { name: "Campaigns" }).click();
    await page.getByRole("button", { name: "New campaign" }).click();
    await page.getByLabel("Campaign name").fill("Spring news");
    await page.getByLabel("Subject").fill("Spring news for {{firstName}}");
    await page.getByLabel("From address").fill("news@send.acme.example");
    await page.getByLabel("Body (HTML)").fill('<p>Hello {{firstName}}, <a href="https://acme.example/spring">read more</a></p>');
    await page.getByLabel("A segment").check();
    await page.getByLabel("Segment", { exact: true }).selectOption({ label: "Pro users (2)" });
    await page.getByTestId("recipient-count").filter({ hasText: /^2$/ }).waitFor();
    await page.getByRole("button", { name: "Create draft" }).click();
    await page.getByRole("heading", { name: "Campaign: Spring news" }).waitFor();
    await screenshot(page, "campaign-composer");

    await page.getByRole("button", { name: "Send now…" }).click();
    const dialog = page.getByRole("dialog", { name: "Send this campaign now?" });
    // The recipient count arrives after a debounce: wait for it rather than reading the dialog at once.
    await dialog.getByText("2 recipients").waitFor({ timeout: 15_000 });
    expect(await dialog.textContent()).toContain("2 recipients");
    await dialog.getByRole("button", { name: "Send to everyone" }).click();

    const messages = await sink.waitFor(2, 20_000);
    expect(messages.flatMap((m) => m.to).sort()).toEqual(["pro1@people.example", "pro2@people.example"]);
    await page.getByTestId("stat-sent").filter({ hasText: /^2$/ }).waitFor({ timeout: 20_000 });

    // The recipient opens the email: fetch its tracking pixel.
    const html = String((await messages[0]!.parse()).html);
    const pixel = [...html.matchAll(/<img[^>]+src="([^"]+)"/g)].map((m) => m[1]!).find((u) => u.startsWith(srv.url));
    expect(pixel).toBeDefined();
    expect((await fetch(pixel!.replace(/&amp;/g, "&"))).status).toBe(200);
    await page.getByTestId("stat-opened").filter({ hasText: /^1$/ }).waitFor({ timeout: 20_000 });
    await screenshot(page, "campaign-stats");

    const list = (await srv.api("/campaigns", { key: key() })).body;
    const c = list.data[0];
    const stats = (await srv.api(`/campaigns/${c.id}/stats`, { key: key() })).body;
    expect(stats).toMatchObject({ sentCount: 2, openedCount: 1 });
  }, 60_000);

  test("workflows: add a send step, enable, and a tracked event sends the email; executions show the step log", async () => {
    await page.getByRole("link", { name: "Workflows" }).click();
    await page.getByRole("button", { name: "New workflow" }).click();
    const dialog = page.getByRole("dialog", { name: "New workflow" });
    await dialog.getByLabel("Workflow name").fill("Welcome flow");
    await dialog.getByLabel("Trigger event name").fill("signed_up");
    await dialog.getByRole("button", { name: "Create workflow" }).click();
    await page.getByRole("heading", { name: "Workflow: Welcome flow" }).waitFor();

    await page.getByLabel("Step type").selectOption("SEND_EMAIL");
    await page.getByRole("button", { name: "Add step" }).click();
    const editor = page.getByRole("form", { name: "Configure step" });
    await editor.waitFor();
    await editor.getByLabel("Email template").selectOption({ label: "Welcome" });
    await editor.getByLabel("Step name").fill("Say hello");
    await editor.getByRole("button", { name: "Save step" }).click();
    await page.locator(".react-flow__node").filter({ hasText: "Say hello" }).waitFor();
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByText("Workflow enabled.").waitFor();
    await screenshot(page, "workflow-editor");

    const wfs = (await srv.api("/workflows", { key: key() })).body.data;
    const wf = (await srv.api(`/workflows/${wfs[0].id}`, { key: key() })).body;
    expect(wf).toMatchObject({ name: "Welcome flow", enabled: true, triggerType: "EVENT", triggerConfig: { eventName: "signed_up" } });
    expect(wf.steps).toHaveLength(1);
    expect(wf.steps[0]).toMatchObject({ type: "SEND_EMAIL", name: "Say hello", config: { templateId } });
    expect(wf.entryStepId).toBe(wf.steps[0].id);

    const before = sink.messages.length;
    const tracked = await srv.api("/v1/track", { key: acc.publicKey, body: { email: "newbie@people.example", event: "signed_up", data: { firstName: "Newbie" } } });
    expect(tracked.status).toBe(200);
    const msgs = await sink.waitFor(before + 1, 20_000);
    const mail = msgs.find((m) => m.to.includes("newbie@people.example"))!;
    expect((await mail.parse()).subject).toBe("Welcome Newbie");

    await waitFor(async () => (await srv.api(`/workflows/${wf.id}/executions`, { key: key() })).body.data as any[], {
      until: (d) => d[0]?.status === "COMPLETED",
      timeoutMs: 15_000,
      intervalMs: 100,
      what: "the execution COMPLETED",
    });
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.getByRole("button", { name: "Step log" }).first().click();
    await page.getByRole("region", { name: "Step log" }).or(page.locator('[aria-label="Step log"]')).first().getByText("Send email").waitFor();
    await screenshot(page, "workflow-executions");
    expect(pageErrors(page)).toEqual([]);
  }, 60_000);

  test("overview shows the charts", async () => {
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByRole("heading", { name: "Email activity" }).waitFor();
    // The analytics charts, and no error message in their place.
    await page.locator("canvas").first().waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    await screenshot(page, "overview");
  }, 30_000);
});

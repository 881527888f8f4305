// Issue 33's browser bar: the sandbox journey in a real browser (playwright-core + Debian's chromium)
// against the built binary (`./mailsvc serve`, built by `npm run build` when missing or older than its
// sources), through the dashboard's forms only: sign up, a first project with the sandbox on, a first
// email (the campaign composer's "Send test") read rendered in the email view, three contacts (one
// `bounce@`), a campaign to all of them sent and reported SENT with 1 bounce, a two-step workflow
// (Send email → Update the contact) enabled and started for a contact with its run and steps, the
// bounce in Activity and the bounced address on the Suppressions page and unsubscribed on its contact
// page. The whole journey logs no console error and meets no 5xx; each of its pages is photographed
// at 1400 px and 390 px wide into docs/screenshots/journey-<page>-{wide,phone}.png (the README shows
// a few).
//
// No API call drives the journey: the dashboard has a form for every step. The test only reads the
// API (through the browser's session) to check what the pages say.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { ensureBinary } from "../docs/support";
import { engineEnv, freeTcpPort } from "../support/server";
import { waitFor } from "../support/wait";
import { launchBrowser, screenshot } from "./browser";

let dir: string;
let server: ReturnType<typeof Bun.spawn>;
let serverLog = "";
let url = "";
let browser: Browser;
let context: BrowserContext;
let page: Page;
let projectId = "";

const me = "you@spring-shop.example";
const password = "correct horse battery";
const CONTACTS = ["ann@people.example", "bob@people.example", "bounce@people.example"] as const;
const BOUNCE = CONTACTS[2];

/** Console errors and 5xx answers over the whole journey: both stay empty. */
const consoleErrors: string[] = [];
const serverErrors: string[] = [];
/** Pages wider than a 390 px phone screen (horizontal scrolling). */
const overflowing: { page: string; overflow: number }[] = [];

beforeAll(async () => {
  const binary = ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "mailsvc-journey-"));
  const port = await freeTcpPort();
  url = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("MAILSVC_")) env[k] = v;
  server = Bun.spawn([binary, "serve"], {
    cwd: dir,
    env: {
      ...env,
      ...(await engineEnv({ MAILSVC_DB: join(dir, "mailsvc.db") })),
      MAILSVC_HOST: "127.0.0.1",
      MAILSVC_PORT: String(port),
      MAILSVC_PUBLIC_URL: url,
      MAILSVC_HOSTNAME: "mail.journey.example",
      MAILSVC_LOG_REQUESTS: "false",
    },
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const s of [server.stdout, server.stderr] as ReadableStream<Uint8Array>[])
    void (async () => {
      for await (const chunk of s) serverLog += new TextDecoder().decode(chunk);
    })();
  await waitFor(() => fetch(url + "/config").then((r) => r.ok, () => false), { timeoutMs: 15_000, intervalMs: 50, what: "./mailsvc serve" }).catch((e) => {
    throw new Error(`${(e as Error).message}; output: ${serverLog}`);
  });

  browser = await launchBrowser();
  context = await browser.newContext({ baseURL: url, viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on("pageerror", (e) => consoleErrors.push(`pageerror: ${e}`));
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("response", (r) => {
    if (r.status() >= 500) serverErrors.push(`${r.status()} ${r.request().method()} ${r.url()}`);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (server) {
    server.kill("SIGTERM");
    await server.exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Reads the API with the browser's session (checks only: the journey itself goes through the pages). */
async function read(path: string) {
  const token = (await context.cookies()).find((c) => c.name === "token")?.value;
  const r = await fetch(url + path, { headers: { cookie: `token=${token}`, "x-project-id": projectId } });
  expect(r.status).toBe(200);
  return (await r.json()) as any;
}

const heading = (name: string | RegExp) => page.getByRole("heading", { name, level: 1 });
const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name, exact: true });

const frames = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));

/**
 * The page as it is, at 1400 px (docs/screenshots/journey-<name>-wide.png) and at 390 px (…-phone.png), scrolled
 * to `focus` when given; at 390 px nothing may be wider than the screen.
 */
async function photograph(name: string, focus?: Locator) {
  await focus?.scrollIntoViewIfNeeded();
  await screenshot(page, `journey-${name}-wide`);
  await page.setViewportSize({ width: 390, height: 844 });
  await frames();
  await focus?.scrollIntoViewIfNeeded();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (overflow > 0) overflowing.push({ page: name, overflow });
  await screenshot(page, `journey-${name}-phone`);
  await page.setViewportSize({ width: 1400, height: 900 });
  await frames();
}

describe("the sandbox journey", () => {
  test("sign up; the first project is created with the sandbox on and opens on Overview with the sandbox banner", async () => {
    await page.goto("/");
    await heading("Log in").waitFor();
    await page.getByRole("link", { name: "Sign up" }).click();
    await heading("Create your account").waitFor();
    await page.getByLabel("Email").fill(me);
    await page.getByLabel("Password").fill(password);
    await photograph("signup");
    await page.getByRole("button", { name: "Sign up" }).click();

    await page.getByRole("heading", { name: "Create a project" }).waitFor();
    await page.getByLabel("Project name").fill("Spring shop");
    await page.getByLabel("Sandbox: try everything without DNS").check();
    await photograph("new-project");
    await page.getByRole("button", { name: "Create project" }).click();
    await heading("Overview").waitFor();
    await page.getByText("Sandbox: this project's mail is captured, never sent").waitFor();
    await page.getByRole("list", { name: "Getting started" }).waitFor();
    await page.waitForLoadState("networkidle");
    await photograph("overview");

    const token = (await context.cookies()).find((c) => c.name === "token")?.value;
    const projects = await (await fetch(url + "/users/@me/projects", { headers: { cookie: `token=${token}` } })).json();
    expect(projects).toHaveLength(1);
    expect(projects[0]).toMatchObject({ name: "Spring shop", sandbox: true });
    projectId = projects[0].id;
  }, 60_000);

  test("a first email: a campaign draft's Send test, captured, then read rendered in the email view", async () => {
    await nav("Campaigns").click();
    await heading("Campaigns").waitFor();
    await page.getByRole("button", { name: "New campaign" }).click();
    await heading("New campaign").waitFor();
    await page.getByLabel("Campaign name").fill("Spring news");
    await page.getByLabel("Subject").fill("Spring is here");
    // The sandbox sends from any domain: nothing to verify first.
    await page.getByLabel("From address").fill("news@spring-shop.example");
    await page.getByLabel("From name").fill("Spring Shop");
    await page.getByLabel("Body (HTML)").fill('<h1>Spring collection</h1>\n<p>Hello {{ firstName ?? "there" }}, the spring collection is in the shop.</p>');
    await page.getByRole("button", { name: "Create draft" }).click();
    await heading("Campaign: Spring news").waitFor();
    await page.getByLabel("Send a test to").fill(me);
    await page.getByRole("button", { name: "Send test" }).click();
    await page.getByText(`Test sent to ${me}.`).waitFor();
    await page.getByTestId("recipient-count").waitFor();
    await photograph("campaign-draft");

    // The Emails log: the test is captured (DELIVERED, marked sandbox) by the server's own outbox.
    await nav("Emails").click();
    await heading("Emails").waitFor();
    const row = page.getByRole("row", { name: /\[TEST\] Spring is here/ });
    await waitFor(
      async () => {
        const delivered = await row.getByText("DELIVERED", { exact: true }).count();
        if (!delivered) await page.getByRole("button", { name: "Refresh" }).click();
        return delivered;
      },
      { until: (n) => n > 0, intervalMs: 300, timeoutMs: 20_000, what: "the test email DELIVERED in the log" },
    );
    await row.getByText("sandbox", { exact: true }).waitFor();
    await photograph("emails");

    await row.getByRole("link", { name: "[TEST] Spring is here" }).click();
    await heading("Email: [TEST] Spring is here").waitFor();
    await page.getByText("Captured by the sandbox: this message was built, signed and tracked exactly as for real").waitFor();
    const frame = page.frameLocator('iframe[title="Email HTML"]');
    await frame.getByRole("heading", { name: "Spring collection" }).waitFor();
    await frame.getByText("the spring collection is in the shop.").waitFor();
    expect(await page.locator('iframe[title="Email HTML"]').getAttribute("sandbox")).toBe("allow-popups allow-popups-to-escape-sandbox");
    await photograph("email");
  }, 60_000);

  test("three contacts (one bounce@) through the New contact form; the campaign sent to all of them is SENT with 1 bounce", async () => {
    await nav("Contacts").click();
    await heading("Contacts").waitFor();
    for (const email of CONTACTS) {
      await page.getByRole("button", { name: "New contact" }).click();
      const dialog = page.getByRole("dialog", { name: "New contact" });
      await dialog.getByLabel("Email").fill(email);
      const first = email.split("@")[0]!;
      await dialog.getByLabel("Data (JSON object)").fill(JSON.stringify({ firstName: first[0]!.toUpperCase() + first.slice(1) }));
      await dialog.getByRole("button", { name: "Save" }).click();
      await dialog.waitFor({ state: "hidden" });
      await page.getByRole("link", { name: email, exact: true }).waitFor();
    }
    await page.getByText(/1–3 of 3/).waitFor();
    await photograph("contacts");

    await nav("Campaigns").click();
    await page.getByRole("link", { name: "Spring news" }).click();
    await heading("Campaign: Spring news").waitFor();
    // Audience: all contacts, three of them subscribed.
    await page.getByTestId("recipient-count").filter({ hasText: "3" }).waitFor();
    await page.getByRole("button", { name: "Send now…" }).click();
    const confirm = page.getByRole("dialog", { name: "Send this campaign now?" });
    await confirm.getByText("3 recipients").waitFor();
    await confirm.getByRole("button", { name: "Send to everyone" }).click();

    // The report, once the outbox has handed every message to the sandbox: SENT, 3 sent, 2 delivered, 1 bounced.
    await page.getByLabel("Campaign statistics").waitFor({ timeout: 20_000 });
    const stat = (name: string) => page.getByTestId(`stat-${name}`);
    await page.locator("p").filter({ hasText: /^Status SENT/ }).waitFor({ timeout: 20_000 });
    await stat("bounced").filter({ hasText: /^1$/ }).waitFor({ timeout: 20_000 });
    await stat("delivered").filter({ hasText: /^2$/ }).waitFor({ timeout: 20_000 });
    expect(await stat("recipients").innerText()).toBe("3");
    expect(await stat("sent").innerText()).toBe("3");
    await page.getByRole("region", { name: "Funnel" }).or(page.getByLabel("Campaign funnel")).first().waitFor();
    await photograph("campaign-sent");
  }, 60_000);

  test("a two-step workflow (Send email → Update the contact) built through the editor's forms, enabled, started for a contact; its run shows both steps", async () => {
    // The workflow's email: a template made on the Templates page.
    await nav("Templates").click();
    await heading("Templates").waitFor();
    await page.getByRole("button", { name: "New template" }).click();
    await heading("New template").waitFor();
    await page.getByLabel("Name", { exact: true }).fill("Welcome");
    await page.getByLabel("Subject").fill("Welcome, {{ firstName ?? \"friend\" }}");
    await page.getByLabel("From address").fill("hello@spring-shop.example");
    await page.getByLabel("Body (HTML)").fill('<p>Welcome to Spring Shop, {{ firstName ?? "friend" }}!</p>');
    await page.getByRole("button", { name: "Create template" }).click();
    await heading("Template: Welcome").waitFor();

    await nav("Workflows").click();
    await heading("Workflows").waitFor();
    await page.getByRole("button", { name: "New workflow" }).click();
    const dialog = page.getByRole("dialog", { name: "New workflow" });
    await dialog.getByLabel("Workflow name").fill("Welcome series");
    await dialog.getByLabel("Trigger event name").fill("signed_up");
    await dialog.getByRole("button", { name: "Create workflow" }).click();
    await heading("Workflow: Welcome series").waitFor();

    const editor = page.getByRole("form", { name: "Configure step" });
    await page.getByLabel("Step type").selectOption({ label: "Send email" });
    await page.getByRole("button", { name: "Add step" }).click();
    await editor.getByRole("heading", { name: "Send email" }).waitFor();
    await editor.getByLabel("Email template").selectOption({ label: "Welcome" });
    await editor.getByLabel("Step name").fill("Say welcome");
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();

    await page.getByLabel("Step type").selectOption({ label: "Update the contact" });
    await page.getByRole("button", { name: "Add step" }).click();
    await editor.getByRole("heading", { name: "Update the contact" }).waitFor();
    await editor.getByRole("button", { name: "Add field" }).click();
    const field = editor.getByRole("group", { name: "Contact fields to set 1" });
    await field.getByLabel("Field", { exact: true }).fill("welcomed");
    await field.getByLabel("Value").fill("true");
    await editor.getByLabel("Step name").fill("Mark welcomed");
    await editor.getByRole("button", { name: "Save step" }).click();
    await editor.getByText("Step saved.").waitFor();
    await page.locator(".react-flow__node").filter({ hasText: "Say welcome" }).waitFor();
    await page.locator(".react-flow__node").filter({ hasText: "Mark welcomed" }).waitFor();

    await page.getByRole("button", { name: "Enable", exact: true }).click();
    await page.getByText("Workflow enabled.").waitFor();
    await page.getByRole("button", { name: "Disable", exact: true }).waitFor();
    await photograph("workflow");

    const start = page.getByRole("form", { name: "Start an execution" });
    await start.getByLabel("Start for a contact (email)").fill(CONTACTS[0]);
    await start.getByRole("button", { name: "Start execution" }).click();
    await page.getByText(`Execution started for ${CONTACTS[0]}.`).waitFor();
    const executions = page.getByRole("region", { name: "Executions" });
    const run = executions.getByRole("row", { name: new RegExp(CONTACTS[0]) });
    // The list refreshes itself while the workflow is enabled.
    await run.getByText("COMPLETED", { exact: true }).waitFor({ timeout: 20_000 });
    await run.getByRole("button", { name: "Step log" }).click();
    const log = page.locator('.card[aria-label="Step log"]');
    await log.getByText("COMPLETED").first().waitFor();
    const steps = await log.locator("li").allInnerTexts();
    expect(steps).toHaveLength(2);
    expect(steps[0]).toContain("Send email");
    expect(steps[0]).toContain("COMPLETED");
    expect(steps[1]).toContain("Update the contact");
    expect(steps[1]).toContain("COMPLETED");
    await photograph("workflow-run", executions);

    // What the run did: Ann got the welcome email (captured) and her data says so.
    const wf = (await read("/workflows")).data.find((w: { name: string }) => w.name === "Welcome series");
    const full = await read(`/workflows/${wf.id}`);
    expect(full.steps.map((s: { type: string }) => s.type).sort()).toEqual(["SEND_EMAIL", "UPDATE_CONTACT"]);
    expect(full.transitions).toHaveLength(1);
    const ann = (await read(`/contacts?search=${encodeURIComponent(CONTACTS[0])}`)).data[0];
    expect(ann.data).toMatchObject({ firstName: "Ann", welcomed: true });
    const annEmails = (await read(`/emails?contactId=${ann.id}`)).data.map((e: { subject: string }) => e.subject);
    expect(annEmails).toContain("Welcome, Ann");
  }, 90_000);

  test("the bounce in Activity; the bounced address on the Suppressions page (hard bounce) and suppressed and unsubscribed on its contact page", async () => {
    await nav("Activity").click();
    await heading("Activity").waitFor();
    const feed = page.getByRole("region", { name: "Activity feed" });
    const bounced = feed.getByRole("row").filter({ hasText: "Bounced" }).filter({ hasText: BOUNCE });
    await waitFor(
      async () => {
        const n = await bounced.count();
        if (!n) await page.getByRole("button", { name: "Refresh" }).click();
        return n;
      },
      { until: (n) => n > 0, intervalMs: 300, timeoutMs: 15_000, what: "the bounce in the activity" },
    );
    expect(await bounced.first().innerText()).toMatch(/5\.1\.1|550|hard/i);
    await page.waitForLoadState("networkidle");
    await photograph("activity", bounced.first());

    await nav("Suppressions").click();
    await heading("Suppressions").waitFor();
    const row = page.getByRole("row").filter({ hasText: BOUNCE });
    await row.getByText("Hard bounce", { exact: true }).waitFor();
    await row.getByRole("link", { name: "View source email" }).waitFor();
    expect(await page.getByRole("row").filter({ hasText: "@people.example" }).count()).toBe(1);
    await photograph("suppressions");

    await nav("Contacts").click();
    await page.getByRole("link", { name: BOUNCE, exact: true }).click();
    await heading(BOUNCE).waitFor();
    await page.getByRole("status").filter({ hasText: `${BOUNCE} is suppressed (a hard bounce,` }).getByRole("link", { name: "Suppressions" }).waitFor();
    expect(await page.getByLabel("Subscribed").isChecked()).toBe(false);
    const emails = page.getByRole("region", { name: "Emails" });
    await emails.getByText("BOUNCED", { exact: true }).waitFor();
    await page.waitForLoadState("networkidle");
    await photograph("contact-bounced");
  }, 60_000);

  test("the whole journey logged no console error, met no 5xx, and every page fits a 390 px phone", () => {
    expect(consoleErrors).toEqual([]);
    expect(serverErrors).toEqual([]);
    expect(overflowing).toEqual([]);
  });
});


// The campaign and template editors' "Open tracking" field in a real browser: a body too short for the
// open pixel says what it costs with SpamAssassin's local rules and turns open tracking off in one click;
// the choice is saved as the object's trackOpens.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";
import { launchBrowser, newPage, openDashboard, pageErrors } from "./browser";

let srv: TestServer;
let dns: TestDns;
let browser: Browser;
let page: Page;
let acc: Account;

beforeAll(async () => {
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server], hostname: "mta.mailsvc.test" } });
  acc = await createAccount(srv.api, "Tracking");
  await addVerifiedDomain(srv.api, dns, acc, "news.acme.example");
  browser = await launchBrowser();
  page = await newPage(browser, srv.url, acc.cookie);
  await openDashboard(page, "/#/templates/new");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await dns?.close();
});

const SHORT = "<p>Hi {{firstName}}, welcome aboard.</p>";
const LONG = Array.from({ length: 12 }, (_, i) => `<p>Paragraph ${i + 1}: our workshop makes every pair by hand from leather tanned without chromium, in Porto.</p>`).join("\n");

describe("open tracking in the editors", () => {
  test("template: a short MARKETING body shows the pixel's cost; one click turns open tracking off and it is saved", async () => {
    await page.getByLabel("Name", { exact: true }).fill("Welcome");
    await page.getByLabel("Subject").fill("Welcome");
    await page.getByLabel("From address").fill("hello@news.acme.example");
    await page.getByLabel("Body (HTML)").fill(SHORT);
    // New projects track MARKETING mail (MARKETING_ONLY): the default is on.
    expect(await page.getByLabel("Open tracking").inputValue()).toBe("default");
    const cost = page.getByTestId("pixel-cost");
    await cost.waitFor();
    expect(await cost.innerText()).toMatch(/as HTML_IMAGE_ONLY_\d\d: about \+\d\.\d spam points from the pixel alone\. Add about [\d,]+ bytes of content, or turn open tracking off for this template/);
    await page.getByRole("button", { name: "Turn open tracking off" }).click();
    expect(await page.getByLabel("Open tracking").inputValue()).toBe("off");
    expect(await cost.count()).toBe(0);
    await page.getByRole("button", { name: "Create template" }).click();
    await page.getByRole("heading", { name: "Template: Welcome" }).waitFor();
    const list = (await srv.api("/templates", { key: acc.secretKey })).body.data;
    expect(list.map((t: any) => [t.name, t.trackOpens])).toEqual([["Welcome", false]]);
    // Back to the project default: the warning is back; a long body has none.
    await page.getByLabel("Open tracking").selectOption("default");
    await cost.waitFor();
    await page.getByLabel("Body (HTML)").fill(LONG);
    await page.waitForFunction(() => !document.querySelector('[data-testid="pixel-cost"]'));
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByText("Template saved.").waitFor();
    expect((await srv.api(`/templates/${list[0].id}`, { key: acc.secretKey })).body.trackOpens).toBeNull();
  }, 30_000);

  test("template: TRANSACTIONAL under MARKETING_ONLY has no pixel by default, so no cost; On shows it", async () => {
    await page.goto("/#/templates/new");
    await page.getByRole("heading", { name: "New template" }).waitFor();
    await page.getByLabel("Body (HTML)").fill(SHORT);
    await page.getByLabel("Type").selectOption("TRANSACTIONAL");
    expect(await page.getByRole("option", { name: "Project default (off)" }).count()).toBe(1);
    expect(await page.getByTestId("pixel-cost").count()).toBe(0);
    await page.getByLabel("Open tracking").selectOption("on");
    await page.getByTestId("pixel-cost").waitFor();
  }, 30_000);

  test("campaign: the same field; the draft is saved with trackOpens false", async () => {
    await page.goto("/#/campaigns/new");
    await page.getByRole("heading", { name: "New campaign" }).waitFor();
    await page.getByLabel("Campaign name").fill("Short news");
    await page.getByLabel("Subject").fill("News");
    await page.getByLabel("From address").fill("news@news.acme.example");
    await page.getByLabel("Body (HTML)").fill(SHORT);
    await page.getByTestId("pixel-cost").waitFor();
    expect(await page.getByTestId("pixel-cost").innerText()).toContain("turn open tracking off for this campaign");
    await page.getByRole("button", { name: "Turn open tracking off" }).click();
    await page.getByRole("button", { name: "Create draft" }).click();
    await page.waitForFunction(() => !location.hash.endsWith("/new"));
    const list = (await srv.api("/campaigns", { key: acc.secretKey })).body.data;
    expect(list.map((c: any) => [c.name, c.trackOpens])).toEqual([["Short news", false]]);
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);

  test("workflow step: the template's setting by default; a short template's cost is shown; turning it off is saved in config.trackOpens", async () => {
    // A short template left at the project default, for the step to inherit "on".
    const short = await srv.api("/templates", { key: acc.secretKey, body: { name: "Nudge", subject: "Hi", body: SHORT, from: "hello@news.acme.example" } });
    expect(short.status).toBe(201);
    await page.goto("/#/workflows");
    await page.getByRole("button", { name: "New workflow" }).click();
    const dialog = page.getByRole("dialog", { name: "New workflow" });
    await dialog.getByLabel("Workflow name").fill("Nudges");
    await dialog.getByLabel("Trigger event name").fill("idle");
    await dialog.getByRole("button", { name: "Create workflow" }).click();
    await page.getByRole("heading", { name: "Workflow: Nudges" }).waitFor();
    await page.getByLabel("Step type").selectOption("SEND_EMAIL");
    await page.getByRole("button", { name: "Add step" }).click();
    const editor = page.getByRole("form", { name: "Configure step" });
    await editor.waitFor();
    await editor.getByLabel("Email template").selectOption({ label: "Nudge" });
    expect(await editor.getByRole("option", { name: "Template's setting (on)" }).count()).toBe(1);
    await editor.getByTestId("pixel-cost").waitFor();
    expect(await editor.getByTestId("pixel-cost").innerText()).toContain("turn open tracking off for this workflow step");
    await editor.getByRole("button", { name: "Turn open tracking off" }).click();
    // The form's config, as the "Advanced" JSON view shows it.
    await editor.getByLabel("Advanced: edit the configuration as JSON").check();
    expect(JSON.parse(await editor.getByLabel("Configuration (JSON)").inputValue())).toEqual({ templateId: short.body.id, trackOpens: false });
    await editor.getByRole("button", { name: "Save step" }).click();
    const wf = (await srv.api("/workflows", { key: acc.secretKey })).body.data.find((w: any) => w.name === "Nudges");
    const configs = await waitFor(async () => (await srv.api(`/workflows/${wf.id}`, { key: acc.secretKey })).body.steps.map((st: any) => st.config), {
      until: (c: any[]) => c[0]?.trackOpens !== undefined,
      what: "the step saved",
    });
    expect(configs).toEqual([{ templateId: short.body.id, trackOpens: false }]);
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);
});

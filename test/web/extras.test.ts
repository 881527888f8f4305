// Billing limits, webhook endpoints, image uploads in the template editor and the overview charts, in
// a real browser. These pages drive the billing, uploads, webhooks and analytics modules: a build without
// one of them skips the suite with a warning naming what is missing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { MODULES } from "../../src/modules";
import { addVerifiedDomain } from "../domains/support";
import { startDns, type TestDns } from "../support/dns";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { launchBrowser, newPage, openDashboard, pageErrors, screenshot } from "./browser";

const NEEDED = ["billing", "uploads", "webhooks", "analytics"];
const missing = NEEDED.filter((n) => !MODULES.some((m) => m.name === n));
if (missing.length) console.warn(`test/web/extras.test.ts SKIPPED: this build has no ${missing.join(", ")} module(s) yet`);

let srv: TestServer;
let dns: TestDns;
let browser: Browser;
let page: Page;
let acc: Account;

// A 1x1 PNG.
const PNG = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64");

beforeAll(async () => {
  if (missing.length) return;
  dns = await startDns();
  srv = await startServer({ config: { dnsServers: [dns.server], hostname: "mta.mailsvc.test" } });
  expect((await fetch(srv.url + "/")).status).toBe(200);
  acc = await createAccount(srv.api, "Extras");
  await addVerifiedDomain(srv.api, dns, acc, "img.acme.example");
  browser = await launchBrowser();
  page = await newPage(browser, srv.url, acc.cookie);
  await openDashboard(page, "/#/billing");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.close();
  await dns?.close();
});

describe.skipIf(missing.length > 0)("billing, webhooks, uploads, overview", () => {
  test("billing: set a monthly cap, see it in consumption and in the API", async () => {
    await page.getByRole("heading", { name: "Billing and limits" }).waitFor();
    await page.getByLabel("transactional", { exact: true }).fill("250");
    await page.getByRole("button", { name: "Save limits" }).click();
    await page.getByText("Limits saved.").waitFor();
    const limits = await srv.api(`/users/@me/projects/${acc.projectId}/billing-limits`, { cookie: acc.cookie });
    expect(limits.body).toMatchObject({ transactional: 250, campaigns: null });
    await page.getByRole("cell", { name: "250" }).waitFor();
    await screenshot(page, "billing");
  }, 30_000);

  test("webhooks: add an endpoint with its events", async () => {
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByLabel("Endpoint URL").fill("https://hooks.acme.example/mail");
    await page.getByLabel("email.open").check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    await page.getByRole("region", { name: "Endpoint https://hooks.acme.example/mail" }).waitFor();
    const list = (await srv.api("/webhook-endpoints", { key: acc.secretKey })).body;
    const eps = Array.isArray(list) ? list : list.data;
    expect(eps).toHaveLength(1);
    expect(eps[0].url).toBe("https://hooks.acme.example/mail");
    expect([...eps[0].events].sort()).toEqual(["email.bounce", "email.delivery", "email.open"]);
    await screenshot(page, "webhooks");
  }, 30_000);

  test("uploads: an image uploaded in the template editor lands in the body and the preview", async () => {
    await page.getByRole("link", { name: "Templates" }).click();
    await page.getByRole("button", { name: "New template" }).click();
    await page.getByLabel("Body (HTML)").fill("<p>Logo:</p>");
    await page.getByLabel("Body (HTML)").press("End");
    await page.locator("#image-upload").setInputFiles({ name: "logo.png", mimeType: "image/png", buffer: PNG });
    await page.waitForFunction(() => (document.getElementById("tpl-body") as HTMLTextAreaElement).value.includes("/uploads/"));
    const body = await page.getByLabel("Body (HTML)").inputValue();
    const url = /src="([^"]+)"/.exec(body)![1]!;
    const img = await fetch(url);
    expect(img.status).toBe(200);
    expect(img.headers.get("content-type")).toBe("image/png");
    await page.frameLocator('iframe[title="Email preview"]').locator(`img[src="${url}"]`).waitFor({ timeout: 20_000 });
  }, 30_000);

  test("overview: with nothing sent yet, each chart shows its empty state", async () => {
    await page.getByRole("link", { name: "Overview" }).click();
    await page.getByRole("heading", { name: "Email activity" }).waitFor();
    await page.getByText("No emails in this period yet").waitFor();
    await page.getByText("No campaigns sent in this period.").waitFor();
    await page.getByText("No events tracked in this period.").waitFor();
    expect(await page.locator("canvas").count()).toBe(0);
    const alerts = await page.getByRole("alert").allInnerTexts();
    expect(alerts).toEqual([]);
    await screenshot(page, "overview");
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);
});

// Dashboard fixes found by walking the app as a user: "New contact" with an email that already exists no
// longer silently merges into (and resubscribes) that contact; the workflow graph shows steps added to a new
// workflow; executions name their contact by email and can be started from the page.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { MODULES } from "../../src/modules";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { waitFor } from "../support/wait";
import { launchBrowser, newPage, openDashboard, pageErrors } from "./browser";

const missing = ["workflows"].filter((n) => !MODULES.some((m) => m.name === n));
if (missing.length) console.warn(`test/web/qa-fixes.test.ts SKIPPED: this build has no ${missing.join(", ")} module(s) yet`);

let srv: TestServer;
let browser: Browser;
let page: Page;
let acc: Account;

beforeAll(async () => {
  if (missing.length) return;
  srv = await startServer();
  expect((await fetch(srv.url + "/")).status).toBe(200);
  acc = await createAccount(srv.api, "QA");
  expect((await srv.api("/contacts", { key: acc.secretKey, body: { email: "gone@people.example", subscribed: false, data: { plan: "free" } } })).status).toBe(201);
  browser = await launchBrowser();
  page = await newPage(browser, srv.url, acc.cookie);
  await openDashboard(page, "/#/contacts");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

describe.skipIf(missing.length > 0)("dashboard QA fixes", () => {
  test("New contact with an existing email is refused with a link, and the contact is left as it was", async () => {
    await page.getByRole("link", { name: "gone@people.example" }).waitFor();
    await page.getByRole("button", { name: "New contact" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByLabel("Email").fill("Gone@people.example");
    await dialog.getByLabel("Data (JSON object)").fill('{"plan":"pro"}');
    await dialog.getByRole("button", { name: "Save" }).click();
    await dialog.getByRole("alert").filter({ hasText: "already exists" }).waitFor();
    const c = (await srv.api("/contacts", { key: acc.secretKey })).body.data[0];
    expect(c).toMatchObject({ email: "gone@people.example", subscribed: false, data: { plan: "free" } });

    await dialog.getByRole("link", { name: "open gone@people.example" }).click();
    await page.getByRole("heading", { name: "gone@people.example" }).waitFor();
    expect(await page.getByRole("dialog").count()).toBe(0);

    // A new address still creates.
    await page.getByRole("link", { name: "Contacts" }).click();
    await page.getByRole("button", { name: "New contact" }).click();
    await page.getByRole("dialog").getByLabel("Email").fill("fresh@people.example");
    await page.getByRole("dialog").getByRole("button", { name: "Save" }).click();
    await page.getByRole("link", { name: "fresh@people.example" }).waitFor();
  }, 30_000);

  test("workflow: steps added to a new workflow are in view; an execution started from the page shows its contact's email", async () => {
    await page.getByRole("link", { name: "Workflows" }).click();
    await page.getByRole("button", { name: "New workflow" }).click();
    const dialog = page.getByRole("dialog", { name: "New workflow" });
    await dialog.getByLabel("Workflow name").fill("Manual flow");
    await dialog.getByLabel("Trigger event name").fill("never_sent");
    await dialog.getByRole("button", { name: "Create workflow" }).click();
    await page.getByRole("heading", { name: "Workflow: Manual flow" }).waitFor();
    for (const type of ["DELAY", "DELAY", "EXIT"]) {
      const before = await page.locator(".react-flow__node").count();
      await page.getByLabel("Step type").selectOption(type);
      await page.getByRole("button", { name: "Add step" }).click();
      await waitFor(() => page.locator(".react-flow__node").count(), { until: (n) => n === before + 1, intervalMs: 50, what: "the new node" });
    }
    // Every node lies inside the graph's visible box (it used to stay fitted to the first one only).
    const box = (await page.getByLabel("Workflow graph").boundingBox())!;
    await waitFor(
      async () => {
        const boxes = await Promise.all((await page.locator(".react-flow__node").all()).map((n) => n.boundingBox()));
        return boxes.every((b) => b && b.x >= box.x && b.y >= box.y && b.x + b.width <= box.x + box.width && b.y + b.height <= box.y + box.height);
      },
      { until: (inside) => inside, intervalMs: 50, timeoutMs: 5_000, what: "every node inside the graph" },
    );

    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByText("Workflow enabled.").waitFor();
    const form = page.getByRole("form", { name: "Start an execution" });
    await form.getByLabel("Start for a contact (email)").fill("gone@people.example");
    await form.getByRole("button", { name: "Start execution" }).click();
    await page.getByText("Execution started for gone@people.example.").waitFor();
    await page.getByRole("link", { name: "gone@people.example" }).waitFor();
    const wf = (await srv.api("/workflows", { key: acc.secretKey })).body.data.find((w: any) => w.name === "Manual flow");
    expect((await srv.api(`/workflows/${wf.id}/executions`, { key: acc.secretKey })).body.total).toBe(1);
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);
});

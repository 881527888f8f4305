// Dashboard fixes from a second QA pass: the project selected after login is the last one the user picked (else
// the first one they created, not the newest); bulk contact jobs report in their own terms (deleted / subscribed /
// unsubscribed and failed, not "0 created, 0 updated"); the workflow page switches the trigger between EVENT and
// MANUAL and shows the server's refusal; the contacts pager shows the position ("26–50 of 53").
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { MODULES } from "../../src/modules";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { launchBrowser, newPage, pageErrors } from "./browser";

const missing = ["workflows"].filter((n) => !MODULES.some((m) => m.name === n));
if (missing.length) console.warn(`test/web/qa-fixes-2.test.ts SKIPPED: this build has no ${missing.join(", ")} module(s) yet`);

let srv: TestServer;
let browser: Browser;
let page: Page;
let acc: Account;
let secondProjectId: string;
const email = (i: number) => `c${String(i).padStart(2, "0")}@people.example`;

async function loggedInPage(): Promise<Page> {
  const p = await newPage(browser, srv.url, acc.cookie);
  return p;
}

beforeAll(async () => {
  if (missing.length) return;
  srv = await startServer();
  acc = await createAccount(srv.api, "First project");
  // A second, newer project: the API lists it first (newest first).
  srv.clock.advance(1_000);
  const second = await srv.api("/users/@me/projects", { cookie: acc.cookie, body: { name: "Second project" } });
  expect(second.status).toBe(201);
  secondProjectId = second.body.id;
  // 53 contacts in the first project: three pages of 25; odd ones unsubscribed.
  for (let i = 0; i < 53; i += 10) {
    await Promise.all(
      Array.from({ length: Math.min(10, 53 - i) }, (_, k) =>
        srv.api("/contacts", { key: acc.secretKey, body: { email: email(i + k), subscribed: (i + k) % 2 === 0 } }).then((r) => expect(r.status).toBe(201)),
      ),
    );
  }
  browser = await launchBrowser();
  page = await loggedInPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await srv?.close();
});

describe.skipIf(missing.length > 0)("dashboard QA fixes (2)", () => {
  test("project: the first one created is the default, the last one selected is restored", async () => {
    const p = await loggedInPage();
    await p.goto("/");
    await p.getByRole("navigation", { name: "Main" }).waitFor();
    const sw = p.getByLabel("Project", { exact: true });
    expect(await sw.inputValue()).toBe(acc.projectId);

    await sw.selectOption(secondProjectId);
    await p.reload();
    await p.getByRole("navigation", { name: "Main" }).waitFor();
    expect(await p.getByLabel("Project", { exact: true }).inputValue()).toBe(secondProjectId);
    expect(pageErrors(p)).toEqual([]);
    await p.context().close();
  }, 30_000);

  test("contacts pager shows the position, keeping the first page's total", async () => {
    await page.goto("/#/contacts");
    const pager = page.getByRole("navigation", { name: "Pages" });
    await pager.getByText("1–25 of 53 · page 1 of 3").waitFor();
    await pager.getByRole("button", { name: "Next" }).click();
    await pager.getByText("26–50 of 53 · page 2 of 3").waitFor();
    await pager.getByRole("button", { name: "Next" }).click();
    await pager.getByText("51–53 of 53 · page 3 of 3").waitFor();
    expect(await pager.getByRole("button", { name: "Next" }).isDisabled()).toBe(true);
    await pager.getByRole("button", { name: "Previous" }).click();
    await pager.getByText("26–50 of 53 · page 2 of 3").waitFor();
  }, 30_000);

  test("bulk subscribe / unsubscribe / delete report in their own terms", async () => {
    await page.goto("/#/contacts");
    await page.getByLabel("Sort by").selectOption("email");
    await page.getByLabel("Order").selectOption("asc");
    await page.getByRole("link", { name: email(0) }).waitFor();
    const bar = page.getByRole("region", { name: "Bulk actions" });
    const status = page.locator(".job");

    // c03 is unsubscribed, c04 already subscribed.
    await page.getByLabel(`Select ${email(3)}`, { exact: true }).check();
    await page.getByLabel(`Select ${email(4)}`, { exact: true }).check();
    await bar.getByRole("button", { name: "Subscribe", exact: true }).click();
    await status.getByText("2 of 2 contacts subscribed (1 already subscribed), 0 failed").waitFor();
    expect(await status.textContent()).not.toContain("created");
    await bar.waitFor({ state: "detached" }); // the selection is cleared once the job is done

    await page.getByLabel(`Select ${email(3)}`, { exact: true }).check();
    await bar.getByRole("button", { name: "Unsubscribe" }).click();
    await status.getByText("1 of 1 contact unsubscribed, 0 failed").waitFor();
    await bar.waitFor({ state: "detached" });

    // c02 disappears between the selection and the job: it is counted as failed.
    for (const i of [0, 1, 2]) await page.getByLabel(`Select ${email(i)}`, { exact: true }).check();
    const c02 = (await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [email(2)] } })).body.found[0];
    expect((await srv.api(`/contacts/${c02.id}`, { key: acc.secretKey, method: "DELETE" })).status).toBeLessThan(300);
    page.once("dialog", (d) => void d.accept());
    await bar.getByRole("button", { name: "Delete" }).click();
    await status.getByText("2 of 3 contacts deleted, 1 failed").waitFor();
    await status.getByText("1 error", { exact: true }).click();
    await status.getByText(`Contact ${c02.id}: Contact not found`).waitFor();
    expect(await status.textContent()).not.toContain("created");
    // Back on the first page with the new total.
    await page.getByRole("navigation", { name: "Pages" }).getByText("1–25 of 50 · page 1 of 2").waitFor();
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);

  test("workflow trigger switches between EVENT and MANUAL; a refusal shows the server's message", async () => {
    const wf = await srv.api("/workflows", { key: acc.secretKey, body: { name: "Trigger flow", triggerConfig: { eventName: "signup" } } });
    expect(wf.status).toBe(201);
    const id = wf.body.id ?? wf.body.data?.id;
    expect((await srv.api(`/workflows/${id}/steps`, { key: acc.secretKey, body: { type: "DELAY", config: { amount: 1, unit: "hours" } } })).status).toBe(201);
    const get = async () => (await srv.api(`/workflows/${id}`, { key: acc.secretKey })).body;

    await page.goto(`/#/workflows/${id}`);
    await page.getByRole("heading", { name: "Workflow: Trigger flow" }).waitFor();
    const form = page.getByRole("form", { name: "Trigger" });
    expect(await form.getByLabel("Trigger", { exact: true }).inputValue()).toBe("EVENT");
    expect(await form.getByLabel("Trigger event name").inputValue()).toBe("signup");

    await form.getByLabel("Trigger", { exact: true }).selectOption("MANUAL");
    expect(await form.getByLabel("Trigger event name").count()).toBe(0);
    await form.getByRole("button", { name: "Save trigger" }).click();
    await page.getByText("Trigger saved: manual").waitFor();
    expect(await get()).toMatchObject({ triggerType: "MANUAL", triggerConfig: {} });

    // Enabled MANUAL, then EVENT without a name: the server refuses (422) and says why.
    await page.getByRole("button", { name: "Enable" }).click();
    await page.getByText("Workflow enabled.").waitFor();
    await form.getByLabel("Trigger", { exact: true }).selectOption("EVENT");
    await form.getByLabel("Trigger event name").fill("");
    await form.getByRole("button", { name: "Save trigger" }).click();
    const alert = page.getByRole("alert").filter({ hasText: "unable to run" });
    await alert.waitFor();
    expect(await alert.textContent()).toContain("An EVENT workflow needs triggerConfig.eventName");
    expect(await get()).toMatchObject({ triggerType: "MANUAL", enabled: true });

    await form.getByLabel("Trigger event name").fill("signed_up");
    await form.getByRole("button", { name: "Save trigger" }).click();
    await page.getByText("Trigger saved: runs on the event signed_up.").waitFor();
    expect(await get()).toMatchObject({ triggerType: "EVENT", triggerConfig: { eventName: "signed_up" }, enabled: true });
    await page.getByText("When the event “signed_up” is tracked").waitFor();
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);
});

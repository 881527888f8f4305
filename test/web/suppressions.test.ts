// The Suppressions page and the double opt-in settings in a real browser: a bounced address is listed
// with its reason, reply and a link to its source email (the email view); an address is added by hand, found by search
// and by reason, lifted, and a CSV is imported; the project settings switch double opt-in on with a template, and a held contact shows as pending.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import { launchBrowser, newPage, pageErrors, screenshot } from "./browser";

setDefaultTimeout(60_000);

let env: DeliveryEnv;
let browser: Browser;
let page: Page;
let key: string;
let bouncedEmailId: string;

const list = async (q = "") => (await env.srv.api(`/suppressions?limit=100${q}`, { key })).body;

beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
  const to = `gone@${RCPT}`;
  env.sink.onRcpt = (rcpt) => (rcpt === to ? { code: 550, message: "5.1.1 No such mailbox here" } : undefined);
  const r = await env.srv.api("/v1/send", { key, body: { to, from: `hello@${SENDER}`, subject: "Your receipt", body: "<p>Hi</p>" } });
  bouncedEmailId = r.body.data.emails[0].email;
  await waitForView(env.srv, key, bouncedEmailId, "BOUNCED");
  env.sink.onRcpt = () => undefined;
  browser = await launchBrowser();
  page = await newPage(browser, env.srv.url, env.acct.cookie);
  page.on("dialog", (d) => void d.accept());
  await page.goto("/#/suppressions");
  await page.getByRole("heading", { name: "Suppressions" }).waitFor();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await env?.close();
});

describe("suppressions page", () => {
  test("a hard bounce is listed with its reason and reply; its source email opens", async () => {
    const row = page.getByRole("row", { name: /gone@rcpt\.test/ });
    await row.waitFor();
    expect(await row.textContent()).toContain("Hard bounce");
    expect(await row.textContent()).toContain("No such mailbox here");
    await row.getByRole("link", { name: "View source email" }).click();
    await page.waitForURL(new RegExp(`#/emails/${bouncedEmailId}$`));
    await page.getByRole("heading", { name: "Your receipt" }).waitFor();
    const facts = page.locator("dl.facts");
    await facts.getByText("BOUNCED").waitFor();
    expect(await facts.textContent()).toContain("No such mailbox here");
    await page.goBack();
    await page.getByRole("heading", { name: "Suppressions" }).waitFor();
  });

  test("add by hand, search, filter by reason, lift", async () => {
    await page.getByLabel("Email address").fill("Manual@Block.test");
    await page.getByLabel("Note (optional)").fill("asked by phone");
    await page.getByRole("button", { name: "Suppress", exact: true }).click();
    await page.getByText("manual@block.test is suppressed.").waitFor();
    expect((await list("&email=block.test")).data).toMatchObject([{ email: "manual@block.test", reason: "MANUAL", detail: "asked by phone", source: { type: "API" } }]);
    await page.getByRole("row", { name: /manual@block\.test/ }).waitFor();

    await page.getByLabel("Reason").selectOption("HARD_BOUNCE");
    await page.getByRole("row", { name: /manual@block\.test/ }).waitFor({ state: "detached" });
    await page.getByRole("row", { name: /gone@rcpt\.test/ }).waitFor();
    await page.getByLabel("Reason").selectOption("");
    await page.getByLabel("Search addresses").fill("block");
    await page.getByRole("button", { name: "Search" }).click();
    await page.getByRole("row", { name: /gone@rcpt\.test/ }).waitFor({ state: "detached" });
    await page.getByRole("row", { name: /manual@block\.test/ }).waitFor();
    await screenshot(page, "suppressions");

    await page.getByRole("button", { name: "Lift suppression of manual@block.test" }).click();
    await page.getByText("manual@block.test is no longer suppressed.").waitFor();
    await page.getByRole("row", { name: /manual@block\.test/ }).waitFor({ state: "detached" });
    expect((await list("&email=block.test")).total).toBe(0);
  });

  test("CSV import reports what it did and lists the addresses", async () => {
    await page.getByLabel("Search addresses").fill("");
    await page.getByRole("button", { name: "Search" }).click();
    await page.locator("#suppressions-csv").setInputFiles({ name: "list.csv", mimeType: "text/csv", buffer: Buffer.from("email\none@csv.test\ntwo@csv.test\nnope\n") });
    await page.getByText("CSV import: 2 suppressed, 0 already on the list, 1 rows failed (row 4: Invalid email).").waitFor();
    await page.getByRole("row", { name: /two@csv\.test/ }).waitFor();
    expect((await list("&email=csv.test")).data.map((s: any) => [s.email, s.source.type])).toEqual([
      ["two@csv.test", "IMPORT"],
      ["one@csv.test", "IMPORT"],
    ]);
  });

  test("settings: double opt-in switched on with a template and a redirect", async () => {
    const tpl = await env.srv.api("/templates", { key, body: { name: "Confirm please", subject: "Confirm", body: `<a href="{{confirmUrl}}">Confirm</a>`, from: `news@${SENDER}` } });
    expect(tpl.status).toBe(201);
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("heading", { name: "Double opt-in" }).waitFor();
    await page.getByLabel("Require confirmation of public subscribes").check();
    await page.getByLabel("Confirmation email template").selectOption({ label: "Confirm please" });
    await page.getByLabel("After confirming, redirect to (optional)").fill("https://example.com/welcome");
    await page.getByRole("button", { name: "Save double opt-in" }).click();
    await page.getByText("Double opt-in saved.").waitFor();
    const projects = (await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie })).body;
    expect(projects[0].doubleOptIn).toEqual({ enabled: true, templateId: tpl.body.id, redirectUrl: "https://example.com/welcome" });
    // A public subscribe now waits for its link: the contacts list says so.
    expect((await env.srv.api("/v1/track", { key: env.acct.publicKey, body: { email: `newbie@${RCPT}`, event: "signup", subscribed: true } })).status).toBe(200);
    await page.getByRole("link", { name: "Contacts" }).click();
    const row = page.getByRole("row", { name: /newbie@rcpt\.test/ });
    await row.waitFor();
    expect(await row.textContent()).toContain("pending confirmation");
    expect(pageErrors(page)).toEqual([]);
  });
});

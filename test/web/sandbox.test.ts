// The sandbox in a real browser: a captured email in the email view (the HTML in a sandboxed iframe,
// text, headers, attachments, DKIM result), its pixel, tracked link and unsubscribe link working
// against this server, and the one switch in project settings that turns the sandbox off.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { RCPT, waitForView } from "../send/support";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import { waitFor } from "../support/wait";
import { addUnverifiedDomain, setSandbox } from "../sandbox/support";
import { launchBrowser, newPage, pageErrors, screenshot } from "./browser";

let env: DeliveryEnv;
let browser: Browser;
let page: Page;
let emailId: string;

beforeAll(async () => {
  env = await deliveryEnv({ mailDomain: RCPT, config: { hostname: "mta.mailsvc.test" } });
  expect((await fetch(env.srv.url + "/")).status).toBe(200); // builds the bundle when running from source
  await setSandbox(env.srv.api, env.acct, true);
  expect((await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { tracking: "ENABLED" } })).status).toBe(200);
  await addUnverifiedDomain(env.srv.api, env.acct, "demo.test");
  const r = await env.srv.api("/v1/send", {
    key: env.acct.secretKey,
    body: {
      to: `ann@${RCPT}`,
      subscribed: true,
      from: { name: "Demo Shop", email: "shop@demo.test" },
      subject: "Your receipt",
      body: `<p>Hello Ann, thanks for your order.</p><p><a href="${env.srv.url}/config">See the offer</a></p><p><a href="{{unsubscribeUrl}}">Unsubscribe</a></p>`,
      attachments: [{ filename: "receipt.txt", content: Buffer.from("Order 42: paid").toString("base64") }],
    },
  });
  expect(r.status).toBe(200);
  emailId = r.body.data.emails[0].email;
  await waitForView(env.srv, env.acct.secretKey, emailId, "DELIVERED");
  browser = await launchBrowser();
  page = await newPage(browser, env.srv.url, env.acct.cookie);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await env?.close();
});

const status = async () => (await env.srv.api(`/emails/${emailId}`, { key: env.acct.secretKey })).body;

describe("a captured email in the dashboard", () => {
  test("the emails log marks it sandbox; its view shows the capture, DKIM, the rendered HTML (pixel loads: OPENED), text, headers, attachments", async () => {
    await page.goto("/#/emails");
    await page.getByText("Sandbox: this project's mail is captured, never sent").waitFor();
    const row = page.getByRole("row", { name: /Your receipt/ });
    await row.getByText("sandbox", { exact: true }).waitFor();
    await row.getByRole("link", { name: "Your receipt" }).click();
    await page.getByRole("heading", { name: "Email: Your receipt" }).waitFor();
    await page.getByText("Captured by the sandbox: this message was built, signed and tracked exactly as for real").waitFor();
    const dkim = page.getByRole("list", { name: "DKIM" });
    await dkim.getByText("DKIM pass").waitFor();
    expect(await dkim.innerText()).toContain("d=demo.test");
    expect(await dkim.innerText()).toContain("the domain is not verified in DNS yet");

    const frame = page.frameLocator('iframe[title="Email HTML"]');
    await frame.getByText("Hello Ann, thanks for your order.").waitFor();
    expect(await page.locator('iframe[title="Email HTML"]').getAttribute("sandbox")).toBe("allow-popups allow-popups-to-escape-sandbox");
    // The open pixel is live: rendering the message here is a reader opening it.
    await waitFor(status, { until: (v) => v.status === "OPENED", what: "the email OPENED by its pixel" });

    await page.getByRole("tab", { name: "Text" }).click();
    expect(await page.getByLabel("Text part").innerText()).toContain("Hello Ann, thanks for your order.");
    await page.getByRole("tab", { name: "Headers" }).click();
    const headers = page.getByRole("table", { name: "Headers" });
    await headers.getByRole("rowheader", { name: "DKIM-Signature" }).waitFor();
    expect(await headers.getByRole("row", { name: /^Message-ID/ }).innerText()).toContain(`<${emailId}@mta.mailsvc.test>`);
    expect(await page.getByRole("list", { name: "Attachments" }).innerText()).toContain("receipt.txt · text/plain · 14 B");
    await page.getByRole("tab", { name: "HTML" }).click();
    await screenshot(page, "sandbox-email");
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);

  test("its tracked link and its unsubscribe link work against the local server", async () => {
    const frame = page.frameLocator('iframe[title="Email HTML"]');
    const [offer] = await Promise.all([page.context().waitForEvent("page"), frame.getByRole("link", { name: "See the offer" }).click()]);
    await offer.waitForURL(`${env.srv.url}/config`);
    await offer.close();
    const clicked = await waitFor(status, { until: (v) => v.status === "CLICKED", what: "the email CLICKED" });
    expect(typeof clicked.clickedAt).toBe("string");

    const [unsub] = await Promise.all([page.context().waitForEvent("page"), frame.getByRole("link", { name: "Unsubscribe" }).click()]);
    await unsub.getByRole("heading", { name: "Unsubscribe" }).waitFor();
    await unsub.getByRole("button", { name: "Unsubscribe" }).click();
    await unsub.getByRole("heading", { name: "You are unsubscribed" }).waitFor();
    await unsub.close();
    const contact = await env.srv.api(`/contacts/${clicked.contactId}`, { key: env.acct.secretKey });
    expect(contact.body.subscribed).toBe(false);
  }, 30_000);
});

describe("project settings", () => {
  test("say what turning the sandbox off changes, and one switch turns it off", async () => {
    await page.goto("/#/settings");
    const section = page.getByRole("region", { name: "Sandbox" });
    await section.getByText("The sandbox is on.").waitFor();
    await section.getByText("Turning it off: from then on every email is really sent, sending from a domain that is not verified answers 403").waitFor();
    await section.getByText("No sender domain is verified yet").waitFor();
    await section.getByRole("button", { name: "Turn the sandbox off" }).click();
    await section.getByText("The sandbox is off.").waitFor();
    await page.getByText("Sandbox: this project's mail is captured, never sent").waitFor({ state: "detached" });
    const list = await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie });
    expect(list.body.find((p: { id: string }) => p.id === env.acct.projectId).sandbox).toBe(false);
    expect(pageErrors(page)).toEqual([]);
  }, 30_000);

  test("the new-project form offers a sandbox", async () => {
    await page.goto("/#/projects/new");
    await page.getByLabel("Project name").fill("Playground");
    await page.getByLabel("Sandbox: try everything without DNS").check();
    await page.getByRole("button", { name: "Create project" }).click();
    // A new project opens on Overview; its settings say the sandbox is on.
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    const list = await env.srv.api("/users/@me/projects", { cookie: env.acct.cookie });
    const created = list.body.find((p: { name: string }) => p.name === "Playground");
    await page.goto("/#/settings"); // the new project is the current one
    await page.getByRole("heading", { name: "Project settings" }).waitFor();
    await page.getByRole("region", { name: "Sandbox" }).getByText("The sandbox is on.").waitFor();
    expect(created.sandbox).toBe(true);
  }, 30_000);
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decorateMessage, subscriptionUrls } from "../../src/mail/tracking/tracking";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { contactRow, eventsOf, insertContact, insertEmail } from "./support";

/** What a browser would submit: the first form's method, target and successful controls. */
function readForm(html: string, pageUrl: string, choose?: Record<string, string>) {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/i.exec(html);
  if (!form) throw new Error("no form on the page");
  const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`, "i").exec(tag)?.[1];
  const method = (attr(form[1]!, "method") ?? "get").toUpperCase();
  const action = attr(form[1]!, "action");
  const fields = new URLSearchParams();
  for (const m of form[2]!.matchAll(/<input\b[^>]*>/gi)) {
    const tag = m[0];
    const name = attr(tag, "name");
    if (!name) continue;
    const type = (attr(tag, "type") ?? "text").toLowerCase();
    const value = attr(tag, "value") ?? "";
    if (type === "radio" || type === "checkbox") {
      const checked = choose?.[name] !== undefined ? choose[name] === value : /\bchecked\b/i.test(tag);
      if (checked) fields.append(name, value);
    } else fields.append(name, value);
  }
  return { method, url: action ? new URL(action, pageUrl).toString() : pageUrl, fields };
}

async function submit(pageUrl: string, choose?: Record<string, string>) {
  const page = await fetch(pageUrl);
  expect(page.status).toBe(200);
  expect(page.headers.get("content-type")).toContain("text/html");
  const html = await page.text();
  const f = readForm(html, pageUrl, choose);
  expect(f.method).toBe("POST");
  const res = await fetch(f.url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: f.fields.toString() });
  return { status: res.status, html: await res.text(), before: html };
}

describe("subscription pages over plain HTTP", () => {
  let srv: TestServer;
  let acct: Account;

  beforeAll(async () => {
    srv = await startServer();
    acct = await createAccount(srv.api, "Acme Weekly");
  });
  afterAll(() => srv.close());

  const urlsFor = (contactId: string | null, email: string) => subscriptionUrls(srv.ctx, acct.projectId, contactId, email);

  test("unsubscribe page: GET shows a confirm form (no change yet), submitting it unsubscribes and records the event", async () => {
    const id = await insertContact(srv, acct.projectId, "page-unsub@example.org");
    const { unsubscribeUrl } = urlsFor(id, "page-unsub@example.org");
    const r = await submit(unsubscribeUrl);
    expect(r.before).toContain("Acme Weekly");
    expect(r.before).toContain('lang="en"');
    expect(r.before).not.toMatch(/<(link|script)\b|src="http/i); // no external assets
    expect(r.status).toBe(200);
    expect(r.html).toContain("You are unsubscribed");
    expect((await contactRow(srv, id)).subscribed).toBe(0);
    const evs = await eventsOf(srv, id);
    expect(evs.map((e) => e.name)).toEqual(["contact.unsubscribed"]);
    // A second visit says so and offers to subscribe again; a repeated POST records nothing new.
    const again = await (await fetch(unsubscribeUrl)).text();
    expect(again).toContain("You are unsubscribed");
    await fetch(unsubscribeUrl, { method: "POST" });
    expect((await eventsOf(srv, id)).length).toBe(1);
  });

  test("GET never changes anything (link scanners prefetch)", async () => {
    const id = await insertContact(srv, acct.projectId, "scanner@example.org");
    const u = urlsFor(id, "scanner@example.org");
    for (const url of [u.unsubscribeUrl, u.manageUrl, u.subscribeUrl]) expect((await fetch(url)).status).toBe(200);
    expect((await contactRow(srv, id)).subscribed).toBe(1);
  });

  test("RFC 8058 one-click POST to the List-Unsubscribe URL unsubscribes at once", async () => {
    const id = await insertContact(srv, acct.projectId, "oneclick@example.org");
    const emailId = await insertEmail(srv, { projectId: acct.projectId, contactId: id, to: "oneclick@example.org", type: "MARKETING" });
    const d = await decorateMessage(srv.ctx, { projectId: acct.projectId, emailId, contactId: id, toEmail: "oneclick@example.org", type: "MARKETING", html: "<p>x</p>", bodyUsesUnsubscribeUrl: false });
    const httpsTarget = /<(https?:[^>]+)>/.exec(d.headers["List-Unsubscribe"]!)![1]!;
    const res = await fetch(httpsTarget, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
    });
    expect(res.status).toBe(200);
    expect((await contactRow(srv, id)).subscribed).toBe(0);
    const evs = await eventsOf(srv, id);
    expect(evs).toHaveLength(1);
    expect(evs[0]!.name).toBe("contact.unsubscribed");
    expect(evs[0]!.data.source).toBe("one-click");
  });

  test("one-click works with multipart bodies and with no content type at all", async () => {
    for (const [email, init] of [
      ["mp@example.org", () => { const fd = new FormData(); fd.set("List-Unsubscribe", "One-Click"); return { body: fd }; }],
      ["bare@example.org", () => ({ body: "List-Unsubscribe=One-Click" })], // no Content-Type at all
    ] as const) {
      const id = await insertContact(srv, acct.projectId, email);
      const init2 = init() as RequestInit;
      const res = await fetch(urlsFor(id, email).unsubscribeUrl, { method: "POST", ...init2 });
      expect(res.status).toBe(200);
      expect((await contactRow(srv, id)).subscribed).toBe(0);
    }
  });

  test("subscribe page: submitting its form subscribes and records contact.subscribed", async () => {
    const id = await insertContact(srv, acct.projectId, "page-sub@example.org", false);
    const r = await submit(urlsFor(id, "page-sub@example.org").subscribeUrl);
    expect(r.status).toBe(200);
    expect(r.html).toContain("You are subscribed");
    expect((await contactRow(srv, id)).subscribed).toBe(1);
    expect((await eventsOf(srv, id)).map((e) => e.name)).toEqual(["contact.subscribed"]);
  });

  test("manage page toggles both ways and shows the current state", async () => {
    const id = await insertContact(srv, acct.projectId, "page-manage@example.org");
    const { manageUrl } = urlsFor(id, "page-manage@example.org");
    let r = await submit(manageUrl, { subscribed: "false" });
    expect(r.status).toBe(200);
    expect(r.html).toContain("preferences were saved");
    expect((await contactRow(srv, id)).subscribed).toBe(0);
    expect(r.html).toMatch(/value="false" checked/);

    r = await submit(manageUrl, { subscribed: "true" });
    expect((await contactRow(srv, id)).subscribed).toBe(1);
    expect((await eventsOf(srv, id)).map((e) => e.name)).toEqual(["contact.unsubscribed", "contact.subscribed"]);

    const bad = await fetch(manageUrl, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "subscribed=maybe" });
    expect(bad.status).toBe(400);
  });

  test("a tampered or foreign link is a 404 page and changes nothing", async () => {
    const id = await insertContact(srv, acct.projectId, "tampered@example.org");
    const { unsubscribeUrl } = urlsFor(id, "tampered@example.org");
    const token = unsubscribeUrl.slice(unsubscribeUrl.lastIndexOf("/") + 1);
    const [, sig] = token.split(".");
    const otherId = await insertContact(srv, acct.projectId, "victim@example.org");
    const victimUrl = urlsFor(otherId, "victim@example.org").unsubscribeUrl;
    const [victimBody] = victimUrl.slice(victimUrl.lastIndexOf("/") + 1).split(".");
    const forged = `${victimBody}.${sig}`; // the victim's payload under another link's signature
    for (const p of ["unsubscribe", "subscribe", "manage"]) {
      const g = await srv.api(`/${p}/${forged}`);
      expect(g.status).toBe(404);
      expect(g.headers.get("content-type")).toContain("text/html");
      const post = await fetch(`${srv.url}/${p}/${forged}`, { method: "POST", body: "List-Unsubscribe=One-Click&subscribed=false" });
      expect(post.status).toBe(404);
    }
    expect((await contactRow(srv, otherId)).subscribed).toBe(1);
    expect((await contactRow(srv, id)).subscribed).toBe(1);
  });

  test("links for an address that is not a contact say so instead of failing", async () => {
    const { unsubscribeUrl } = urlsFor(null, "stranger@example.org");
    const g = await fetch(unsubscribeUrl);
    expect(g.status).toBe(200);
    expect(await g.text()).toContain("not on the mailing list");
    expect((await fetch(unsubscribeUrl, { method: "POST", body: "List-Unsubscribe=One-Click" })).status).toBe(200);
  });
});

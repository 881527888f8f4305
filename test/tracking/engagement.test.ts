import { createHmac, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decorateMessage } from "../../src/mail/tracking";
import { campaignEngagement } from "../../src/modules/tracking/engagement";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { emailRow, eventsOf, hrefs, imgSrcs, insertContact, insertEmail } from "./fixtures";

describe("opens and clicks over HTTP", () => {
  let srv: TestServer;
  let acct: Account;

  beforeAll(async () => {
    srv = await startServer();
    acct = await createAccount(srv.api);
  });
  afterAll(() => srv.close());

  const path = (url: string) => url.slice(srv.ctx.config.publicUrl.length);
  const html = `<html><body><p>Sale</p><a href="https://shop.example.com/sale?a=1&amp;b=2">Shop</a><a href="https://blog.example.com/">Blog</a></body></html>`;

  async function deliveredMarketing(email: string, extra: { status?: string; campaignId?: string } = {}) {
    const contactId = await insertContact(srv, acct.projectId, email);
    const emailId = await insertEmail(srv, { projectId: acct.projectId, contactId, to: email, type: "MARKETING", ...extra });
    const d = await decorateMessage(srv.ctx, { projectId: acct.projectId, emailId, contactId, toEmail: email, type: "MARKETING", html, bodyUsesUnsubscribeUrl: false });
    const tracked = hrefs(d.html).filter((h) => h.includes("/t/c/"));
    const pixel = imgSrcs(d.html).find((s) => s.includes("/t/o/"))!;
    return { contactId, emailId, tracked, pixel };
  }

  test("pixel then link: OPENED then CLICKED, events recorded with the link, redirect to the original URL", async () => {
    const m = await deliveredMarketing("open-click@example.org");
    expect(m.tracked.length).toBe(2);

    const px = await fetch(srv.url + path(m.pixel));
    expect(px.status).toBe(200);
    expect(px.headers.get("content-type")).toBe("image/gif");
    expect(px.headers.get("cache-control")).toContain("no-store");
    expect((await px.arrayBuffer()).byteLength).toBeGreaterThan(0);
    let row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("OPENED");
    expect(row.opened_at).not.toBeNull();

    const click = await srv.api(path(m.tracked[0]!));
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.example.com/sale?a=1&b=2");
    row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("CLICKED");
    expect(row.clicked_at).not.toBeNull();

    const evs = await eventsOf(srv, m.contactId);
    expect(evs.map((e) => e.name)).toEqual(["email.open", "email.click"]);
    expect(evs[0]!.data.emailId).toBe(m.emailId);
    expect(evs[1]!.data.link).toBe("https://shop.example.com/sale?a=1&b=2");
    expect(evs[1]!.email_id).toBe(m.emailId);

    // What a user sees through the API.
    const api = await srv.api(`/events/contact/${m.contactId}`, { key: acct.secretKey });
    expect(api.status).toBe(200);
    const names = api.body.data.map((e: any) => e.name).sort();
    expect(names).toEqual(["email.click", "email.open"]);
    expect(api.body.data.find((e: any) => e.name === "email.click").data.link).toBe("https://shop.example.com/sale?a=1&b=2");
  });

  test("repeats: one open event; one click event per distinct link; the status never goes back", async () => {
    const m = await deliveredMarketing("repeat@example.org");
    await srv.api(path(m.tracked[0]!));
    await srv.api(path(m.tracked[0]!));
    await srv.api(path(m.pixel));
    await srv.api(path(m.pixel));
    await srv.api(path(m.tracked[1]!));
    const row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("CLICKED");
    expect(row.opened_at).not.toBeNull(); // a click without the pixel still counts as opened
    const names = (await eventsOf(srv, m.contactId)).map((e) => `${e.name} ${e.data.link ?? ""}`.trim());
    expect(names).toEqual(["email.click https://shop.example.com/sale?a=1&b=2", "email.click https://blog.example.com/"]);
  });

  test("BOUNCED and COMPLAINED win over opens and clicks", async () => {
    const m = await deliveredMarketing("bounced@example.org", { status: "BOUNCED" });
    expect((await srv.api(path(m.pixel))).status).toBe(200);
    expect((await srv.api(path(m.tracked[0]!))).status).toBe(302);
    const row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("BOUNCED");
  });

  test("a tampered or foreign token is 404, never a redirect", async () => {
    const m = await deliveredMarketing("tamper@example.org");
    const p = path(m.tracked[0]!);
    const token = p.slice("/t/c/".length);
    const [body, sig] = token.split(".");
    // Payload pointing elsewhere, old signature.
    const evil = Buffer.from(JSON.stringify(["c", m.emailId, "https://evil.example.com/"])).toString("base64url");
    for (const bad of [`${evil}.${sig}`, `${body}.${sig!.slice(0, -2)}AA`, `${body}`, "garbage", `${body}.${sig}x`]) {
      const r = await srv.api(`/t/c/${bad}`);
      expect(r.status).toBe(404);
      expect(r.headers.get("location")).toBeNull();
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
    expect((await srv.api(`/t/o/${evil}.${sig}`)).status).toBe(404);
    // A valid open token is not a click token.
    expect((await srv.api(`/t/c/${path(m.pixel).slice("/t/o/".length)}`)).status).toBe(404);

    // Signed by another installation (same format, its own secret): 404 here.
    const foreignSig = createHmac("sha256", randomBytes(32)).update(body!).digest().subarray(0, 16).toString("base64url");
    expect((await srv.api(`/t/c/${body}.${foreignSig}`)).status).toBe(404);
    expect((await emailRow(srv, m.emailId)).clicked_at).toBeNull(); // nothing recorded by bad tokens
    expect((await srv.api(`/t/c/${body}.${sig}`)).status).toBe(302); // the genuine one still works
  });

  test("campaign engagement counts come from the email rows", async () => {
    const campaignId = Bun.randomUUIDv7();
    const a = await deliveredMarketing("c1@example.org", { campaignId });
    const b = await deliveredMarketing("c2@example.org", { campaignId });
    await deliveredMarketing("c3@example.org", { campaignId, status: "BOUNCED" });
    await srv.api(path(a.pixel));
    await srv.api(path(b.tracked[1]!));
    const c = await campaignEngagement(srv.ctx, acct.projectId, campaignId);
    expect(c).toMatchObject({ total: 3, opened: 2, clicked: 1, bounced: 1 });
  });
});

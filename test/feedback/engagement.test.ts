import { createHmac, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decorateMessage } from "../../src/mail/tracking/tracking";
import { campaignEngagement } from "../../src/modules/feedback/engagement";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { expectTimeBetween } from "../support/time";
import { emailRow, eventsOf, hrefs, imgSrcs, insertContact, insertEmail } from "./support";

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

    const openedFrom = srv.clock.now();
    const px = await fetch(srv.url + path(m.pixel));
    expect(px.status).toBe(200);
    expect(px.headers.get("content-type")).toBe("image/gif");
    expect(px.headers.get("cache-control")).toContain("no-store");
    expect((await px.arrayBuffer()).byteLength).toBeGreaterThan(0);
    let row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("OPENED");
    const openedAt = expectTimeBetween(row.opened_at, openedFrom, srv.clock.now());
    expect(row.clicked_at).toBeNull();

    const clickedFrom = srv.clock.now();
    const click = await srv.api(path(m.tracked[0]!));
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.example.com/sale?a=1&b=2");
    row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("CLICKED");
    expectTimeBetween(row.clicked_at, clickedFrom, srv.clock.now());
    expect(row.opened_at).toBe(openedAt);

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
    const firstClick = srv.clock.now();
    await srv.api(path(m.tracked[0]!));
    await srv.api(path(m.tracked[0]!));
    await srv.api(path(m.pixel));
    await srv.api(path(m.pixel));
    await srv.api(path(m.tracked[1]!));
    const row = await emailRow(srv, m.emailId);
    expect(row.status).toBe("CLICKED");
    // A click without the pixel still counts as opened: at the first click, which the later pixel does not move.
    const clickedAt = expectTimeBetween(row.clicked_at, firstClick, srv.clock.now());
    expect(row.opened_at).toBe(clickedAt);
    const events = await eventsOf(srv, m.contactId);
    const names = events.map((e) => `${e.name} ${e.data.link ?? ""}`.trim());
    // The first click is the open (pixel blocked): its email.open is recorded with it, once.
    expect(names.sort()).toEqual(["email.click https://blog.example.com/", "email.click https://shop.example.com/sale?a=1&b=2", "email.open"]);
    expect(events.find((e) => e.name === "email.open")!.data).toMatchObject({ emailId: m.emailId, via: "click" });
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
    // <signed email part: body.sig>.<link key>
    const [body, sig, key] = token.split(".");
    const flip = (b64: string) => {
      const bytes = Buffer.from(b64, "base64url");
      bytes[bytes.length - 1] ^= 1;
      return bytes.toString("base64url");
    };
    // The same link key under the email of another project (that project never stored this link).
    const other = await createAccount(srv.api, "Other");
    const otherContact = await insertContact(srv, other.projectId, "o@example.org");
    const otherEmail = await insertEmail(srv, { projectId: other.projectId, contactId: otherContact, to: "o@example.org" });
    const od = await decorateMessage(srv.ctx, { projectId: other.projectId, emailId: otherEmail, contactId: otherContact, toEmail: "o@example.org", type: "MARKETING", html: `<a href="https://elsewhere.example/">x</a>`, bodyUsesUnsubscribeUrl: false });
    const [oBody, oSig] = path(hrefs(od.html)[0]!).slice("/t/c/".length).split(".");
    // Signed by another installation (same format, its own secret).
    const foreignSig = createHmac("sha256", randomBytes(32)).update(body!).digest().subarray(0, 12).toString("base64url");
    for (const bad of [
      `${body}.${sig}.${flip(key!)}`, // altered link key
      `${body}.${sig}.AAAAAAAAAAA`, // unknown link key
      `${flip(body!)}.${sig}.${key}`, // altered email part
      `${body}.${sig!.slice(0, -2)}AA.${key}`, // altered signature
      `${body}.${foreignSig}.${key}`,
      `${oBody}.${oSig}.${key}`, // foreign link key for that email
      `${body}.${sig}`,
      `${body}.${sig}.${key}x`,
      "garbage",
    ]) {
      const r = await srv.api(`/t/c/${bad}`);
      expect(r.status).toBe(404);
      expect(r.headers.get("location")).toBeNull();
      expect(r.body.error.code).toBe("NOT_FOUND");
    }
    const [pxBody, pxSig] = path(m.pixel).slice("/t/o/".length).split(".");
    expect((await srv.api(`/t/o/${flip(pxBody!)}.${pxSig}`)).status).toBe(404);
    // A valid open token is not a click token (and the reverse).
    expect((await srv.api(`/t/c/${pxBody}.${pxSig}.${key}`)).status).toBe(404);
    expect((await srv.api(`/t/o/${body}.${sig}`)).status).toBe(404);
    expect((await emailRow(srv, m.emailId)).clicked_at).toBeNull(); // nothing recorded by bad tokens
    expect((await srv.api(`/t/c/${token}`)).status).toBe(302); // the genuine one still works
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

describe("tracked links survive a restart", () => {
  test("a link decorated before the restart redirects after it (links and the token secret are in the database)", async () => {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-restart-"));
    const dbPath = join(dir, "t.db");
    let srv = await startServer({ dbPath });
    const acct = await createAccount(srv.api);
    const contactId = await insertContact(srv, acct.projectId, "later@example.org");
    const emailId = await insertEmail(srv, { projectId: acct.projectId, contactId, to: "later@example.org" });
    const d = await decorateMessage(srv.ctx, { projectId: acct.projectId, emailId, contactId, toEmail: "later@example.org", type: "MARKETING", html: `<a href="https://docs.example.com/start">Start</a>`, bodyUsesUnsubscribeUrl: false });
    const link = hrefs(d.html)[0]!.slice(srv.ctx.config.publicUrl.length);
    await srv.close();
    srv = await startServer({ dbPath });
    try {
      const r = await srv.api(link);
      expect(r.status).toBe(302);
      expect(r.headers.get("location")).toBe("https://docs.example.com/start");
      expect((await emailRow(srv, emailId)).status).toBe("CLICKED");
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

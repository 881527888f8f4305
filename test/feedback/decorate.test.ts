import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { decodeEntities, decorateHtml, decorateMessage, subscriptionUrls, usesUnsubscribeUrl } from "../../src/mail/tracking/tracking";
import { createAccount, freeTcpPort, startServer, type Account, type TestServer } from "../support/server";
import { hrefs, imgSrcs, insertContact, insertEmail } from "./support";

describe("decorateHtml (pure)", () => {
  const track = (u: string) => `https://t.example/c/${encodeURIComponent(u)}`;

  test("rewrites absolute http(s) links and leaves mailto:, tel:, anchors, relative and marked links alone", () => {
    const html =
      `<html><body>` +
      `<a href="https://shop.example.com/a?x=1&amp;y=2">shop</a>` +
      `<a href="http://plain.example.com">plain</a>` +
      `<a href="mailto:help@example.com">mail</a>` +
      `<a href="tel:+3312345">call</a>` +
      `<a href="#top">top</a>` +
      `<a href="/relative">rel</a>` +
      `<a href="https://kept.example.com" data-no-track>kept</a>` +
      `<a href="https://svc.example/unsubscribe/tok">unsub</a>` +
      `<!-- <a href="https://commented.example.com">x</a> -->` +
      `</body></html>`;
    const out = decorateHtml(html, { trackUrl: track, skipPrefixes: ["https://svc.example/unsubscribe/"] });
    const links = hrefs(out);
    expect(links[0]).toBe(track("https://shop.example.com/a?x=1&y=2"));
    expect(links[1]).toBe(track("http://plain.example.com"));
    expect(links.slice(2, 8)).toEqual([
      "mailto:help@example.com",
      "tel:+3312345",
      "#top",
      "/relative",
      "https://kept.example.com",
      "https://svc.example/unsubscribe/tok",
    ]);
    expect(out).toContain(`<!-- <a href="https://commented.example.com">x</a> -->`);
  });

  test("puts footer then pixel at the end of <body>, or of the document when there is no body", () => {
    const withBody = decorateHtml("<html><body><p>Hi</p></body></html>", { footer: "<div>FOOT</div>", pixelUrl: "https://t.example/o/1" });
    expect(withBody).toMatch(/<p>Hi<\/p><div>FOOT<\/div><img src="https:\/\/t\.example\/o\/1"[^>]*><\/body><\/html>$/);
    const fragment = decorateHtml("<p>Hi</p>", { pixelUrl: "https://t.example/o/2" });
    expect(fragment).toMatch(/^<p>Hi<\/p><img src="https:\/\/t\.example\/o\/2"[^>]*>$/);
  });

  test("nothing to add returns the body untouched", () => {
    const html = `<p><a href="https://x.example">x</a></p>`;
    expect(decorateHtml(html, {})).toBe(html);
  });

  test("usesUnsubscribeUrl spots the variable in its spellings", () => {
    for (const src of ['<a href="{{unsubscribeUrl}}">x</a>', "{{ unsubscribeUrl }}", "{{{unsubscribeUrl}}}", '{{unsubscribeUrl ?? "#"}}']) expect(usesUnsubscribeUrl(src)).toBe(true);
    for (const src of ["{{unsubscribeUrlx}}", "unsubscribeUrl", "{{manageUrl}}", "{{ data.unsubscribeUrl }}"]) expect(usesUnsubscribeUrl(src)).toBe(false);
  });

  test("decodes the entities an href can carry", () => {
    expect(decodeEntities("a&amp;b&#38;c&#x26;d&quot;&bogus;")).toBe('a&b&c&d"&bogus;');
    expect(decodeEntities("?q=1&amp;r=2&amp;s")).toBe("?q=1&r=2&s");
    expect(decodeEntities("&amp;lt;")).toBe("&lt;"); // decoded once, not twice
  });
});

describe("decorateMessage", () => {
  let srv: TestServer;
  let acct: Account;
  let contactId: string;

  beforeAll(async () => {
    // Inbound SMTP on: the List-Unsubscribe mailto address reaches this server (through the bounce domain's MX).
    srv = await startServer({ config: { inboundSmtpPort: await freeTcpPort() } });
    acct = await createAccount(srv.api);
    contactId = await insertContact(srv, acct.projectId, "reader@example.org");
  });
  afterAll(() => srv.close());

  const body = `<html><body><p>News</p><a href="https://blog.example.com/post">Read</a></body></html>`;
  async function decorate(type: "MARKETING" | "HEADLESS" | "TRANSACTIONAL", opts: { usesUnsub?: boolean; html?: string; contact?: string | null } = {}) {
    const cid = opts.contact === undefined ? contactId : opts.contact;
    const emailId = await insertEmail(srv, { projectId: acct.projectId, contactId: cid, to: "reader@example.org", type, from: "news@brand.example" });
    return decorateMessage(srv.ctx, {
      projectId: acct.projectId,
      emailId,
      contactId: cid,
      toEmail: "reader@example.org",
      type,
      html: opts.html ?? body,
      bodyUsesUnsubscribeUrl: !!opts.usesUnsub,
    });
  }
  const base = () => srv.ctx.config.publicUrl;
  const setTracking = (tracking: string) =>
    srv.api(`/users/@me/projects/${acct.projectId}`, { method: "PATCH", cookie: acct.cookie, body: { tracking } });

  test("MARKETING: List-Unsubscribe (URL + mailto on the bounce domain), one-click header, footer, pixel, tracked links", async () => {
    const d = await decorate("MARKETING");
    expect(d.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    const lu = d.headers["List-Unsubscribe"]!;
    expect(lu).toMatch(new RegExp(`^<${base().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/unsubscribe/[^>]+>, <mailto:unsubscribe\\+[0-9a-f-]{36}-[0-9a-f]{10}@bounces\\.brand\\.example\\?subject=unsubscribe>$`));
    // Without the inbound listener nobody would receive that address: the header offers the URL alone.
    const port = srv.ctx.config.inboundSmtpPort;
    (srv.ctx.config as { inboundSmtpPort: number }).inboundSmtpPort = 0;
    try {
      expect((await decorate("MARKETING")).headers["List-Unsubscribe"]).toMatch(/^<https?:\/\/[^>]+\/unsubscribe\/[^>]+>$/);
    } finally {
      (srv.ctx.config as { inboundSmtpPort: number }).inboundSmtpPort = port;
    }
    const links = hrefs(d.html);
    expect(links[0]!.startsWith(`${base()}/t/c/`)).toBe(true);
    expect(links.some((l) => l.startsWith(`${base()}/unsubscribe/`))).toBe(true);
    expect(links.some((l) => l.startsWith(`${base()}/manage/`))).toBe(true);
    expect(imgSrcs(d.html).some((s) => s.startsWith(`${base()}/t/o/`))).toBe(true);
  });

  test("MARKETING whose body already used {{unsubscribeUrl}} gets no footer", async () => {
    const url = subscriptionUrls(srv.ctx, acct.projectId, contactId, "reader@example.org").unsubscribeUrl;
    const d = await decorate("MARKETING", { usesUnsub: true, html: `<body><a href="${url}">leave</a></body>` });
    expect(hrefs(d.html)).toEqual([url]);
    expect(d.headers["List-Unsubscribe"]).toBeDefined();
  });

  test("HEADLESS: List-Unsubscribe headers, no footer", async () => {
    const d = await decorate("HEADLESS");
    expect(d.headers["List-Unsubscribe"]).toBeDefined();
    expect(d.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    expect(hrefs(d.html).some((l) => l.includes("/unsubscribe/") || l.includes("/manage/"))).toBe(false);
  });

  test("TRANSACTIONAL: no List-Unsubscribe, no footer (tracking ENABLED: links tracked)", async () => {
    expect((await setTracking("ENABLED")).status).toBe(200);
    const d = await decorate("TRANSACTIONAL");
    expect(d.headers).toEqual({});
    expect(hrefs(d.html).some((l) => l.includes("/unsubscribe/"))).toBe(false);
    expect(hrefs(d.html)[0]!.startsWith(`${base()}/t/c/`)).toBe(true);
  });

  test("tracking modes: DISABLED tracks nothing, MARKETING_ONLY spares transactional mail", async () => {
    expect((await setTracking("DISABLED")).status).toBe(200);
    let d = await decorate("MARKETING");
    expect(hrefs(d.html)[0]).toBe("https://blog.example.com/post");
    expect(imgSrcs(d.html)).toEqual([]);
    expect(d.headers["List-Unsubscribe"]).toBeDefined();

    expect((await setTracking("MARKETING_ONLY")).status).toBe(200);
    d = await decorate("TRANSACTIONAL");
    expect(d.html).toBe(body);
    d = await decorate("MARKETING");
    expect(hrefs(d.html)[0]!.startsWith(`${base()}/t/c/`)).toBe(true);
    expect(imgSrcs(d.html).length).toBe(1);
    await setTracking("ENABLED");
  });

  test("mail to no contact (system mail, test sends) is never tracked", async () => {
    const d = await decorate("TRANSACTIONAL", { contact: null });
    expect(d.html).toBe(body);
    expect(d.headers).toEqual({});
  });
});

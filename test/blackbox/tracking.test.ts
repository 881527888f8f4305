// Black-box: open and click tracking, tracking modes, and the signed unsubscribe/subscribe links, as seen by a
// recipient who only has the delivered message (links point at MAILSVC_PUBLIC_URL).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { expectOk, hrefs, imgs, newProject } from "./support";
import { addresses } from "../support/api";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";


const FROM = "news@track.bb.example";
const RCPT_DOMAIN = "reader-bb.example";
const LANDING = "https://landing.bb.example/offer?id=42&utm=x";

let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;

beforeAll(async () => {
  env = await deliveryEnv({ name: "BB tracking", mailDomain: RCPT_DOMAIN, senderDomain: "track.bb.example" });
  ({ srv, dns, sink, acct: acc } = env);
  // New projects default to MARKETING_ONLY (decisions.md); these tests track transactional mail.
  expect((await setTracking("ENABLED")).status).toBe(200);
});
afterAll(() => env?.close());

const rcpt = addresses(RCPT_DOMAIN, "reader");

/** Sends one email and returns its id and the delivered HTML. */
async function sendAndReceive(body: string, extra: Record<string, unknown> = {}, who: Account = acc) {
  const to = rcpt();
  const res = await srv.api("/v1/send", { key: who.secretKey, body: { to, from: FROM, subject: "Hi", body, ...extra } });
  expectOk(res);
  const m = await eventually(async () => sink.byRecipient(to)[0], Boolean, `a message for ${to}`);
  return { to, id: res.body.data.emails[0].email as string, contactId: res.body.data.emails[0].contact.id as string, html: String((await m!.parse()).html || "") };
}

const ours = (u: string) => u.startsWith(srv.ctx.config.publicUrl);
const emailView = async (id: string) => (await srv.api(`/emails/${id}`, { key: acc.secretKey })).body;
/** Delivery, opens and clicks happen asynchronously: polls `read` (running queued work) until `ok`. */
function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  return waitFor(async () => (await srv.drainJobs(), read()), { until: ok, what });
}
const eventNames = async (contactId: string) => {
  const evs = await srv.api(`/events/contact/${contactId}`, { key: acc.secretKey });
  return (Array.isArray(evs.body) ? evs.body : (evs.body?.data ?? [])).map((e: any) => e.name as string);
};
const setTracking = (tracking: string) => srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking } });

describe("open and click tracking (ENABLED)", () => {
  test("links are rewritten to our public URL and redirect to the original; the click is recorded", async () => {
    const { id, html } = await sendAndReceive(`<p><a href="${LANDING}">Offer</a></p>`);
    const link = hrefs(html).find(ours);
    expect(link).toBeDefined();
    expect(html).not.toContain(`href="${LANDING.replace(/&/g, "&amp;")}"`);
    const clickedFrom = srv.clock.now();
    const res = await fetch(link!, { redirect: "manual" });
    // README "Tracking": a click is a 302 to the original URL.
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe(LANDING);
    const e = await eventually(() => emailView(id), (v) => !!v.clickedAt, "clickedAt");
    expectTimeBetween(e.clickedAt, clickedFrom, srv.clock.now());
    expect(e.status).toBe("CLICKED");
  });

  test("the open pixel answers with an image and records the open", async () => {
    const { id, html } = await sendAndReceive("<p>Hello</p>");
    const pixel = imgs(html).find(ours);
    expect(pixel).toBeDefined();
    const openedFrom = srv.clock.now();
    const res = await fetch(pixel!);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type") ?? "").toStartWith("image/");
    await res.arrayBuffer();
    const e = await eventually(() => emailView(id), (v) => !!v.openedAt, "openedAt");
    expectTimeBetween(e.openedAt, openedFrom, srv.clock.now());
    // Opened, never clicked (the message has no link).
    expect(e.status).toBe("OPENED");
    expect(e.clickedAt ?? null).toBeNull();
  });

  test("a tampered click link does not redirect anywhere (no open redirect)", async () => {
    const { html } = await sendAndReceive(`<a href="${LANDING}">x</a>`);
    const link = hrefs(html).find(ours)!;
    const u = new URL(link);
    const segs = u.pathname.split("/");
    const token = segs[segs.length - 1]!;
    const swap = (t: string, i: number) => t.slice(0, i) + (t[i] === "A" ? "B" : "A") + t.slice(i + 1);
    const variants: string[] = [
      swap(token, Math.floor(token.length / 4)), // inside the signed part
      swap(token, token.length - 6), // inside the signature
    ];
    // The real attack: the same signature on a payload naming another site.
    const dot = token.lastIndexOf(".");
    if (dot > 0) {
      const body = Buffer.from(token.slice(0, dot), "base64url").toString("utf8");
      if (body.includes("landing.bb.example")) {
        const evil = Buffer.from(body.replace("landing.bb.example", "evil.example")).toString("base64url");
        variants.push(`${evil}.${token.slice(dot + 1)}`);
      }
    }
    for (const v of variants) {
      const bad = new URL(link);
      bad.pathname = [...segs.slice(0, -1), v].join("/");
      const res = await fetch(bad, { redirect: "manual" });
      await res.arrayBuffer();
      // README "Tracking": a bad token is 404, never a redirect.
      expect(res.status).toBe(404);
      expect(res.headers.get("location")).toBeNull();
    }
  });

  test("a click link cannot be re-pointed at another project's URL (token of one, link part of the other)", async () => {
    const other = await newProject(srv.api, acc, "Tracking other");
    await addVerifiedDomain(srv.api, dns, other, "track-other.bb.example");
    expectOk(await srv.api(`/users/@me/projects/${other.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking: "ENABLED" } }));
    const mine = hrefs((await sendAndReceive(`<a href="${LANDING}">x</a>`)).html).find(ours)!;
    const to = rcpt();
    expectOk(
      await srv.api("/v1/send", {
        key: other.secretKey,
        body: { to, from: "a@track-other.bb.example", subject: "s", body: '<a href="https://evil.example/phish">x</a>' },
      }),
    );
    const delivered = await eventually(async () => sink.byRecipient(to)[0], Boolean, `a message for ${to}`);
    const theirs = hrefs(String((await delivered!.parse()).html || "")).find(ours);
    expect(theirs).toStartWith(srv.ctx.config.publicUrl);
    const last = (u: string) => new URL(u).pathname.split("/").pop()!;
    const [mineTok, theirTok] = [last(mine), last(theirs!)];
    // Mix the parts (split at the last dot, whatever the token format) and check no mix lands on evil.example.
    const mixes = new Set<string>();
    const cut = (t: string) => [t.slice(0, t.lastIndexOf(".")), t.slice(t.lastIndexOf(".") + 1)];
    const [m1, m2] = cut(mineTok);
    const [t1, t2] = cut(theirTok);
    mixes.add(`${m1}.${t2}`);
    mixes.add(`${t1}.${m2}`);
    for (const mix of mixes) {
      const u = new URL(mine);
      u.pathname = [...u.pathname.split("/").slice(0, -1), mix].join("/");
      const res = await fetch(u, { redirect: "manual" });
      await res.arrayBuffer();
      expect(res.headers.get("location") ?? "").not.toContain("evil.example");
    }
  });

  test("opens and clicks are recorded as email.open / email.click events on the contact", async () => {
    const { contactId, html } = await sendAndReceive(`<a href="${LANDING}">x</a>`);
    await (await fetch(imgs(html).find(ours)!)).arrayBuffer();
    await fetch(hrefs(html).find(ours)!, { redirect: "manual" });
    const names = await eventually(() => eventNames(contactId), (n) => n.includes("email.open") && n.includes("email.click"), "email.open and email.click");
    expect(names).toContain("email.open");
    expect(names).toContain("email.click");
  });
});

describe("tracking modes", () => {
  test("DISABLED: no pixel, links untouched", async () => {
    expect((await setTracking("DISABLED")).status).toBe(200);
    try {
      const { html } = await sendAndReceive(`<a href="${LANDING}">x</a>`);
      expect(imgs(html).filter(ours)).toEqual([]);
      expect(hrefs(html).filter(ours)).toEqual([]);
      expect(hrefs(html)).toContain(LANDING);
    } finally {
      await setTracking("ENABLED");
    }
  });

  test("MARKETING_ONLY: a transactional /v1/send is not tracked", async () => {
    expect((await setTracking("MARKETING_ONLY")).status).toBe(200);
    try {
      const { html } = await sendAndReceive(`<a href="${LANDING}">x</a>`);
      expect(imgs(html).filter(ours)).toEqual([]);
      expect(hrefs(html)).toContain(LANDING);
    } finally {
      await setTracking("ENABLED");
    }
  });
});

describe("signed subscription links ({{unsubscribeUrl}}, {{subscribeUrl}}, {{manageUrl}})", () => {
  test("the unsubscribe link shows a page; its one-click POST unsubscribes the contact and records contact.unsubscribed", async () => {
    const { to, html } = await sendAndReceive('<a href="{{unsubscribeUrl}}">Unsubscribe</a> <a href="{{manageUrl}}">Manage</a>', { subscribed: true });
    const links = hrefs(html).filter(ours);
    expect(links.length).toBeGreaterThanOrEqual(2);
    // Follow tracking redirects, if links were wrapped, to reach the page itself.
    const resolve = async (u: string) => {
      const r = await fetch(u, { redirect: "manual" });
      const loc = r.headers.get("location");
      return loc && r.status >= 300 && r.status < 400 ? new URL(loc, u).toString() : u;
    };
    const unsub = await resolve(links[0]!);
    expect(ours(unsub)).toBe(true);
    const page = await fetch(unsub);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type") ?? "").toContain("text/html");
    await page.text();
    // A GET alone (mail scanners) does not unsubscribe... or does; either way one-click POST must.
    const post = await fetch(unsub, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(post.status).toBeLessThan(400);
    const found = (await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [to] } })).body.found[0];
    expect(found.subscribed).toBe(false);
    const names = await eventually(() => eventNames(found.id), (n) => n.includes("contact.unsubscribed"), "contact.unsubscribed");
    expect(names).toContain("contact.unsubscribed");
  });

  test("the subscribe link resubscribes (POST); the manage link shows a page", async () => {
    const { to, html } = await sendAndReceive('<a href="{{subscribeUrl}}">Subscribe</a> <a href="{{manageUrl}}">Manage</a>', { subscribed: false });
    const [sub, manage] = hrefs(html).filter(ours);
    expect(sub).toBeDefined();
    expect(manage).toBeDefined();
    const resolve = async (u: string) => {
      const r = await fetch(u, { redirect: "manual" });
      await r.arrayBuffer();
      const loc = r.headers.get("location");
      return loc && r.status >= 300 && r.status < 400 ? new URL(loc, u).toString() : u;
    };
    const page = await fetch(await resolve(manage!));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type") ?? "").toContain("text/html");
    await page.text();
    const before = (await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [to] } })).body.found[0];
    expect(before.subscribed).toBe(false);
    const post = await fetch(await resolve(sub!), { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "" });
    expect(post.status).toBeLessThan(400);
    await post.arrayBuffer();
    const after = await eventually(
      async () => (await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [to] } })).body.found[0],
      (c: any) => c.subscribed === true,
      `${to} subscribed`,
    );
    expect(after.subscribed).toBe(true);
  });

  test("a tampered unsubscribe link changes nothing", async () => {
    const { to, html } = await sendAndReceive('<a href="{{unsubscribeUrl}}">Unsubscribe</a>', { subscribed: true });
    const link = hrefs(html).find(ours)!;
    const i = link.length - 8;
    const bad = link.slice(0, i) + (link[i] === "A" ? "B" : "A") + link.slice(i + 1);
    const res = await fetch(bad, { method: "POST", redirect: "manual" });
    expect(res.status).toBe(404);
    expect(res.headers.get("location")).toBeNull();
    const found = (await srv.api("/contacts/lookup", { key: acc.secretKey, body: { emails: [to] } })).body.found[0];
    expect(found.subscribed).toBe(true);
  });
});

// /analytics/*: buckets and counts after real deliveries, opens, clicks and bounces with the clock
// moved across days; top-events ordering and trend; campaign figures' shapes; window validation.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";
import { createAccount, type Account } from "../support/server";
import { hrefs, imgSrcs } from "../feedback/support";

setDefaultTimeout(30_000); // the machine is shared; nothing here asserts timings

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

let env: DeliveryEnv;
let key: string;
let day1: number; // 01:00 UTC of the first day of the story
beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
  const patch = await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { tracking: "ENABLED" } });
  expect(patch.status).toBe(200);
  // Start the story at 01:00 UTC of the next day, so no step crosses midnight by accident.
  const now = env.srv.clock.now();
  day1 = Math.floor(now / DAY) * DAY + DAY + HOUR;
  env.srv.clock.advance(day1 - now);
}, 30_000);
afterAll(() => env.close(), 30_000);

async function send(to: string) {
  const r = await env.srv.api("/v1/send", {
    key,
    body: { to, from: `news@${SENDER}`, subject: "Hi", body: `<p>Hi</p><p><a href="https://shop.example.com/x">x</a></p>` },
  });
  expect(r.status).toBe(200);
  return r.body.data.emails[0].email as string;
}

const get = (path: string) => env.srv.api(path, { key });

describe("GET /analytics/timeseries", () => {
  test("day and hour buckets count deliveries, opens, clicks and bounces where they happened; empty buckets are zero", async () => {
    const a = await send(`ann@${RCPT}`);
    const b = await send(`bob@${RCPT}`);
    await waitForView(env.srv, key, a, "DELIVERED");
    await waitForView(env.srv, key, b, "DELIVERED");
    const html = (await env.sink.byRecipient(`ann@${RCPT}`)[0]!.parse()).html as string;
    expect((await fetch(imgSrcs(html).find((s) => s.includes("/t/o/"))!)).status).toBe(200);
    expect((await fetch(hrefs(html).find((h) => h.includes("/t/c/"))!, { redirect: "manual" })).status).toBe(302);

    // Next day: a hard bounce and a delivery.
    env.srv.clock.advance(DAY);
    env.sink.onRcpt = (rcpt) => (rcpt === `gone@${RCPT}` ? { code: 550, message: "5.1.1 no such user" } : undefined);
    const c = await send(`gone@${RCPT}`);
    const d = await send(`dan@${RCPT}`);
    await waitForView(env.srv, key, c, "BOUNCED");
    await waitForView(env.srv, key, d, "DELIVERED");
    env.sink.onRcpt = () => undefined;
    env.srv.clock.advance(2 * HOUR);

    const from = new Date(day1 - DAY).toISOString();
    const to = new Date(day1 + DAY + 2 * HOUR).toISOString();
    const r = await get(`/analytics/timeseries?interval=day&from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      from,
      to,
      interval: "day",
      data: [
        { date: isoDay(day1 - DAY), sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 },
        { date: isoDay(day1), sent: 2, delivered: 2, opened: 1, clicked: 1, bounced: 0, complained: 0 },
        { date: isoDay(day1 + DAY), sent: 2, delivered: 1, opened: 0, clicked: 0, bounced: 1, complained: 0 },
      ],
    });

    // Epoch ms work too; hour buckets of the second day.
    const h = await get(`/analytics/timeseries?interval=hour&from=${day1 + DAY - HOUR}&to=${day1 + DAY + 2 * HOUR}`);
    expect(h.status).toBe(200);
    expect(h.body.interval).toBe("hour");
    expect(h.body.data.map((x: any) => [x.date, x.sent, x.delivered, x.bounced])).toEqual([
      [new Date(day1 + DAY - HOUR).toISOString(), 0, 0, 0],
      [new Date(day1 + DAY).toISOString(), 2, 1, 1],
      [new Date(day1 + DAY + HOUR).toISOString(), 0, 0, 0],
      [new Date(day1 + DAY + 2 * HOUR).toISOString(), 0, 0, 0],
    ]);

    // Default: the last 30 days by day, one bucket per day, today included.
    const def = await get("/analytics/timeseries");
    expect(def.body.interval).toBe("day");
    expect(def.body.data).toHaveLength(31);
    expect(def.body.data.at(-1).date).toBe(isoDay(env.srv.clock.now()));
    const sum = (k: string) => def.body.data.reduce((n: number, x: any) => n + x[k], 0);
    expect([sum("sent"), sum("delivered"), sum("opened"), sum("clicked"), sum("bounced")]).toEqual([4, 3, 1, 1, 1]);

    // /activity/stats agrees (from the same rollups).
    const stats = await get("/activity/stats");
    expect(stats.body).toMatchObject({ sent: 4, delivered: 3, opened: 1, clicked: 1, bounced: 1, openRate: 25, clickRate: 25, bounceRate: 25 });
  });

  test("bad windows and intervals are 400 BAD_REQUEST; over-long windows are clamped; other projects see nothing", async () => {
    for (const q of [
      "interval=week",
      "from=yesterday",
      "to=2026-13-45",
      "from=-5",
      "to=99999999999999999",
      "from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
      "from=1e12",
      "from=0x10",
    ]) {
      const r = await get(`/analytics/timeseries?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code).toBe("BAD_REQUEST");
    }
    const long = await get(`/analytics/timeseries?interval=hour&from=0&to=${env.srv.clock.now()}`);
    expect(long.status).toBe(200);
    expect(long.body.data.length).toBeLessThanOrEqual(24 * 93);
    for (const p of ["/analytics/top-events?from=nope", "/analytics/top-campaigns?to=nope", "/analytics/campaign-stats?from=nope", "/analytics/top-campaigns?metric=bounces", "/analytics/top-events?limit=0"]) {
      expect((await get(p)).status, p).toBe(400);
    }

    const other = await createAccount(env.srv.api, "Other");
    const o = await env.srv.api("/analytics/timeseries", { key: other.secretKey });
    expect(o.body.data.every((x: any) => x.sent === 0 && x.delivered === 0)).toBe(true);
    expect((await env.srv.api("/analytics/timeseries", { key: env.acct.publicKey })).status).toBe(401);
    // A dashboard session with X-Project-Id works like the secret key.
    const s = await env.srv.api("/analytics/top-events", { cookie: env.acct.cookie, headers: { "x-project-id": env.acct.projectId } });
    expect(s.status).toBe(200);
    expect(s.body.data.length).toBeGreaterThan(0);
  });
});

describe("GET /analytics/top-events", () => {
  let acc: Account;
  beforeAll(async () => {
    acc = await createAccount(env.srv.api, "Events");
  });
  const track = async (event: string, n: number) => {
    for (let i = 0; i < n; i++) {
      const r = await env.srv.api("/v1/track", { key: acc.publicKey, body: { email: `u${i}@example.com`, event } });
      expect(r.status).toBe(200);
    }
  };

  test("most frequent names first, with the trend against the previous window of the same length", async () => {
    await track("signup", 2);
    await track("login", 1);
    await track("gone", 3);
    env.srv.clock.advance(15 * DAY);
    await track("signup", 3);
    await track("login", 4);
    await track("purchase", 1);
    const now = env.srv.clock.now();
    const from = now - 10 * DAY;
    const r = await env.srv.api(`/analytics/top-events?from=${from}&to=${now}`, { key: acc.secretKey });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      data: [
        { name: "login", count: 4, trend: 300 },
        { name: "signup", count: 3, trend: 50 },
        { name: "purchase", count: 1, trend: 100 },
      ],
    });
    const two = await env.srv.api(`/analytics/top-events?from=${from}&to=${now}&limit=2`, { key: acc.secretKey });
    expect(two.body.data.map((x: any) => x.name)).toEqual(["login", "signup"]);
    // Default window (30 days) holds both rounds.
    const def = await env.srv.api("/analytics/top-events", { key: acc.secretKey });
    expect(def.body.data).toEqual([
      { name: "login", count: 5, trend: 100 },
      { name: "signup", count: 5, trend: 100 },
      { name: "gone", count: 3, trend: 100 },
      { name: "purchase", count: 1, trend: 100 },
    ]);
  });
});

describe("campaign figures", () => {
  /** A campaign row inserted directly in any status, with its sentAt (the API cannot put a campaign there at will). */
  async function campaign(name: string, status: string, sentAt: number | null) {
    const { sql } = await import("kysely");
    const id = Bun.randomUUIDv7();
    const now = env.srv.clock.now();
    await sql`INSERT INTO campaigns (id, project_id, name, subject, body, from_email, status, audience_type, sent_at, created_at, updated_at)
      VALUES (${id}, ${env.acct.projectId}, ${name}, ${"Subject " + name}, '<p>x</p>', ${"news@" + SENDER}, ${status}, 'ALL', ${sentAt}, ${now}, ${now})`.execute(env.srv.ctx.db);
    return id;
  }

  async function campaignEmails(campaignId: string, to: string[]) {
    const { insertContent, insertEmails } = await import("../../src/mail/outbox/enqueue");
    const { wakeOutbox } = await import("../../src/mail/outbox/outbox");
    const ctx = env.srv.ctx;
    const now = ctx.clock.now();
    const ids: string[] = [];
    for (const addr of to) {
      const c = await env.srv.api("/contacts", { key, body: { email: addr } });
      const [id] = await ctx.db.transaction().execute(async (trx) => {
        const contentId = await insertContent(trx, now, {
          projectId: env.acct.projectId,
          subject: "Campaign",
          html: `<p>Hi</p><p><a href="https://shop.example.com/a">a</a> <a href="https://shop.example.com/b">b</a></p>`,
          fromEmail: `news@${SENDER}`,
          type: "MARKETING",
        });
        return insertEmails(trx, now, ctx.config.hostname, [
          { projectId: env.acct.projectId, contentId, contactId: c.body.id, toEmail: addr, vars: { email: addr }, sourceType: "CAMPAIGN", campaignId },
        ]);
      });
      ids.push(id!);
    }
    wakeOutbox(ctx);
    return ids;
  }

  test("campaign-stats and top-campaigns count each campaign's emails: sent, opened, clicked (unique per email)", async () => {
    const now = env.srv.clock.now();
    const a = await campaign("Spring sale", "SENT", now);
    const b = await campaign("Bounce heavy", "SENT", now);
    await campaign("Draft", "DRAFT", null);
    await campaign("Stopped", "CANCELLED", now);
    const [a1, a2, a3] = await campaignEmails(a, [`c1@${RCPT}`, `c2@${RCPT}`, `c3@${RCPT}`]);
    env.sink.onRcpt = (rcpt) => (rcpt === `cgone@${RCPT}` ? { code: 550, message: "5.1.1 no such user" } : undefined);
    const [b1] = await campaignEmails(b, [`cgone@${RCPT}`]);
    for (const id of [a1!, a2!, a3!]) await waitForView(env.srv, key, id, "DELIVERED");
    await waitForView(env.srv, key, b1!, "BOUNCED");
    env.sink.onRcpt = () => undefined;
    const links = async (to: string) => {
      const html = (await env.sink.byRecipient(to)[0]!.parse()).html as string;
      return { pixel: imgSrcs(html).find((s) => s.includes("/t/o/"))!, clicks: hrefs(html).filter((h) => h.includes("/t/c/")) };
    };
    // c1: opens, then clicks both links (one clicked email); c2: clicks without the pixel (opened too).
    const l1 = await links(`c1@${RCPT}`);
    await fetch(l1.pixel);
    for (const c of l1.clicks) await fetch(c, { redirect: "manual" });
    await fetch(l1.clicks[0]!, { redirect: "manual" });
    const l2 = await links(`c2@${RCPT}`);
    await fetch(l2.clicks[1]!, { redirect: "manual" });
    await env.srv.drainJobs();

    const top = await get("/analytics/top-campaigns?metric=sent");
    expect(top.status).toBe(200);
    expect(top.body.data).toEqual([
      { id: a, name: "Spring sale", subject: "Subject Spring sale", sentCount: 3, openedCount: 2, clickedCount: 2, openRate: 66.67, clickRate: 66.67 },
      { id: b, name: "Bounce heavy", subject: "Subject Bounce heavy", sentCount: 1, openedCount: 0, clickedCount: 0, openRate: 0, clickRate: 0 },
      expect.objectContaining({ name: "Stopped", sentCount: 0 }),
    ]);
    expect((await get("/analytics/top-campaigns?metric=clicks&limit=1")).body.data.map((c: any) => c.id)).toEqual([a]);
    const stats = await get("/analytics/campaign-stats");
    expect(stats.body).toEqual({ total: 4, draft: 1, scheduled: 0, sending: 0, sent: 2, cancelled: 1, averageOpenRate: 33.33, averageClickRate: 33.33 });
    const counters = await env.srv.ctx.db.selectFrom("campaign_rollup").selectAll().where("campaign_id", "=", b).executeTakeFirstOrThrow();
    expect(counters).toMatchObject({ sent: 1, delivered: 0, bounced: 1 });
    // Another project sees none of them.
    const other = await createAccount(env.srv.api, "Other campaigns");
    expect((await env.srv.api("/analytics/top-campaigns", { key: other.secretKey })).body.data).toEqual([]);
    expect((await env.srv.api("/analytics/campaign-stats", { key: other.secretKey })).body.total).toBe(0);
  });
});

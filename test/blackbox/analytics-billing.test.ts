// Black-box: analytics, the /events and /activity read endpoints, security, the API description and project reset
// (billing, uploads, webhook endpoints: billing/limits-and-providers, uploads/api, webhooks/endpoints-api). Written from api-spec.md,
// decisions.md ("Billing, security, misc", "Outbound webhooks", "API description", "Contacts, data, import") and the
// docs/api.md (the API guide); never from the code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import type { TestDns } from "../support/dns";
import { createAccount, type Account, type TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import { expectCursorPage, expectEnvelope, expectOk, hrefs, imgs, isIsoDate, newProject, UUID } from "./support";
import { addresses, items } from "../support/api";
import { IMAGES } from "../uploads/support";

const RCPT_DOMAIN = "ab-inbox.example";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let srv: TestServer;
let dns: TestDns;
let sink: SmtpSink;
/** A user with a project; other projects of this user are made with newProject. */
let acc: Account;
/** Another user with a project of their own. */
let stranger: Account;

let env: DeliveryEnv;
beforeAll(async () => {
  env = await deliveryEnv({ name: "BB analytics", mailDomain: RCPT_DOMAIN, config: { allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000] } });
  ({ srv, dns, sink, acct: acc } = env);
  stranger = await createAccount(srv.api, "BB analytics stranger");
});
afterAll(() => env?.close());

const rcpt = addresses(RCPT_DOMAIN);
/** Asynchronous work (delivery, feed consumers, webhooks) is moved along and `read` polled until `ok`. */
function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  return waitFor(async () => (await srv.drainJobs(), read()), { until: ok, what });
}
const asSession = (a: Account) => ({ cookie: a.cookie, headers: { "x-project-id": a.projectId } });
const ours = (u: string) => u.startsWith(srv.ctx.config.publicUrl);
async function htmlFor(to: string) {
  const m = await eventually(async () => sink.byRecipient(to)[0], Boolean, `a message for ${to}`);
  return String((await m!.parse()).html || "");
}
const emailStatus = async (a: Account, id: string) => (await srv.api(`/emails/${id}`, { key: a.secretKey })).body;
const sendOne = (a: Account, from: string, to: string | string[], body = "<p>Hi</p>") =>
  srv.api("/v1/send", { key: a.secretKey, body: { to, from, subject: "Hello", body } });
const setTracking = (a: Account, tracking: string) =>
  srv.api(`/users/@me/projects/${a.projectId}`, { method: "PATCH", cookie: a.cookie, body: { tracking } });
const sum = (data: any[], k: string) => data.reduce((n, b) => n + b[k], 0);
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

// ---------------------------------------------------------------------------------------------------------------
describe("analytics", () => {
  const FROM = "hello@an.bb.example";
  let an: Account;
  let emailIds: string[] = [];

  beforeAll(async () => {
    an = await newProject(srv.api, acc, "Analytics");
    await addVerifiedDomain(srv.api, dns, an, "an.bb.example");
    expect((await setTracking(an, "ENABLED")).status).toBe(200);
    // Two delivered emails; the first is opened and clicked.
    const tos = [rcpt("an"), rcpt("an")];
    for (const to of tos) {
      const r = await sendOne(an, FROM, to, `<p><a href="https://landing.bb.example/x">Go</a></p>`);
      expectOk(r);
      emailIds.push(r.body.data.emails[0].email);
    }
    for (const id of emailIds) await eventually(() => emailStatus(an, id), (v) => v.status === "DELIVERED", `email ${id} DELIVERED`);
    const html = await htmlFor(tos[0]!);
    const pixel = imgs(html).find(ours);
    const link = hrefs(html).find(ours);
    expect(pixel).toBeDefined();
    expect(link).toBeDefined();
    expect((await fetch(pixel!)).status).toBe(200);
    expect((await fetch(link!, { redirect: "manual" })).status).toBe(302);
    await eventually(() => emailStatus(an, emailIds[0]!), (v) => !!v.openedAt && !!v.clickedAt, "open and click recorded");
    // Client events: three of one name (new contacts: no subscription event).
    for (let i = 0; i < 3; i++) expectOk(await srv.api("/v1/track", { key: an.publicKey, body: { email: rcpt("tr"), event: "signup" } }));
    await srv.drainJobs();
  });

  const get = (path: string, who: Account = an) => srv.api(path, { key: who.secretKey });

  describe("GET /analytics/timeseries", () => {
    test("default: { from, to, interval: day, data } covering the last 30 days, one bucket per UTC day, counts of the window", async () => {
      const res = await get("/analytics/timeseries");
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(["data", "from", "interval", "to"]);
      expect(res.body.interval).toBe("day");
      expect(isIsoDate(res.body.from)).toBe(true);
      expect(isIsoDate(res.body.to)).toBe(true);
      const from = Date.parse(res.body.from);
      const to = Date.parse(res.body.to);
      expect(to - from).toBe(30 * DAY);
      expectTimeBetween(res.body.to, srv.clock.now() - 1000, srv.clock.now());
      const data = res.body.data as any[];
      const days = (Date.parse(utcDay(to)) - Date.parse(utcDay(from))) / DAY + 1;
      expect(data.length).toBe(days);
      data.forEach((b, i) => {
        expect(Object.keys(b).sort()).toEqual(["bounced", "clicked", "complained", "date", "delivered", "opened", "sent"]);
        expect(b.date).toBe(utcDay(Date.parse(utcDay(from)) + i * DAY));
      });
      expect({ sent: sum(data, "sent"), delivered: sum(data, "delivered"), opened: sum(data, "opened"), clicked: sum(data, "clicked"), bounced: sum(data, "bounced"), complained: sum(data, "complained") }).toEqual({
        sent: 2,
        delivered: 2,
        opened: 1,
        clicked: 1,
        bounced: 0,
        complained: 0,
      });
      const today = data.find((b) => b.date === utcDay(srv.clock.now()));
      expect(today).toMatchObject({ sent: 2, delivered: 2, opened: 1, clicked: 1 });
    });

    test("interval=hour with from (ISO) and to (epoch ms): whole UTC hours from the one holding from to the one holding to", async () => {
      const now = srv.clock.now();
      const from = new Date(now - 3 * HOUR).toISOString();
      const res = await get(`/analytics/timeseries?interval=hour&from=${encodeURIComponent(from)}&to=${now}`);
      expect(res.status).toBe(200);
      expect(res.body.interval).toBe("hour");
      expect(Date.parse(res.body.from)).toBe(Date.parse(from));
      expect(Date.parse(res.body.to)).toBe(now);
      const data = res.body.data as any[];
      const firstHour = Math.floor((now - 3 * HOUR) / HOUR) * HOUR;
      expect(data.length).toBe(Math.floor(now / HOUR) - firstHour / HOUR + 1);
      data.forEach((b, i) => {
        expect(isIsoDate(b.date)).toBe(true);
        expect(Date.parse(b.date)).toBe(firstHour + i * HOUR);
      });
      const totals = Object.fromEntries(["sent", "delivered", "opened", "clicked", "bounced", "complained"].map((k) => [k, sum(data, k)]));
      expect(totals).toEqual({ sent: 2, delivered: 2, opened: 1, clicked: 1, bounced: 0, complained: 0 });
    });

    test("a window without activity: one zero bucket per day (dates only)", async () => {
      const res = await get("/analytics/timeseries?from=2020-01-01&to=2020-01-03T12:00:00Z");
      expect(res.status).toBe(200);
      expect(Date.parse(res.body.from)).toBe(Date.parse("2020-01-01T00:00:00Z"));
      expect(res.body.data).toEqual(
        ["2020-01-01", "2020-01-02", "2020-01-03"].map((date) => ({ date, sent: 0, delivered: 0, opened: 0, clicked: 0, bounced: 0, complained: 0 })),
      );
    });

    test("a window longer than 2,232 hours keeps its to and is shortened", async () => {
      const res = await get("/analytics/timeseries?interval=hour&from=2020-01-01&to=2021-01-01T00:30:00Z");
      expect(res.status).toBe(200);
      const data = res.body.data as any[];
      expect(data.length).toBe(2232);
      expect(Date.parse(res.body.to)).toBe(Date.parse("2021-01-01T00:30:00Z"));
      expect(Date.parse(data[data.length - 1].date)).toBe(Date.parse("2021-01-01T00:00:00Z"));
      expect(Date.parse(data[0].date)).toBe(Date.parse("2021-01-01T00:00:00Z") - 2231 * HOUR);
    });

    test("bad windows and intervals are 400 BAD_REQUEST", async () => {
      expectEnvelope(await get("/analytics/timeseries?from=yesterday"), 400, "BAD_REQUEST");
      expectEnvelope(await get("/analytics/timeseries?from=2020-02-01&to=2020-01-01"), 400, "BAD_REQUEST");
      expectEnvelope(await get("/analytics/timeseries?interval=week"), 400, "BAD_REQUEST");
    });

    test("only this project's mail: another project sees zeros", async () => {
      const res = await get("/analytics/timeseries", stranger);
      expect(res.status).toBe(200);
      for (const k of ["sent", "delivered", "opened", "clicked"]) expect(sum(res.body.data, k)).toBe(0);
    });
  });

  describe("GET /analytics/top-events", () => {
    test("{ data: [{ name, count, trend }] }: client and system names, most frequent first, ties by name, trend 100 without a previous window", async () => {
      const res = await get("/analytics/top-events");
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(["data"]);
      expect(res.body.data).toEqual([
        { name: "signup", count: 3, trend: 100 },
        { name: "email.delivery", count: 2, trend: 100 },
        { name: "email.sent", count: 2, trend: 100 },
        { name: "email.click", count: 1, trend: 100 },
        { name: "email.open", count: 1, trend: 100 },
      ]);
      const two = await get("/analytics/top-events?limit=2");
      expect(two.body.data.map((e: any) => e.name)).toEqual(["signup", "email.delivery"]);
    });

    test("trend: percent change against the window of the same length just before", async () => {
      const p = await newProject(srv.api, acc, "Trend");
      const track = (event: string) => srv.api("/v1/track", { key: p.publicKey, body: { email: rcpt("trend"), event } });
      expectOk(await track("ping"));
      for (let i = 0; i < 3; i++) expectOk(await track("pong"));
      srv.clock.advance(HOUR);
      for (let i = 0; i < 3; i++) expectOk(await track("ping"));
      expectOk(await track("pong"));
      await srv.drainJobs();
      const now = srv.clock.now();
      const res = await srv.api(`/analytics/top-events?from=${now - 40 * 60_000}&to=${now}`, { key: p.secretKey });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([
        { name: "ping", count: 3, trend: 200 },
        { name: "pong", count: 1, trend: -66.67 },
      ]);
    });
  });

  describe("campaigns: GET /analytics/top-campaigns and /analytics/campaign-stats", () => {
    const CFROM = "news@camp.bb.example";
    let cp: Account;
    let sent: any;
    let draft: any;
    let scheduled: any;
    const createCampaign = async (name: string) => {
      const r = await srv.api("/campaigns", {
        key: cp.secretKey,
        body: { name, subject: `Subject of ${name}`, body: "<p>News</p>", from: CFROM, audienceType: "ALL" },
      });
      expect(r.status).toBe(201);
      return r.body.data;
    };

    beforeAll(async () => {
      cp = await newProject(srv.api, acc, "Campaign analytics");
      await addVerifiedDomain(srv.api, dns, cp, "camp.bb.example");
      const tos = [rcpt("camp"), rcpt("camp")];
      for (const email of tos) expectOk(await srv.api("/contacts", { key: cp.secretKey, body: { email } }));
      sent = await createCampaign("Spring sale");
      draft = await createCampaign("Draft one");
      scheduled = await createCampaign("Later");
      expectOk(await srv.api(`/campaigns/${sent.id}/send`, { key: cp.secretKey, body: {} }));
      await eventually(
        async () => (await srv.api(`/campaigns/${sent.id}`, { key: cp.secretKey })).body,
        (c) => c.status === "SENT",
        "campaign SENT",
      );
      // One recipient opens (campaigns are MARKETING: tracked by default).
      const pixel = imgs(await htmlFor(tos[0]!)).find(ours);
      expect(pixel).toBeDefined();
      expect((await fetch(pixel!)).status).toBe(200);
      await eventually(
        async () => (await srv.api(`/campaigns/${sent.id}`, { key: cp.secretKey })).body,
        (c) => c.openedCount === 1,
        "campaign openedCount 1",
      );
      const when = new Date(srv.clock.now() + DAY).toISOString();
      const s = await srv.api(`/campaigns/${scheduled.id}/send`, { key: cp.secretKey, body: { scheduledFor: when } });
      expectOk(s);
      expect(s.body.data.status).toBe("SCHEDULED");
      scheduled = { ...scheduled, scheduledFor: when };
    });

    test("top-campaigns?metric=sent: { data: [{ id, name, subject, sentCount, openedCount, clickedCount, openRate, clickRate }] }, rates in percent of sentCount", async () => {
      const res = await srv.api("/analytics/top-campaigns?metric=sent&limit=10", { key: cp.secretKey });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body)).toEqual(["data"]);
      expect(res.body.data).toEqual([
        { id: sent.id, name: "Spring sale", subject: "Subject of Spring sale", sentCount: 2, openedCount: 1, clickedCount: 0, openRate: 50, clickRate: 0 },
      ]);
      for (const metric of ["opens", "clicks"]) {
        const r = await srv.api(`/analytics/top-campaigns?metric=${metric}`, { key: cp.secretKey });
        expect(r.status).toBe(200);
        expect(r.body.data.map((c: any) => c.id)).toEqual([sent.id]);
      }
      // Another project has none.
      expect((await srv.api("/analytics/top-campaigns", { key: an.secretKey })).body).toEqual({ data: [] });
    });

    test("campaign-stats: { total, draft, scheduled, sending, sent, cancelled, averageOpenRate, averageClickRate }", async () => {
      const res = await srv.api("/analytics/campaign-stats", { key: cp.secretKey });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ total: 3, draft: 1, scheduled: 1, sending: 0, sent: 1, cancelled: 0, averageOpenRate: 50, averageClickRate: 0 });
      const none = await srv.api("/analytics/campaign-stats", { key: an.secretKey });
      expect(none.body).toEqual({ total: 0, draft: 0, scheduled: 0, sending: 0, sent: 0, cancelled: 0, averageOpenRate: 0, averageClickRate: 0 });
    });

    test("the campaign send is counted in billing-consumption.campaigns", async () => {
      const res = await srv.api(`/users/@me/projects/${cp.projectId}/billing-consumption`, { cookie: cp.cookie });
      expect(res.status).toBe(200);
      expect(res.body.campaigns).toEqual({ used: 2, limit: null, percentage: 0 });
    });

    test("/activity/upcoming lists the scheduled campaign: bare array of { type, id, at, details }", async () => {
      const res = await srv.api("/activity/upcoming", { key: cp.secretKey });
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body)).toBe(true);
      for (const u of res.body) expect(Object.keys(u).sort()).toEqual(["at", "details", "id", "type"]);
      const mine = res.body.find((u: any) => u.id === scheduled.id);
      expect(mine).toBeDefined();
      expect(Date.parse(mine.at)).toBe(Date.parse(scheduled.scheduledFor));
      expect(mine.details).toBeObject();
    });
  });

  test("the public key is refused on every analytics endpoint (401 INVALID_API_KEY)", async () => {
    for (const p of ["/analytics/timeseries", "/analytics/top-campaigns", "/analytics/campaign-stats", "/analytics/top-events"]) {
      expectEnvelope(await srv.api(p, { key: an.publicKey }), 401, "INVALID_API_KEY");
      expectEnvelope(await srv.api(p), 401);
    }
  });

  test("a member's session with X-Project-Id reads the same analytics as the secret key; a stranger's session is 403", async () => {
    for (const p of ["/analytics/timeseries", "/analytics/top-events", "/analytics/campaign-stats", "/analytics/top-campaigns"]) {
      const a = await srv.api(p, { key: an.secretKey });
      const b = await srv.api(p, asSession(an));
      expect(b.status).toBe(200);
      expect(b.body.data ?? b.body).toEqual(a.body.data ?? a.body);
      expectEnvelope(await srv.api(p, { cookie: stranger.cookie, headers: { "x-project-id": an.projectId } }), 403);
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("/events read endpoints", () => {
  let p: Account;
  let alice: string;
  let bob: string;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "Events BB");
    for (const [email, event] of [
      ["alice@ev-bb.example", "viewed"],
      ["alice@ev-bb.example", "viewed"],
      ["bob@ev-bb.example", "viewed"],
      ["alice@ev-bb.example", "bought"],
    ] as const) {
      const r = await srv.api("/v1/track", { key: p.publicKey, body: { email, event, data: { n: 1 } } });
      expectOk(r);
      if (email.startsWith("alice")) alice = r.body.data.contact;
      else bob = r.body.data.contact;
    }
    await srv.drainJobs();
  });

  test("GET /events: event records { id, name, contactId, data, createdAt }, newest first; filters name and contactId", async () => {
    const res = await srv.api("/events", { key: p.secretKey });
    expectCursorPage(res);
    expect(res.body.total).toBe(4);
    const list = items(res.body);
    expect(list.map((e) => e.name)).toEqual(["bought", "viewed", "viewed", "viewed"]);
    const first = await srv.api("/events?limit=3", { key: p.secretKey });
    expectCursorPage(first);
    expect(first.body.hasMore).toBe(true);
    const rest = await srv.api(`/events?limit=3&cursor=${encodeURIComponent(first.body.cursor)}`, { key: p.secretKey });
    expectCursorPage(rest);
    expect([...first.body.data, ...rest.body.data].map((e: any) => e.id)).toEqual(list.map((e) => e.id));
    for (const e of list) {
      for (const k of ["id", "name", "contactId", "data", "createdAt"]) expect(e).toHaveProperty(k);
      expect(e.data).toEqual({ n: 1 });
      expect(isIsoDate(e.createdAt)).toBe(true);
    }
    const times = list.map((e) => Date.parse(e.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(items((await srv.api("/events?name=viewed", { key: p.secretKey })).body).length).toBe(3);
    const bobs = items((await srv.api(`/events?contactId=${bob}`, { key: p.secretKey })).body);
    expect(bobs.map((e) => [e.name, e.contactId])).toEqual([["viewed", bob]]);
  });

  test("GET /events/names: { names, data: [{ name, count, lastSeenAt }] }", async () => {
    const res = await srv.api("/events/names", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["data", "names"]);
    expect([...res.body.names].sort()).toEqual(["bought", "viewed"]);
    const byName = Object.fromEntries(res.body.data.map((d: any) => [d.name, d]));
    expect(byName.viewed.count).toBe(3);
    expect(byName.bought.count).toBe(1);
    for (const d of res.body.data) {
      expect(Object.keys(d).sort()).toEqual(["count", "lastSeenAt", "name"]);
      expect(isIsoDate(d.lastSeenAt)).toBe(true);
    }
  });

  test("GET /events/stats: { from, to, total, events: [{ name, count }], daily: [{ date, count }] }; days=N", async () => {
    const res = await srv.api("/events/stats", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(["daily", "events", "from", "to", "total"]);
    expect(res.body.total).toBe(4);
    expect(Date.parse(res.body.to) - Date.parse(res.body.from)).toBe(30 * DAY);
    const counts = Object.fromEntries(res.body.events.map((e: any) => [e.name, e.count]));
    expect(counts).toEqual({ viewed: 3, bought: 1 });
    expect(res.body.daily.reduce((n: number, d: any) => n + d.count, 0)).toBe(4);
    for (const d of res.body.daily) expect(Object.keys(d).sort()).toEqual(["count", "date"]);
    const one = await srv.api("/events/stats?days=1", { key: p.secretKey });
    expect(one.status).toBe(200);
    expect(Date.parse(one.body.to) - Date.parse(one.body.from)).toBe(DAY);
    expect(one.body.total).toBe(4);
    // README: the window is at most 3,660 days, whichever way it is given.
    const long = await srv.api("/events/stats?days=1000", { key: p.secretKey });
    expect(long.status).toBe(200);
    expect(Date.parse(long.body.to) - Date.parse(long.body.from)).toBe(1000 * DAY);
    expect(long.body.total).toBe(4);
    expectEnvelope(await srv.api("/events/stats?days=3661", { key: p.secretKey }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/events/stats?days=0", { key: p.secretKey }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/events/stats?from=2000-01-01&to=2020-01-01", { key: p.secretKey }), 400, "BAD_REQUEST");
    const old = await srv.api("/events/stats?from=2020-01-01&to=2020-01-02", { key: p.secretKey });
    expect(old.status).toBe(200);
    expect(old.body.total).toBe(0);
    expect(old.body.events).toEqual([]);
  });

  test("GET /events/contact/:id: that contact's events only", async () => {
    const res = await srv.api(`/events/contact/${alice}`, { key: p.secretKey });
    expect(res.status).toBe(200);
    const list = items(res.body);
    expect(list.map((e) => e.name).sort()).toEqual(["bought", "viewed", "viewed"]);
    for (const e of list) expect(e.contactId).toBe(alice);
  });

  test("a member's session with X-Project-Id reads events", async () => {
    const res = await srv.api("/events/names", asSession(p));
    expect(res.status).toBe(200);
    expect([...res.body.names].sort()).toEqual(["bought", "viewed"]);
  });

  test("DELETE /events/:name answers { name, deleted }; system names are 400; the names are gone", async () => {
    expectEnvelope(await srv.api("/events/email.sent", { method: "DELETE", key: p.secretKey }), 400);
    expectEnvelope(await srv.api("/events/contact.unsubscribed", { method: "DELETE", key: p.secretKey }), 400);
    const res = await srv.api("/events/viewed", { method: "DELETE", key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: "viewed", deleted: 3 });
    expect((await srv.api("/events/never_tracked", { method: "DELETE", key: p.secretKey })).body).toEqual({ name: "never_tracked", deleted: 0 });
    const names = await srv.api("/events/names", { key: p.secretKey });
    expect(names.body.names).toEqual(["bought"]);
    expect((await srv.api("/events/stats", { key: p.secretKey })).body.total).toBe(1);
    expect(items((await srv.api("/events", { key: p.secretKey })).body).map((e) => e.name)).toEqual(["bought"]);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("/activity filters and aggregates", () => {
  let p: Account;
  let cid: string;
  beforeAll(async () => {
    p = await newProject(srv.api, acc, "Activity BB");
    for (const event of ["opened_app", "paid"]) {
      const r = await srv.api("/v1/track", { key: p.publicKey, body: { email: "act2@activity-bb.example", event } });
      expectOk(r);
      cid = r.body.data.contact;
    }
    expectOk(await srv.api(`/contacts/${cid}`, { method: "PATCH", key: p.secretKey, body: { subscribed: false } }));
    expectOk(await srv.api("/v1/track", { key: p.publicKey, body: { email: "other@activity-bb.example", event: "paid" } }));
    await srv.drainJobs();
  });

  test("a client event is type `event` with its name in metadata.name; type, name and contactId filter", async () => {
    const all = await srv.api("/activity", { key: p.secretKey });
    expectCursorPage(all);
    expect(all.body.total).toBe(4);
    const ev = items((await srv.api("/activity?type=event", { key: p.secretKey })).body);
    expect(ev.length).toBe(3);
    for (const a of ev) expect(a.type).toBe("event");
    expect(ev.map((a) => a.metadata.name).sort()).toEqual(["opened_app", "paid", "paid"]);
    const paid = items((await srv.api("/activity?name=paid", { key: p.secretKey })).body);
    expect(paid.length).toBe(2);
    const mine = items((await srv.api(`/activity?contactId=${cid}`, { key: p.secretKey })).body);
    expect(mine.length).toBe(3);
    for (const a of mine) {
      expect(a.contactId).toBe(cid);
      expect(a.contactEmail).toBe("act2@activity-bb.example");
    }
    const two = items((await srv.api("/activity?type=contact.unsubscribed,event", { key: p.secretKey })).body);
    expect(two.map((a) => a.type).sort()).toEqual(["contact.unsubscribed", "event", "event", "event"]);
  });

  test("from/to bound the feed; a bad time is 400", async () => {
    expect(items((await srv.api("/activity?from=2020-01-01&to=2020-01-02", { key: p.secretKey })).body)).toEqual([]);
    expectEnvelope(await srv.api("/activity?from=notatime", { key: p.secretKey }), 400);
    expectEnvelope(await srv.api("/activity/stats?from=notatime", { key: p.secretKey }), 400);
  });

  test("/activity/types is a bare array of distinct types", async () => {
    const res = await srv.api("/activity/types", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(Array.isArray(res.body)).toBe(true);
    const types = res.body.map((t: any) => (typeof t === "string" ? t : t.type));
    expect([...types].sort()).toEqual(["contact.unsubscribed", "event"]);
  });

  test("/activity/recent-count takes minutes or since", async () => {
    const count = (b: any) => (typeof b === "number" ? b : b.count);
    const res = await srv.api("/activity/recent-count?minutes=5", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(count(res.body)).toBe(4);
    const later = new Date(srv.clock.now() + 1000).toISOString();
    expect(count((await srv.api(`/activity/recent-count?since=${encodeURIComponent(later)}`, { key: p.secretKey })).body)).toBe(0);
    expectEnvelope(await srv.api("/activity/recent-count?since=garbage", { key: p.secretKey }), 400);
  });

  test("/activity/upcoming takes limit and stays a bare array", async () => {
    const res = await srv.api("/activity/upcoming?limit=5", { key: p.secretKey });
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
  });

  test("a member's session with X-Project-Id reads the feed", async () => {
    const res = await srv.api("/activity", asSession(p));
    expect(res.status).toBe(200);
    expect(items(res.body).length).toBe(4);
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("security", () => {
  const SECURITY_KEYS = ["bounceRate", "bounces", "complaintRate", "complaints", "disabled", "disabledReason", "sends", "suspensions", "windowDays"];

  test("both paths: { bounceRate, complaintRate, sends, bounces, complaints, windowDays: 30, disabled, disabledReason, suspensions }", async () => {
    const p = await newProject(srv.api, acc, "Security");
    const zero = { bounceRate: 0, complaintRate: 0, sends: 0, bounces: 0, complaints: 0, windowDays: 30, disabled: false, disabledReason: null, suspensions: [] };
    for (const res of [
      await srv.api(`/users/@me/projects/${p.projectId}/security`, { cookie: p.cookie }),
      await srv.api(`/projects/${p.projectId}/security`, { key: p.secretKey }),
      await srv.api(`/projects/${p.projectId}/security`, { cookie: p.cookie }),
    ]) {
      expect(res.status).toBe(200);
      for (const k of SECURITY_KEYS) expect(res.body).toHaveProperty(k);
      expect(res.body).toMatchObject(zero);
    }
  });

  test("sends are counted; rates stay in percent", async () => {
    const p = await newProject(srv.api, acc, "Security sends");
    await addVerifiedDomain(srv.api, dns, p, "sec.bb.example");
    const r = await sendOne(p, "s@sec.bb.example", rcpt("sec"));
    expectOk(r);
    const id = r.body.data.emails[0].email;
    await eventually(() => emailStatus(p, id), (v) => v.status === "DELIVERED", "DELIVERED");
    const res = await srv.api(`/projects/${p.projectId}/security`, { key: p.secretKey });
    expect(res.body).toMatchObject({ sends: 1, bounces: 0, complaints: 0, bounceRate: 0, complaintRate: 0, disabled: false });
    const res2 = await srv.api(`/users/@me/projects/${p.projectId}/security`, { cookie: p.cookie });
    expect(res2.body).toMatchObject({ sends: 1, bounces: 0, complaints: 0, bounceRate: 0, complaintRate: 0, windowDays: 30 });
  });

  test("another project's security is 404; the public key 401 INVALID_API_KEY", async () => {
    const p = await newProject(srv.api, acc, "Security other");
    expectEnvelope(await srv.api(`/projects/${p.projectId}/security`, { key: stranger.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/projects/${p.projectId}/security`, { cookie: stranger.cookie }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/projects/${p.projectId}/security`, { key: p.publicKey }), 401, "INVALID_API_KEY");
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("project reset", () => {
  test("OWNER only; deletes contacts, events, templates and uploads; keeps keys, domains, webhook endpoints and this month's consumption", async () => {
    const p = await newProject(srv.api, acc, "Reset");
    await addVerifiedDomain(srv.api, dns, p, "reset.bb.example");
    // Subscribed before anything happens, so the log has deliveries to lose.
    const hook = await srv.api("/webhook-endpoints", { key: p.secretKey, body: { url: "http://127.0.0.1:9/x", events: ["*"] } });
    expect(hook.status).toBe(201);
    expectOk(await sendOne(p, "r@reset.bb.example", rcpt("reset")));
    expectOk(await srv.api("/v1/track", { key: p.publicKey, body: { email: "x@reset-bb.example", event: "e" } }));
    expect((await srv.api("/templates", { key: p.secretKey, body: { name: "T", subject: "S", body: "<p>B</p>", from: "r@reset.bb.example" } })).status).toBe(201);
    const form = new FormData();
    form.append("file", new Blob([IMAGES.png.bytes], { type: "image/png" }), "a.png");
    const up = await srv.api("/uploads/image", { method: "POST", raw: form, key: p.secretKey });
    expect(up.status).toBe(201);
    await eventually(
      async () => items((await srv.api(`/webhook-endpoints/${hook.body.id}/deliveries`, { key: p.secretKey })).body),
      (l) => l.length > 0,
      "a delivery in the log",
    );
    const member = await createAccount(srv.api, "Reset member");
    expectOk(await srv.api(`/projects/${p.projectId}/members`, { cookie: p.cookie, body: { email: member.email, role: "ADMIN" } }));
    await srv.drainJobs();

    expectEnvelope(await srv.api(`/users/@me/projects/${p.projectId}/reset`, { method: "POST", cookie: member.cookie }), 403);
    expectEnvelope(await srv.api(`/users/@me/projects/${p.projectId}/reset`, { method: "POST", key: p.secretKey }), 401);
    expect((await srv.api("/contacts", { key: p.secretKey })).body.total).toBe(2);

    expectOk(await srv.api(`/users/@me/projects/${p.projectId}/reset`, { method: "POST", cookie: p.cookie }));
    expect((await srv.api("/contacts", { key: p.secretKey })).body.total).toBe(0);
    expect(items((await srv.api("/events", { key: p.secretKey })).body)).toEqual([]);
    expect((await srv.api("/templates", { key: p.secretKey })).body.total).toBe(0);
    expect((await srv.api("/uploads", { key: p.secretKey })).body.total).toBe(0);
    expect((await srv.api("/emails", { key: p.secretKey })).body.total).toBe(0);
    expect((await fetch(up.body.url)).status).toBe(404);
    // Kept: keys, domains, webhook endpoints, members, consumption.
    expect((await srv.api(`/webhook-endpoints/${hook.body.id}`, { key: p.secretKey })).status).toBe(200);
    expect(items((await srv.api(`/webhook-endpoints/${hook.body.id}/deliveries`, { key: p.secretKey })).body)).toEqual([]);
    const domains = await srv.api(`/domains/project/${p.projectId}`, { key: p.secretKey });
    expect(domains.body.map((d: any) => d.domain)).toEqual(["reset.bb.example"]);
    expect((await srv.api(`/projects/${p.projectId}/members`, { cookie: p.cookie })).status).toBe(200);
    const c = await srv.api(`/users/@me/projects/${p.projectId}/billing-consumption`, { cookie: p.cookie });
    expect(c.body.transactional.used).toBe(1);
    expectOk(await srv.api("/v1/track", { key: p.publicKey, body: { email: "y@reset-bb.example", event: "e" } }));
  });
});

// ---------------------------------------------------------------------------------------------------------------
describe("API description", () => {
  test("GET /openapi.json (no key) is OpenAPI 3.1 and describes every route of the spec and decisions", async () => {
    const res = await srv.api("/openapi.json");
    expect(res.status).toBe(200);
    expect(String(res.body.openapi)).toMatch(/^3\.1\./);
    expect(res.body.info).toBeObject();
    const norm = (p: string) => p.replace(/\{[^}]+\}/g, "{}").replace(/:[A-Za-z_]+/g, "{}");
    const have = new Set<string>();
    for (const [path, ops] of Object.entries(res.body.paths as Record<string, Record<string, unknown>>)) {
      for (const m of Object.keys(ops)) have.add(`${m.toUpperCase()} ${norm(path)}`);
    }
    const routes = `
      POST /v1/send; POST /v1/track; POST /v1/verify
      GET /contacts; POST /contacts; GET /contacts/:id; PATCH /contacts/:id; DELETE /contacts/:id; POST /contacts/lookup
      GET /contacts/fields; GET /contacts/fields/:f/values; GET /contacts/fields/:f/usage; DELETE /contacts/fields/:f
      POST /contacts/import; GET /contacts/import/:j; POST /contacts/bulk-subscribe; POST /contacts/bulk-unsubscribe
      POST /contacts/bulk-delete; GET /contacts/bulk/:j
      GET /templates; POST /templates; GET /templates/:id; PATCH /templates/:id; DELETE /templates/:id
      POST /templates/:id/duplicate; GET /templates/:id/usage
      GET /campaigns; POST /campaigns; GET /campaigns/:id; PUT /campaigns/:id; DELETE /campaigns/:id
      POST /campaigns/:id/duplicate; POST /campaigns/:id/send; POST /campaigns/:id/cancel; POST /campaigns/:id/test; GET /campaigns/:id/stats
      GET /segments; POST /segments; GET /segments/:id; PATCH /segments/:id; DELETE /segments/:id; GET /segments/:id/contacts
      POST /segments/:id/members; DELETE /segments/:id/members; POST /segments/:id/compute; POST /segments/:id/refresh
      GET /workflows; GET /workflows/fields; POST /workflows; GET /workflows/:id; PATCH /workflows/:id; DELETE /workflows/:id
      POST /workflows/:id/steps; PATCH /workflows/:id/steps/:s; DELETE /workflows/:id/steps/:s
      POST /workflows/:id/transitions; DELETE /workflows/:id/transitions/:t
      POST /workflows/:id/executions; GET /workflows/:id/executions; GET /workflows/:id/executions/:e
      DELETE /workflows/:id/executions/:e; POST /workflows/:id/executions/cancel-all
      POST /events/track; GET /events; GET /events/stats; GET /events/contact/:c; GET /events/names
      GET /events/:n/usage; DELETE /events/:n
      GET /domains/project/:p; POST /domains; GET /domains/:id/verify; DELETE /domains/:id
      GET /activity; GET /activity/stats; GET /activity/recent-count; GET /activity/types; GET /activity/upcoming
      GET /analytics/timeseries; GET /analytics/top-campaigns; GET /analytics/campaign-stats; GET /analytics/top-events
      POST /uploads/image; GET /uploads; DELETE /uploads/:id; GET /config
      POST /auth/login; POST /auth/signup; GET /auth/logout; GET /auth/oauth-config; POST /auth/verify-email
      POST /auth/request-verification; POST /auth/request-password-reset; POST /auth/reset-password
      GET /users/@me; GET /users/@me/projects; POST /users/@me/projects; PATCH /users/@me/projects/:id; DELETE /users/@me/projects/:id
      POST /users/@me/projects/:id/regenerate-keys; POST /users/@me/projects/:id/checkout; POST /users/@me/projects/:id/billing-portal
      GET /users/@me/projects/:id/billing-limits; PUT /users/@me/projects/:id/billing-limits
      GET /users/@me/projects/:id/billing-consumption; GET /users/@me/projects/:id/billing-invoices
      GET /users/@me/projects/:id/security; POST /users/@me/projects/:id/reset
      GET /projects/:id/setup-state; GET /projects/:id/security; GET /projects/:id/members; POST /projects/:id/members
      PATCH /projects/:id/members/:u; DELETE /projects/:id/members/:u
      POST /webhooks/sns; POST /webhooks/incoming/stripe
      GET /emails; GET /emails/:id
      POST /webhook-endpoints; GET /webhook-endpoints; GET /webhook-endpoints/:id; PATCH /webhook-endpoints/:id
      DELETE /webhook-endpoints/:id; GET /webhook-endpoints/:id/deliveries; POST /webhook-endpoints/:id/test`
      .split(/[;\n]/)
      .map((s) => s.trim())
      .filter(Boolean);
    const missing = routes.filter((r) => {
      const [m, p] = r.split(" ");
      return !have.has(`${m} ${norm(p!)}`);
    });
    expect(missing).toEqual([]);
    // Every operation states its auth and its responses; /config is public.
    for (const [path, ops] of Object.entries(res.body.paths as Record<string, Record<string, any>>)) {
      for (const [m, op] of Object.entries(ops)) {
        expect({ op: `${m} ${path}`, security: Array.isArray(op.security) }).toEqual({ op: `${m} ${path}`, security: true });
        expect(Object.keys(op.responses ?? {}).length).toBeGreaterThan(0);
      }
    }
    expect(res.body.paths["/config"].get.security).toEqual([]);
    const params = (res.body.paths["/analytics/timeseries"].get.parameters ?? []).map((p: any) => p.name);
    for (const n of ["from", "to", "interval"]) expect(params).toContain(n);
    expect(Object.keys(res.body.paths["/uploads/image"].post.requestBody.content)).toContain("multipart/form-data");
  });

  test("GET /docs renders it (HTML, no key)", async () => {
    const res = await srv.api("/docs");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type") ?? "").toContain("text/html");
    expect(res.text.toLowerCase()).toContain("openapi.json");
  });
});

// Black-box: outbound webhooks end to end. Each documented event type reaches the endpoints subscribed to it (by
// name, by wildcard, by a subset) with its `type` and `data`, signed with the endpoint's secret; disabled, deleted
// and other projects' endpoints get nothing; the signature's timestamp is the service's clock; a receiver that is
// down gets the delivery once it is back (same `webhook-id`), also across a restart of the service.
// Written from decisions.md ("Outbound webhooks", "Delivery, events, tracking", "Segments and conditions") and the
// README ("Outbound webhooks (`/webhook-endpoints`)", "Tracking, subscription pages and inbound mail"); never from the
// code. CRUD, the test ping, retries to FAILED and address refusals are in analytics-billing.test.ts and test/webhooks/.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Webhook } from "standardwebhooks";
import { deliveryEnv, lastMessageFor, type DeliveryEnv } from "../support/delivery";
import { createAccount, freeTcpPort, makeApi, spawnServer, startServer, type Account, type Api, type SpawnedServer, type TestServer } from "../support/server";
import { sendSmtp } from "../support/smtp-client";
import { waitFor } from "../support/wait";
import { startReceiver, type Received as Hit, type Receiver } from "../webhooks/support";
import { arfReport, expectOk, hrefs, imgs, isIsoDate, newProject, UUID } from "./support";
import { addresses, items, lookupContact } from "../support/api";

setDefaultTimeout(30_000);

const RCPT_DOMAIN = "wh-more-inbox.example";
const FROM_DOMAIN = "wh-more-send.example";
const LANDING = "https://landing.wh-more.example/go?x=1";

// ---- receivers: real HTTP servers on 127.0.0.1 that record every request (test/webhooks/support.ts) ----
/** Verifies with the `standardwebhooks` package (README: "Verify with any Standard Webhooks library"); returns the body. */
function verifyLib(secret: string, h: Hit): any {
  return new Webhook(secret).verify(h.body, {
    "webhook-id": h.headers["webhook-id"]!,
    "webhook-timestamp": h.headers["webhook-timestamp"]!,
    "webhook-signature": h.headers["webhook-signature"]!,
  });
}
/** Verifies by hand: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed by the base64 part of `whsec_…`. */
function verifyByHand(secret: string, h: Hit): void {
  const id = h.headers["webhook-id"]!;
  const ts = h.headers["webhook-timestamp"]!;
  expect(ts).toMatch(/^\d+$/);
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const sig = createHmac("sha256", key).update(`${id}.${ts}.${h.body}`).digest("base64");
  expect(h.headers["webhook-signature"]!.split(" ")).toContain(`v1,${sig}`);
}

// ---- the shared environment: DNS, SMTP sink, inbound listener, a project with a verified domain and tracking on ----
let env: DeliveryEnv;
let srv: TestServer;
let acc: Account;
let rx: Receiver;
let inboundPort: number;
const FROM = `hello@${FROM_DOMAIN}`;
let seq = 0;
const rcpt = addresses(RCPT_DOMAIN);

beforeAll(async () => {
  inboundPort = await freeTcpPort();
  env = await deliveryEnv({
    name: "BB webhooks more",
    mailDomain: RCPT_DOMAIN,
    senderDomain: FROM_DOMAIN,
    config: { allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000], retryScheduleMs: [1000, 2000], inboundSmtpPort: inboundPort },
  });
  ({ srv, acct: acc } = env);
  // Opens and clicks of transactional mail are tracked only in ENABLED mode (decisions.md "Tracking per project").
  expectOk(await srv.api(`/users/@me/projects/${acc.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking: "ENABLED" } }));
  rx = startReceiver();
}, 60_000);
afterAll(async () => {
  rx?.close();
  await env?.close();
});

async function endpoint(a: Account, body: Record<string, unknown>) {
  const r = await srv.api("/webhook-endpoints", { key: a.secretKey, body });
  if (r.status !== 201) throw new Error(`endpoint create: ${r.status} ${r.text}`);
  return r.body as { id: string; secret: string; url: string; events: string[]; enabled: boolean };
}
const send = async (to: string, extra: Record<string, unknown> = {}) => {
  const res = await srv.api("/v1/send", { key: acc.secretKey, body: { to, from: FROM, subject: "Hello", body: "<p>Hi</p>", ...extra } });
  expectOk(res);
  return { id: res.body.data.emails[0].email as string, contactId: res.body.data.emails[0].contact.id as string };
};
const emailStatus = (id: string, status: string, advanceMs = 0) =>
  waitFor(
    async () => {
      if (advanceMs) srv.clock.advance(advanceMs);
      await srv.drainJobs();
      return (await srv.api(`/emails/${id}`, { key: acc.secretKey })).body;
    },
    { until: (v) => v?.status === status, what: `email ${id} ${status}` },
  );
const messageFor = (address: string) => lastMessageFor(env, address);
const lookup = (a: Account, email: string) => lookupContact(srv.api, a, email);
const ours = (u: string) => u.startsWith(srv.ctx.config.publicUrl);
const deliverInbound = (mailFrom: string, rcptTo: string, raw: string) => sendSmtp(inboundPort, { from: mailFrom, to: [rcptTo], raw }, { ignoreTLS: true });

const EMAIL_TYPES = [
  "email.sent",
  "email.delivery",
  "email.deferred",
  "email.failed",
  "email.bounce",
  "email.complaint",
  "email.suppressed",
  "email.open",
  "email.click",
  "email.received",
];
const CONTACT_TYPES = ["contact.subscribed", "contact.unsubscribed"];

describe("every documented event reaches the endpoints subscribed to it", () => {
  test("one endpoint per event name, the four wildcards, a subset; disabled, deleted and other projects' endpoints get nothing", async () => {
    // A tracked segment (decisions.md: entry/exit with data { segmentId, segmentName }).
    const seg = await srv.api("/segments", {
      key: acc.secretKey,
      body: { name: "WH More Pro", trackMembership: true, condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
    });
    expect(seg.status).toBe(201);
    const slug: string = seg.body.slug;
    expect(slug).toBe("wh-more-pro");
    const SEGMENT_TYPES = [`segment.${slug}.entry`, `segment.${slug}.exit`];
    const ALL_TYPES = [...EMAIL_TYPES, ...CONTACT_TYPES, ...SEGMENT_TYPES];

    const one = new Map<string, Awaited<ReturnType<typeof endpoint>>>();
    for (const name of ALL_TYPES) one.set(name, await endpoint(acc, { url: `${rx.url}/one/${name}`, events: [name] }));
    const star = await endpoint(acc, { url: `${rx.url}/all`, events: ["*"] });
    const emailStar = await endpoint(acc, { url: `${rx.url}/email`, events: ["email.*"] });
    const contactStar = await endpoint(acc, { url: `${rx.url}/contact`, events: ["contact.*"] });
    const segmentStar = await endpoint(acc, { url: `${rx.url}/segment`, events: ["segment.*"] });
    const subset = await endpoint(acc, { url: `${rx.url}/subset`, events: ["email.bounce", "contact.unsubscribed"] });
    const disabled = await endpoint(acc, { url: `${rx.url}/disabled`, events: ["*"], enabled: false });
    expect(disabled.enabled).toBe(false);
    const deleted = await endpoint(acc, { url: `${rx.url}/deleted`, events: ["*"] });
    expectOk(await srv.api(`/webhook-endpoints/${deleted.id}`, { method: "DELETE", key: acc.secretKey }));
    const other = await newProject(srv.api, acc, "WH other");
    const otherEp = await endpoint(other, { url: `${rx.url}/other`, events: ["*"] });

    // --- the events ---
    // contact.subscribed: a contact created unsubscribed, then subscribed.
    const subTo = rcpt("sub");
    const sub = await srv.api("/contacts", { key: acc.secretKey, body: { email: subTo, subscribed: false } });
    expect(sub.status).toBe(201);
    expectOk(await srv.api(`/contacts/${sub.body.id}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: true } }));
    // The other project's own event (its endpoint gets it; mine do not).
    const otherTo = rcpt("other");
    const oc = await srv.api("/contacts", { key: other.secretKey, body: { email: otherTo, subscribed: false } });
    expect(oc.status).toBe(201);
    expectOk(await srv.api(`/contacts/${oc.body.id}`, { method: "PATCH", key: other.secretKey, body: { subscribed: true } }));

    // email.sent, email.delivery, email.open, email.click, then email.complaint (+ contact.unsubscribed).
    const okTo = rcpt("ok");
    const ok = await send(okTo, { subscribed: true, body: `<p>Hi <a href="${LANDING}">go</a></p>` });
    await emailStatus(ok.id, "DELIVERED");
    const okMsg = await messageFor(okTo);
    const html = String((await okMsg.parse()).html || "");
    const pixel = imgs(html).find(ours);
    const link = hrefs(html).find((h) => ours(h) && h.includes("/t/c/"));
    expect(pixel).toBeDefined();
    expect(link).toBeDefined();
    await (await fetch(pixel!)).arrayBuffer();
    const click = await fetch(link!, { redirect: "manual" });
    await click.arrayBuffer();
    expect(click.headers.get("location")).toBe(LANDING);
    await emailStatus(ok.id, "CLICKED");
    expect((await deliverInbound("", "fbl@mailsvc.test", arfReport(RCPT_DOMAIN, okTo, "fbl@mailsvc.test", okMsg.raw))).ok).toBe(true);
    await emailStatus(ok.id, "COMPLAINED");

    // email.deferred on each 4xx retry, then email.failed (MAILSVC_RETRY_SCHEDULE 1s,2s: two retries).
    const deferTo = rcpt("defer");
    const bounceTo = rcpt("bounce");
    env.sink.onRcpt = (r) => (r === deferTo ? { code: 451, message: "4.7.1 try later" } : r === bounceTo ? { code: 550, message: "5.1.1 no such user" } : undefined);
    const deferred = await send(deferTo);
    await emailStatus(deferred.id, "FAILED", 1000);

    // email.bounce (+ contact.unsubscribed), then a later send is email.suppressed.
    const bounced = await send(bounceTo, { subscribed: true });
    await emailStatus(bounced.id, "BOUNCED");
    const suppressed = await send(bounceTo);
    await emailStatus(suppressed.id, "SUPPRESSED");
    env.sink.onRcpt = () => undefined;

    // email.received: other mail to an address of a verified domain, on the sender's contact.
    const writer = `writer${++seq}@elsewhere-wh-more.example`;
    const raw = [`From: ${writer}`, `To: support@${FROM_DOMAIN}`, "Subject: Question", `Message-ID: <q${seq}@elsewhere-wh-more.example>`, "", "Hello there", ""].join("\r\n");
    expect((await deliverInbound(writer, `support@${FROM_DOMAIN}`, raw)).ok).toBe(true);
    const writerContact = await waitFor(
      async () => {
        await srv.drainJobs();
        return lookup(acc, writer);
      },
      { what: `contact ${writer}` },
    );

    // Segment entry, then exit.
    const proTo = rcpt("pro");
    const pro = await srv.api("/contacts", { key: acc.secretKey, body: { email: proTo, data: { plan: "pro" } } });
    expect(pro.status).toBe(201);
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { method: "POST", key: acc.secretKey }));
    await waitFor(
      async () => {
        await srv.drainJobs();
        return rx.at(`/one/segment.${slug}.entry`).length;
      },
      { until: (n) => n >= 1, what: "the segment entry webhook" },
    );
    expectOk(await srv.api(`/contacts/${pro.body.id}`, { method: "PATCH", key: acc.secretKey, body: { data: { plan: "free" } } }));
    expectOk(await srv.api(`/segments/${seg.body.id}/compute`, { method: "POST", key: acc.secretKey }));

    // --- what each endpoint must have received ---
    type Want = { emailId?: string; contactId?: string; contactEmail: string; data?: Record<string, unknown> };
    const wants: Record<string, Want[]> = {
      "email.sent": [{ emailId: ok.id, contactId: ok.contactId, contactEmail: okTo }, { emailId: deferred.id, contactId: deferred.contactId, contactEmail: deferTo }],
      "email.delivery": [{ emailId: ok.id, contactId: ok.contactId, contactEmail: okTo }],
      "email.open": [{ emailId: ok.id, contactId: ok.contactId, contactEmail: okTo }],
      "email.click": [{ emailId: ok.id, contactId: ok.contactId, contactEmail: okTo, data: { link: LANDING } }],
      "email.complaint": [{ emailId: ok.id, contactId: ok.contactId, contactEmail: okTo }],
      "email.deferred": [
        { emailId: deferred.id, contactId: deferred.contactId, contactEmail: deferTo, data: { to: deferTo, code: 451, attempt: 1 } },
        { emailId: deferred.id, contactId: deferred.contactId, contactEmail: deferTo, data: { to: deferTo, code: 451, attempt: 2 } },
      ],
      "email.failed": [{ emailId: deferred.id, contactId: deferred.contactId, contactEmail: deferTo, data: { to: deferTo, code: 451, attempt: 3 } }],
      "email.bounce": [{ emailId: bounced.id, contactId: bounced.contactId, contactEmail: bounceTo }],
      "email.suppressed": [{ emailId: suppressed.id, contactId: suppressed.contactId, contactEmail: bounceTo }],
      "email.received": [{ contactId: writerContact.id, contactEmail: writer, data: { from: writer } }],
      "contact.subscribed": [{ contactId: sub.body.id, contactEmail: subTo }],
      "contact.unsubscribed": [
        { contactId: ok.contactId, contactEmail: okTo },
        { contactId: bounced.contactId, contactEmail: bounceTo },
      ],
      [`segment.${slug}.entry`]: [{ contactId: pro.body.id, contactEmail: proTo, data: { segmentId: seg.body.id, segmentName: "WH More Pro" } }],
      [`segment.${slug}.exit`]: [{ contactId: pro.body.id, contactEmail: proTo, data: { segmentId: seg.body.id, segmentName: "WH More Pro" } }],
    };
    const matches = (h: Hit, w: Want) =>
      h.json?.data?.contactEmail === w.contactEmail &&
      (w.contactId === undefined || h.json.data.contactId === w.contactId) &&
      (w.emailId === undefined || h.json.data.emailId === w.emailId) &&
      Object.entries(w.data ?? {}).every(([k, v]) => h.json.data[k] === v);
    const missing = () =>
      Object.entries(wants).flatMap(([name, list]) => list.filter((w) => !rx.at(`/one/${name}`).some((h) => matches(h, w))).map((w) => `${name} ${JSON.stringify(w)}`));
    const stillMissing = await waitFor(
      async () => {
        await srv.drainJobs();
        return missing();
      },
      { until: (m) => m.length === 0, what: "every event at its own endpoint" },
    ).catch(() => missing());
    // Reported with what did arrive (a wrong contactEmail shows here rather than as a timeout).
    if (stillMissing.length) {
      const got = Object.fromEntries(Object.keys(wants).map((n) => [n, rx.at(`/one/${n}`).map((h) => h.json?.data)]));
      throw new Error(`missing: ${stillMissing.join("; ")}\nreceived: ${JSON.stringify(got)}`);
    }

    // Each single-name endpoint: only its own type; { type, timestamp, data } signed with its secret; data carries
    // eventId, contactId, contactEmail and (events of a sent email) emailId.
    const eventIds = new Map<string, Set<string>>();
    for (const name of ALL_TYPES) {
      const ep = one.get(name)!;
      const got = rx.at(`/one/${name}`);
      expect(got.map((h) => h.json.type)).toEqual(got.map(() => name));
      for (const h of got) {
        expect(verifyLib(ep.secret, h)).toEqual(h.json);
        expect(Object.keys(h.json).sort()).toEqual(["data", "timestamp", "type"]);
        expect(isIsoDate(h.json.timestamp)).toBe(true);
        expect(h.json.data.eventId).toEqual(expect.any(String));
        expect(h.json.data.contactId).toMatch(UUID);
        expect(h.headers["content-type"]).toContain("application/json");
        if (name.startsWith("email.") && name !== "email.received") expect(h.json.data.emailId).toMatch(UUID);
      }
      // One delivery per event: no event id twice at one endpoint.
      const ids = got.map((h) => h.json.data.eventId as string);
      expect(new Set(ids).size).toBe(ids.length);
      eventIds.set(name, new Set(ids));
    }
    const union = (names: string[]) => new Set(names.flatMap((n) => [...eventIds.get(n)!]));

    // The wildcards get exactly the union of their family (nothing else, nothing twice); each signed with its own secret.
    const settledAt = async (path: string, want: Set<string>) =>
      waitFor(
        async () => {
          await srv.drainJobs();
          return rx.at(path);
        },
        { until: (hs) => [...want].every((id) => hs.some((h) => h.json?.data?.eventId === id)), what: `${want.size} events at ${path}` },
      );
    for (const [path, ep, names] of [
      ["/all", star, ALL_TYPES],
      ["/email", emailStar, EMAIL_TYPES],
      ["/contact", contactStar, CONTACT_TYPES],
      ["/segment", segmentStar, SEGMENT_TYPES],
      ["/subset", subset, ["email.bounce", "contact.unsubscribed"]],
    ] as const) {
      const want = union([...names]);
      // `*` also carries the suppression list's own events (README "Outbound webhooks"): the complaint and the bounce
      // suppressed their addresses.
      const all = await settledAt(path, want);
      const sup = all.filter((h) => String(h.json?.type).startsWith("suppression."));
      expect(sup.map((h) => [h.json.type, h.json.data.email, h.json.data.reason]).sort()).toEqual(
        path === "/all" ? [["suppression.created", bounceTo, "HARD_BOUNCE"], ["suppression.created", okTo, "COMPLAINT"]] : [],
      );
      const got = all.filter((h) => !sup.includes(h));
      expect(got.map((h) => h.json.type).every((t) => (names as readonly string[]).includes(t))).toBe(true);
      const ids = got.map((h) => h.json.data.eventId as string);
      expect(new Set(ids).size).toBe(ids.length);
      expect(new Set(ids)).toEqual(want);
      for (const h of got) {
        expect(verifyLib(ep.secret, h)).toEqual(h.json);
        expect(() => verifyLib(one.get(h.json.type)!.secret, h)).toThrow(); // another endpoint's secret does not verify
      }
      // The same event carries the same body to every endpoint; only the delivery (webhook-id) differs.
      for (const h of got) {
        const single = rx.at(`/one/${h.json.type}`).find((x) => x.json.data.eventId === h.json.data.eventId)!;
        expect(h.json).toEqual(single.json);
        expect(h.headers["webhook-id"]).not.toBe(single.headers["webhook-id"]);
      }
    }

    // The deliveries log of an endpoint names each delivery by the webhook-id it was sent with.
    const clickEp = one.get("email.click")!;
    const log = await waitFor(async () => items((await srv.api(`/webhook-endpoints/${clickEp.id}/deliveries`, { key: acc.secretKey })).body), {
      until: (l) => l.length > 0 && l.every((d) => d.status === "DELIVERED"),
      what: "the email.click deliveries DELIVERED",
    });
    expect(log.map((d) => d.id).sort()).toEqual(rx.at("/one/email.click").map((h) => h.headers["webhook-id"]).sort());
    for (const d of log) expect(d).toMatchObject({ event: "email.click", status: "DELIVERED", attempts: 1, responseStatus: 200 });

    // Disabled and deleted endpoints got nothing; the other project's endpoint got only its own contact's event.
    expect(rx.at("/disabled")).toHaveLength(0);
    expect(rx.at("/deleted")).toHaveLength(0);
    expect(items((await srv.api(`/webhook-endpoints/${disabled.id}/deliveries`, { key: acc.secretKey })).body)).toHaveLength(0);
    const otherGot = await waitFor(async () => rx.at("/other"), { until: (hs) => hs.length >= 1, what: "the other project's event" });
    for (const h of otherGot) {
      verifyLib(otherEp.secret, h);
      expect(h.json.data.contactEmail).toBe(otherTo);
    }
    expect(otherGot.map((h) => h.json.type)).toEqual(["contact.subscribed"]);
    for (const h of rx.received.filter((x) => x.path !== "/other")) expect(h.json.data.contactEmail).not.toBe(otherTo);
  });

  test("an endpoint re-enabled or re-subscribed by PATCH gets later events, not the ones it missed", async () => {
    const ep = await endpoint(acc, { url: `${rx.url}/patched`, events: ["contact.subscribed"], enabled: false });
    const first = rcpt("patch");
    const c1 = await srv.api("/contacts", { key: acc.secretKey, body: { email: first, subscribed: true } });
    expect(c1.status).toBe(201);
    expectOk(await srv.api(`/contacts/${c1.body.id}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: false } }));
    await srv.drainJobs();
    // Enabled and moved to contact.unsubscribed: the next unsubscribe arrives, the earlier one does not.
    const p = await srv.api(`/webhook-endpoints/${ep.id}`, { method: "PATCH", key: acc.secretKey, body: { enabled: true, events: ["contact.unsubscribed"] } });
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ enabled: true, events: ["contact.unsubscribed"] });
    const second = rcpt("patch");
    const c2 = await srv.api("/contacts", { key: acc.secretKey, body: { email: second, subscribed: true } });
    expectOk(await srv.api(`/contacts/${c2.body.id}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: false } }));
    const [got] = await waitFor(
      async () => {
        await srv.drainJobs();
        return rx.at("/patched");
      },
      { until: (hs) => hs.length >= 1, what: "the unsubscribe after the PATCH" },
    );
    expect(verifyLib(ep.secret, got!)).toMatchObject({ type: "contact.unsubscribed", data: { contactId: c2.body.id, contactEmail: second } });
    // A later event the endpoint is subscribed to flushes the pipeline: by then nothing about the first contact came.
    const third = rcpt("patch");
    const c3 = await srv.api("/contacts", { key: acc.secretKey, body: { email: third, subscribed: true } });
    expectOk(await srv.api(`/contacts/${c3.body.id}`, { method: "PATCH", key: acc.secretKey, body: { subscribed: false } }));
    await waitFor(async () => rx.at("/patched"), { until: (hs) => hs.some((h) => h.json.data.contactEmail === third), what: "the third unsubscribe" });
    expect(rx.at("/patched").map((h) => h.json.data.contactEmail)).toEqual([second, third]);
  });
});

describe("signing time and recovery", () => {
  let s: TestServer;
  let a: Account;
  beforeAll(async () => {
    s = await startServer({ config: { allowPrivateWebhooks: true, webhookRetryScheduleMs: [1000, 2000, 4000] } });
    a = await createAccount(s.api, "WH clock");
  });
  afterAll(() => s?.close());

  const unsubscribeOne = async (api: Api, acct: Account, email: string) => {
    const c = await api("/contacts", { key: acct.secretKey, body: { email, subscribed: true } });
    expect(c.status).toBe(201);
    expectOk(await api(`/contacts/${c.body.id}`, { method: "PATCH", key: acct.secretKey, body: { subscribed: false } }));
    return c.body.id as string;
  };

  test("webhook-timestamp is the service clock at the attempt (seconds), in step with the body's timestamp", async () => {
    const r = startReceiver();
    try {
      const ep = (await s.api("/webhook-endpoints", { key: a.secretKey, body: { url: `${r.url}/ts`, events: ["contact.unsubscribed"] } })).body;
      s.clock.advance(2 * 3600_000); // the service's clock is two hours ahead of this machine's
      const before = s.clock.now();
      await unsubscribeOne(s.api, a, "clock@wh-more.example");
      const [h] = await waitFor(async () => r.at("/ts"), { until: (hs) => hs.length >= 1, what: "the webhook" });
      const after = s.clock.now();
      verifyByHand(ep.secret, h!);
      const ts = Number(h!.headers["webhook-timestamp"]) * 1000;
      expect(ts).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
      expect(ts).toBeLessThanOrEqual(after);
      const bodyTs = Date.parse(h!.json.timestamp);
      expect(bodyTs).toBeGreaterThanOrEqual(before);
      expect(bodyTs).toBeLessThanOrEqual(after);
    } finally {
      r.close();
    }
  });

  test("a receiver that is down gets the delivery once it is back, with the same webhook-id", async () => {
    const port = await freeTcpPort(); // nothing listens there yet
    const ep = (await s.api("/webhook-endpoints", { key: a.secretKey, body: { url: `http://127.0.0.1:${port}/back`, events: ["contact.unsubscribed"] } })).body;
    const contactId = await unsubscribeOne(s.api, a, "down@wh-more.example");
    const pending = await waitFor(async () => items((await s.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: a.secretKey })).body)[0], {
      until: (d) => d?.attempts === 1,
      what: "a first failed attempt",
    });
    expect(pending).toMatchObject({ status: "PENDING", attempts: 1, responseStatus: null, deliveredAt: null });
    expect(typeof pending.error).toBe("string");
    const r = startReceiver(port);
    try {
      s.clock.advance(1000);
      const [h] = await waitFor(async () => r.at("/back"), { until: (hs) => hs.length >= 1, what: "the retried webhook" });
      expect(h!.headers["webhook-id"]).toBe(pending.id);
      verifyByHand(ep.secret, h!);
      expect(h!.json).toMatchObject({ type: "contact.unsubscribed", data: { contactId, contactEmail: "down@wh-more.example" } });
      const done = await waitFor(async () => items((await s.api(`/webhook-endpoints/${ep.id}/deliveries`, { key: a.secretKey })).body)[0], {
        until: (d) => d?.status === "DELIVERED",
        what: "the delivery DELIVERED",
      });
      expect(done).toMatchObject({ id: pending.id, attempts: 2, responseStatus: 200 });
    } finally {
      r.close();
    }
  });

  test("durable: the receiver is down, the service is killed and restarted, the receiver comes back; the delivery arrives with its webhook-id", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mailsvc-wh-more-"));
    const port = await freeTcpPort();
    const spawnEnv = { MAILSVC_DB: join(dir, "wh.db"), MAILSVC_ALLOW_PRIVATE_WEBHOOKS: "true", MAILSVC_WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s,1s,1s,1s,1s", MAILSVC_RATE_LIMIT: "1000000" };
    let proc: SpawnedServer | null = null;
    let r: Receiver | null = null;
    try {
      proc = await spawnServer(spawnEnv);
      let api = makeApi(proc.url);
      const acct = await createAccount(api, "WH durable");
      const ep = (await api("/webhook-endpoints", { key: acct.secretKey, body: { url: `http://127.0.0.1:${port}/durable`, events: ["contact.unsubscribed"] } })).body;
      await unsubscribeOne(api, acct, "durable@wh-more.example");
      const pending = await waitFor(async () => items((await api(`/webhook-endpoints/${ep.id}/deliveries`, { key: acct.secretKey })).body)[0], {
        until: (d) => d?.attempts >= 1,
        what: "a failed attempt before the restart",
      });
      expect(pending.status).toBe("PENDING");
      await proc.kill("SIGKILL");
      proc = null;
      r = startReceiver(port);
      proc = await spawnServer(spawnEnv);
      api = makeApi(proc.url);
      const [h] = await waitFor(async () => r!.at("/durable"), { until: (hs) => hs.length >= 1, what: "the delivery after the restart" });
      expect(h!.headers["webhook-id"]).toBe(pending.id);
      expect(verifyLib(ep.secret, h!)).toMatchObject({ type: "contact.unsubscribed", data: { contactEmail: "durable@wh-more.example" } });
      const done = await waitFor(async () => items((await api(`/webhook-endpoints/${ep.id}/deliveries`, { key: acct.secretKey })).body), {
        until: (l) => l.length === 1 && l[0].status === "DELIVERED",
        what: "the delivery DELIVERED",
      });
      expect(done[0].id).toBe(pending.id);
      expect(done[0].attempts).toBeGreaterThanOrEqual(2);
      expect(new Set(r.at("/durable").map((x) => x.headers["webhook-id"]))).toEqual(new Set([pending.id]));
    } finally {
      r?.close();
      await proc?.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

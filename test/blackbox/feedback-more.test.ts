// Black-box: the message log (GET /emails, GET /emails/:id), delivery outcomes as events and activity items,
// tracking (counting, modes per email type, signed tokens), subscription pages and the feedback loop (hard bounces
// at SMTP time and by DSN, ARF complaints, suppression, inbound mail) beyond what emails/tracking/inbound/activity/
// relay/send/campaigns test already. Written from api-spec.md ("Events", "Errors", "Response shapes", "Pagination"),
// decisions.md ("Delivery, events, tracking", "Beyond the spec", "Templates, rendering, types", "Contacts, data,
// import") and the docs/api.md (the API guide); never from the code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import type { TestDns } from "../support/dns";
import { deliveryEnv, lastMessageFor, type DeliveryEnv } from "../support/delivery";
import { createAccount, freeTcpPort, startServer, type Account, type TestServer } from "../support/server";
import { sendSmtp } from "../support/smtp-client";
import { startSmtpSink, type SinkMessage, type SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { arfReport, expectCursorPage, expectEnvelope, expectOk, hrefs, imgs, isIsoDate, newProject, NO_SUCH_ID, rawHeader, UUID } from "./support";
import { addresses, items, lookupContact } from "../support/api";

const RCPT_DOMAIN = "fb-inbox-bb.example";
const LANDING_A = "https://landing.fb-bb.example/a?x=1";
const LANDING_B = "https://landing.fb-bb.example/b";

// decisions.md "Beyond the spec": the message log's fields (`?` ones may be null/absent).
const EMAIL_REQUIRED = ["id", "to", "from", "subject", "status", "sourceType", "contactId", "attempts", "messageId", "createdAt"];
const EMAIL_OPTIONAL = ["campaignId", "templateId", "lastReply", "sentAt", "deliveredAt", "openedAt", "clickedAt", "bouncedAt", "complainedAt"];
// Beyond decisions.md's list, documented in the README ("Activity and the message log").
const EMAIL_EXTRA = ["type", "toName", "fromName", "mxHost", "nextAttemptAt", "failedAt"];
const EMAIL_STATUSES = ["PENDING", "SENDING", "SENT", "DELIVERED", "DEFERRED", "OPENED", "CLICKED", "BOUNCED", "COMPLAINED", "FAILED", "SUPPRESSED", "CANCELLED"];

let srv: TestServer;
let dns: TestDns;
let sink: SmtpSink;
let acc: Account;
let inboundPort: number;
const FROM_DOMAIN = "fb.bb.example";
const FROM = `hello@${FROM_DOMAIN}`;

let env: DeliveryEnv;
beforeAll(async () => {
  inboundPort = await freeTcpPort();
  env = await deliveryEnv({
    name: "BB feedback",
    mailDomain: RCPT_DOMAIN,
    senderDomain: FROM_DOMAIN,
    config: { inboundSmtpPort: inboundPort, retryScheduleMs: [1000, 2000] },
  });
  ({ srv, dns, sink, acct: acc } = env);
});
afterAll(() => env?.close());

let seq = 0;
const rcpt = addresses(RCPT_DOMAIN);

type P = Account & { from: string; domain: string };
/** A new project of the same user with its own verified sender domain (its log and activity are the test's own). */
async function project(label: string, tracking?: string): Promise<P> {
  const p = await newProject(srv.api, acc, `FB ${label}`);
  const domain = `${label}${++seq}.fbp-bb.example`;
  await addVerifiedDomain(srv.api, dns, p, domain);
  if (tracking) expectOk(await srv.api(`/users/@me/projects/${p.projectId}`, { method: "PATCH", cookie: acc.cookie, body: { tracking } }));
  return { ...p, from: `hello@${domain}`, domain };
}

const sendOne = async (p: P, to: string, extra: Record<string, unknown> = {}) => {
  const res = await srv.api("/v1/send", { key: p.secretKey, body: { to, from: p.from, subject: "Hello", body: "<p>Hi</p>", ...extra } });
  expectOk(res);
  return { id: res.body.data.emails[0].email as string, contactId: res.body.data.emails[0].contact.id as string };
};
const view = async (p: Account, id: string) => (await srv.api(`/emails/${id}`, { key: p.secretKey })).body;
/** GET /emails/:id once `until` holds (moving queued work, and optionally the clock, along). */
const viewUntil = (p: Account, id: string, until: (v: any) => boolean, what: string, advanceMs = 0) =>
  waitFor(
    async () => {
      if (advanceMs) srv.clock.advance(advanceMs);
      await srv.drainJobs();
      return view(p, id);
    },
    { until, what: `email ${id} ${what}` },
  );
const viewStatus = (p: Account, id: string, status: string, advanceMs = 0) => viewUntil(p, id, (v) => v?.status === status, status, advanceMs);
const events = async (p: Account, contactId: string): Promise<{ id: string; name: string; contactId: string; data: any; createdAt: string }[]> =>
  items((await srv.api(`/events/contact/${contactId}`, { key: p.secretKey })).body);
const names = async (p: Account, contactId: string) => (await events(p, contactId)).map((e) => e.name);
const count = (list: string[], name: string) => list.filter((n) => n === name).length;
/** The contact's events once `until` holds on their names. */
const eventsUntil = (p: Account, contactId: string, until: (n: string[]) => boolean, what: string) =>
  waitFor(
    async () => {
      await srv.drainJobs();
      return events(p, contactId);
    },
    { until: (evs) => until(evs.map((e) => e.name)), what },
  );
const lookup = (p: Account, email: string) => lookupContact(srv.api, p, email);
const activity = async (p: Account, qs = "") => {
  const res = await srv.api(`/activity${qs}`, { key: p.secretKey });
  expect(res.status).toBe(200);
  return items(res.body);
};
const messageFor = (address: string) => lastMessageFor(env, address);
const ours = (u: string) => u.startsWith(srv.ctx.config.publicUrl);
const htmlOf = async (m: SinkMessage) => String((await m.parse()).html || "");
/** Flips one character of a URL's last path segment (inside its signature). */
const tamper = (u: string) => {
  const url = new URL(u);
  const segs = url.pathname.split("/");
  const t = segs[segs.length - 1]!;
  const i = t.length - 5;
  segs[segs.length - 1] = t.slice(0, i) + (t[i] === "A" ? "B" : "A") + t.slice(i + 1);
  url.pathname = segs.join("/");
  return url.toString();
};

/** Checks one message-log view against decisions.md's field list. */
function expectEmailShape(e: any) {
  for (const k of EMAIL_REQUIRED) expect(e).toHaveProperty(k);
  for (const k of Object.keys(e)) expect([...EMAIL_REQUIRED, ...EMAIL_OPTIONAL, ...EMAIL_EXTRA]).toContain(k);
  expect(e.id).toMatch(UUID);
  expect(EMAIL_STATUSES).toContain(e.status);
  expect(["TRANSACTIONAL", "CAMPAIGN", "WORKFLOW", "SYSTEM"]).toContain(e.sourceType);
  expect(typeof e.attempts).toBe("number");
  expect(isIsoDate(e.createdAt)).toBe(true);
  for (const k of ["sentAt", "deliveredAt", "openedAt", "clickedAt", "bouncedAt", "complainedAt"]) {
    if (e[k] !== undefined && e[k] !== null) expect(isIsoDate(e[k])).toBe(true);
  }
}
const unset = (v: unknown) => v === undefined || v === null;

/** Delivers raw mail to the inbound SMTP listener, as a remote MTA would. */
const deliverInbound = (mailFrom: string, rcptTo: string, raw: string) => sendSmtp(inboundPort, { from: mailFrom, to: [rcptTo], raw }, { ignoreTLS: true });
function headersOf(m: SinkMessage): string {
  const raw = m.raw.toString("utf8");
  const cut = raw.indexOf("\r\n\r\n");
  return raw.slice(0, cut >= 0 ? cut : raw.indexOf("\n\n"));
}
function dsn(to: string, returnPath: string, original: SinkMessage, status: string, action: string) {
  const b = "fb-dsn-b";
  return [
    `From: Mail Delivery System <MAILER-DAEMON@mx.${RCPT_DOMAIN}>`,
    `To: ${returnPath}`,
    "Subject: Delivery Status Notification",
    "MIME-Version: 1.0",
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${b}"`,
    "",
    `--${b}`,
    "Content-Type: text/plain",
    "",
    "Delivery report.",
    `--${b}`,
    "Content-Type: message/delivery-status",
    "",
    `Reporting-MTA: dns; mx.${RCPT_DOMAIN}`,
    "",
    `Final-Recipient: rfc822; ${to}`,
    `Action: ${action}`,
    `Status: ${status}`,
    `Diagnostic-Code: smtp; ${status.startsWith("5") ? "550" : "452"} ${status} ${status.startsWith("5") ? "User unknown" : "Mailbox full"}`,
    `--${b}`,
    "Content-Type: text/rfc822-headers",
    "",
    headersOf(original),
    `--${b}--`,
    "",
  ].join("\r\n");
}

describe("GET /emails/:id: the field set and a DELIVERED message", () => {
  test("exactly the documented fields; DELIVERED with sentAt/deliveredAt; email.sent and email.delivery once each, also in /activity", async () => {
    const p = await project("shape");
    const to = rcpt("shape");
    const before = srv.clock.now();
    const { id, contactId } = await sendOne(p, to, { subject: "Shape check" });
    const e = await viewStatus(p, id, "DELIVERED");
    const after = srv.clock.now();
    expectEmailShape(e);
    expect(e).toMatchObject({ id, to, subject: "Shape check", status: "DELIVERED", sourceType: "TRANSACTIONAL", contactId, attempts: 1 });
    expect(String(e.from)).toContain(p.from);
    expect(unset(e.campaignId)).toBe(true);
    expect(unset(e.templateId)).toBe(true);
    // README "Sending": Message-ID <emailId@MAILSVC_HOSTNAME>.
    expect(String(e.messageId)).toContain(`${id}@mailsvc.test`);
    expectTimeBetween(e.createdAt, before, after);
    expectTimeBetween(e.sentAt, before, after);
    expectTimeBetween(e.deliveredAt, before, after);
    for (const k of ["openedAt", "clickedAt", "bouncedAt", "complainedAt"]) expect(unset(e[k])).toBe(true);

    const evs = await eventsUntil(p, contactId, (n) => n.includes("email.delivery"), "email.delivery");
    const n = evs.map((x) => x.name);
    expect(count(n, "email.sent")).toBe(1);
    expect(count(n, "email.delivery")).toBe(1);
    for (const bad of ["email.bounce", "email.deferred", "email.failed", "email.suppressed"]) expect(n).not.toContain(bad);

    // Every delivery outcome is an item of /activity (decisions.md), naming the contact.
    const act = await activity(p, `?contactId=${contactId}`);
    for (const type of ["email.sent", "email.delivery"]) {
      const it = act.filter((a) => a.type === type);
      expect(it.length).toBe(1);
      expect(it[0]).toMatchObject({ contactId, contactEmail: to });
      expect(it[0].metadata).toBeObject();
      expect(isIsoDate(it[0].timestamp)).toBe(true);
      // decisions.md: an activity item is { id, type, timestamp, contactId?, contactEmail?, metadata }.
      for (const k of Object.keys(it[0])) expect(["id", "type", "timestamp", "contactId", "contactEmail", "metadata"]).toContain(k);
    }
  });

  test("the list holds the same messages, newest first; items carry the log's fields", async () => {
    const p = await project("order");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await sendOne(p, rcpt("order"), { subject: `n${i}` })).id);
      srv.clock.advance(1000);
    }
    const res = await srv.api("/emails", { key: p.secretKey });
    expectCursorPage(res);
    expect(res.body.total).toBe(3);
    expect(res.body.data.map((e: any) => e.id)).toEqual([...ids].reverse());
    for (const e of res.body.data) {
      expectEmailShape(e);
      expect(e.sourceType).toBe("TRANSACTIONAL");
    }
  });

  test("another project's email is 404; the public key and no key are refused", async () => {
    const p = await project("iso");
    const { id, contactId } = await sendOne(p, rcpt("iso"));
    expectEnvelope(await srv.api(`/emails/${id}`, { key: acc.secretKey }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/emails/not-an-id`, { key: p.secretKey }), 404, "NOT_FOUND");
    const other = await srv.api(`/emails?contactId=${contactId}`, { key: acc.secretKey });
    expectCursorPage(other);
    expect(other.body.total).toBe(0);
    expect(other.body.data).toEqual([]);
    expectEnvelope(await srv.api(`/emails/${id}`, { key: p.publicKey }), 401, "INVALID_API_KEY");
    expect((await srv.api(`/emails/${id}`)).status).toBe(401);
    expect((await srv.api(`/emails`)).status).toBe(401);
    // A member's session with X-Project-Id reads it.
    const s = await srv.api(`/emails/${id}`, { cookie: acc.cookie, headers: { "x-project-id": p.projectId } });
    expect(s.status).toBe(200);
    expect(s.body.id).toBe(id);
  });
});

describe("GET /emails filters", () => {
  test("limit defaults to 20 and is clamped to 100; the walk visits each email once", async () => {
    const p = await project("limit");
    const tos = Array.from({ length: 25 }, () => rcpt("lim"));
    expectOk(await srv.api("/v1/send", { key: p.secretKey, body: { to: tos, from: p.from, subject: "L", body: "<p>l</p>" } }));
    const first = await srv.api("/emails", { key: p.secretKey });
    expectCursorPage(first);
    expect(first.body.data.length).toBe(20);
    expect(first.body.hasMore).toBe(true);
    expect(first.body.total).toBe(25);
    const second = await srv.api(`/emails?cursor=${encodeURIComponent(first.body.cursor)}`, { key: p.secretKey });
    expectCursorPage(second);
    expect(second.body.data.length).toBe(5);
    expect(second.body.hasMore).toBe(false);
    expect(second.body.total).toBe(0);
    expect(new Set([...first.body.data, ...second.body.data].map((e: any) => e.to))).toEqual(new Set(tos));
    const all = await srv.api("/emails?limit=1000", { key: p.secretKey });
    expect(all.body.data.length).toBe(25);
    expect(all.body.hasMore).toBe(false);
  });

  test("contactId, campaignId, status, to (and combined): total is the filtered count on the first page, 0 on later pages", async () => {
    const p = await project("filters");
    const a = rcpt("fa");
    const b = rcpt("fb");
    const bad = rcpt("fbad");
    // A campaign to a and b (contacts), plus transactional mail to a twice and a bounce.
    for (const e of [a, b]) expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: e, subscribed: true } }));
    const camp = await srv.api("/campaigns", { key: p.secretKey, body: { name: "F", subject: "Camp", body: "<p>c</p>", from: p.from, audienceType: "ALL", type: "TRANSACTIONAL" } });
    expect(camp.status).toBe(201);
    const campaignId = camp.body.data.id;
    expectOk(await srv.api(`/campaigns/${campaignId}/send`, { key: p.secretKey, body: {} }));
    // The fan-out reads the audience once it runs: let it finish before `bad` becomes a contact.
    await waitFor(
      async () => {
        await srv.drainJobs();
        return (await srv.api(`/emails?campaignId=${campaignId}`, { key: p.secretKey })).body.total;
      },
      { until: (n) => n === 2, what: "the campaign's 2 emails written" },
    );
    const t1 = await sendOne(p, a, { subject: "t1" });
    const t2 = await sendOne(p, a, { subject: "t2" });
    sink.onRcpt = (r) => (r === bad ? { code: 550, message: "5.1.1 no such user" } : undefined);
    let badId: string;
    try {
      badId = (await sendOne(p, bad)).id;
      await viewStatus(p, badId, "BOUNCED");
    } finally {
      sink.onRcpt = () => undefined;
    }
    await viewStatus(p, t1.id, "DELIVERED");
    await viewStatus(p, t2.id, "DELIVERED");
    const campEmails = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await srv.api(`/emails?campaignId=${campaignId}`, { key: p.secretKey })).body;
      },
      { until: (b) => b.total === 2 && b.data.every((e: any) => e.status === "DELIVERED"), what: "2 campaign emails DELIVERED" },
    );
    expect(campEmails.data.map((e: any) => e.to).sort()).toEqual([a, b].sort());
    for (const e of campEmails.data) expect(e).toMatchObject({ sourceType: "CAMPAIGN", campaignId });

    const q = async (qs: string) => {
      const res = await srv.api(`/emails?${qs}`, { key: p.secretKey });
      expectCursorPage(res);
      return res.body;
    };
    expect((await q("")).total).toBe(5);
    const byContact = await q(`contactId=${t1.contactId}`);
    expect(byContact.total).toBe(3);
    expect(byContact.data.every((e: any) => e.contactId === t1.contactId)).toBe(true);
    expect((await q(`to=${encodeURIComponent(a)}`)).total).toBe(3);
    expect((await q(`to=${encodeURIComponent(a)}&campaignId=${campaignId}`)).total).toBe(1);
    expect((await q(`status=DELIVERED`)).total).toBe(4);
    const bounced = await q("status=BOUNCED");
    expect(bounced.total).toBe(1);
    expect(bounced.data[0].id).toBe(badId!);
    expect((await q(`status=BOUNCED&to=${encodeURIComponent(a)}`)).total).toBe(0);
    expect((await q(`campaignId=${NO_SUCH_ID}`)).total).toBe(0);
    expect((await q(`contactId=${NO_SUCH_ID}`)).total).toBe(0);
    expect((await q(`to=${encodeURIComponent("nobody@" + RCPT_DOMAIN)}`)).total).toBe(0);
    expectEnvelope(await srv.api("/emails?status=delivered-ish", { key: p.secretKey }), 400);

    // A filtered walk: total on the first page only, every match once.
    const seen: string[] = [];
    let cursor: string | null = null;
    let page = 0;
    for (;;) {
      const body: any = await q(`contactId=${t1.contactId}&limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(body.total).toBe(page === 0 ? 3 : 0);
      expect(body.data.length).toBe(1);
      seen.push(body.data[0].id);
      page++;
      if (!body.hasMore) break;
      expect(typeof body.cursor).toBe("string");
      cursor = body.cursor;
    }
    expect(new Set(seen).size).toBe(3);
    expect(seen).toContain(t1.id);
    expect(seen).toContain(t2.id);
  });
});

describe("delivery outcomes: events on the contact and /activity items", () => {
  test("4xx: DEFERRED with email.deferred per retry { emailId, to, code, reply, attempt, nextAttemptAt }, then FAILED with email.failed; the contact stays subscribed", async () => {
    const p = await project("defer");
    const to = rcpt("defer");
    sink.onRcpt = (r) => (r === to ? { code: 451, message: "4.7.1 try later" } : undefined);
    let id: string, contactId: string;
    try {
      ({ id, contactId } = await sendOne(p, to, { subscribed: true }));
      const d = await viewStatus(p, id, "DEFERRED");
      expectEmailShape(d);
      expect(d.attempts).toBe(1);
      expect(d.lastReply ?? "").toContain("451");
      // README "Activity": a deferred email waiting for its retry is upcoming (email.retry).
      const up = await srv.api("/activity/upcoming", { key: p.secretKey });
      expect(up.status).toBe(200);
      const retry = items(up.body).find((u: any) => u.type === "email.retry" && u.id === id);
      expect(retry).toBeDefined();
      expect(isIsoDate(retry.at)).toBe(true);
      expect(retry.details).toMatchObject({ attempts: 1 });
      expect(String(retry.details.lastReply ?? "")).toContain("451");
      const f = await viewStatus(p, id, "FAILED", 1000);
      expect(f.attempts).toBe(3);
      expect(f.lastReply ?? "").toContain("451");
      expect(unset(f.deliveredAt)).toBe(true);
      expect(unset(f.bouncedAt)).toBe(true);
    } finally {
      sink.onRcpt = () => undefined;
    }
    const evs = await eventsUntil(p, contactId!, (n) => n.includes("email.failed"), "email.failed");
    const n = evs.map((e) => e.name);
    expect(count(n, "email.sent")).toBe(1);
    expect(count(n, "email.failed")).toBe(1);
    expect(n).not.toContain("email.bounce");
    expect(n).not.toContain("email.delivery");
    const deferred = evs.filter((e) => e.name === "email.deferred").sort((x, y) => x.data.attempt - y.data.attempt);
    // Schedule "1s,2s": two retries.
    expect(deferred.length).toBe(2);
    deferred.forEach((e, i) => {
      expect(e.data).toMatchObject({ emailId: id!, to, code: 451, attempt: i + 1 });
      expect(String(e.data.reply)).toContain("try later");
      expect(isIsoDate(e.data.nextAttemptAt) || typeof e.data.nextAttemptAt === "number").toBe(true);
    });
    const failed = evs.find((e) => e.name === "email.failed")!;
    expect(failed.data).toMatchObject({ emailId: id!, to, code: 451, attempt: 3 });
    expect(failed.data.nextAttemptAt).toBeUndefined();
    const act = await activity(p, `?type=email.deferred,email.failed&contactId=${contactId!}`);
    expect(act.map((a) => a.type).sort()).toEqual(["email.deferred", "email.deferred", "email.failed"]);
    for (const a of act) expect(a.metadata).toMatchObject({ emailId: id!, to });
    // Not a bounce: still subscribed, not suppressed.
    expect((await lookup(p, to))?.subscribed).toBe(true);
    const again = await sendOne(p, to);
    await viewStatus(p, again.id, "DELIVERED");
  });

  test("550 at RCPT: BOUNCED (bouncedAt, lastReply), email.bounce and contact.unsubscribed; a later send is SUPPRESSED with email.suppressed, never attempted", async () => {
    const p = await project("bounce");
    const to = rcpt("bounce");
    sink.onRcpt = (r) => (r === to ? { code: 550, message: "5.1.1 no such user" } : undefined);
    let id: string, contactId: string;
    try {
      const before = srv.clock.now();
      ({ id, contactId } = await sendOne(p, to, { subscribed: true }));
      const e = await viewStatus(p, id, "BOUNCED");
      expectEmailShape(e);
      expectTimeBetween(e.bouncedAt, before, srv.clock.now());
      expect(e.lastReply ?? "").toContain("550");
      expect(unset(e.deliveredAt)).toBe(true);
    } finally {
      sink.onRcpt = () => undefined;
    }
    const evs = await eventsUntil(p, contactId!, (n) => n.includes("email.bounce") && n.includes("contact.unsubscribed"), "email.bounce + contact.unsubscribed");
    const n = evs.map((e) => e.name);
    expect(count(n, "email.bounce")).toBe(1);
    expect(count(n, "contact.unsubscribed")).toBe(1);
    expect(n).not.toContain("email.delivery");
    expect(evs.find((e) => e.name === "email.bounce")!.data).toMatchObject({ emailId: id! });
    expect((await lookup(p, to))?.subscribed).toBe(false);

    const attempts = sink.rcptAttempts.get(to);
    const later = await sendOne(p, to);
    const s = await viewStatus(p, later.id, "SUPPRESSED");
    expectEmailShape(s);
    expect(s.attempts).toBe(0);
    expect(unset(s.sentAt)).toBe(true);
    const evs2 = await eventsUntil(p, contactId!, (x) => x.includes("email.suppressed"), "email.suppressed");
    expect(evs2.find((e) => e.name === "email.suppressed")!.data).toMatchObject({ emailId: later.id });
    // Suppressed mail is not "sent": one email.sent (the bounced one) only.
    expect(count(evs2.map((e) => e.name), "email.sent")).toBe(1);
    expect(sink.rcptAttempts.get(to)).toBe(attempts);
    const act = await activity(p, `?contactId=${contactId!}`);
    const types = act.map((a) => a.type);
    for (const t of ["email.sent", "email.bounce", "contact.unsubscribed", "email.suppressed"]) expect(types).toContain(t);
    for (const a of act) expect(a).toMatchObject({ contactId: contactId!, contactEmail: to });
    const sup = await srv.api("/emails?status=SUPPRESSED", { key: p.secretKey });
    expect(sup.body.total).toBe(1);
    expect(sup.body.data[0].id).toBe(later.id);
  });

  test("campaign counts are unique per email: two opens and two clicks of one email count once", async () => {
    const p = await project("uniq");
    const to = rcpt("uniq");
    expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: to, subscribed: true } }));
    const camp = await srv.api("/campaigns", { key: p.secretKey, body: { name: "U", subject: "S", body: `<p>b</p><a href="${LANDING_A}">a</a>`, from: p.from, audienceType: "ALL" } });
    const campaignId = camp.body.data.id;
    expectOk(await srv.api(`/campaigns/${campaignId}/send`, { key: p.secretKey, body: {} }));
    const html = await htmlOf(await messageFor(to));
    const pixel = imgs(html).find(ours)!;
    const link = hrefs(html).find((h) => ours(h) && h.includes("/t/c/"))!;
    expect(link).toBeDefined();
    for (let i = 0; i < 2; i++) {
      await (await fetch(pixel)).arrayBuffer();
      const r = await fetch(link, { redirect: "manual" });
      await r.arrayBuffer();
      expect(r.headers.get("location")).toBe(LANDING_A);
    }
    const stats = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await srv.api(`/campaigns/${campaignId}/stats`, { key: p.secretKey })).body;
      },
      { until: (s) => s.openedCount >= 1 && s.clickedCount >= 1 && s.deliveredCount === 1, what: "campaign stats" },
    );
    expect(stats).toMatchObject({ sentCount: 1, deliveredCount: 1, openedCount: 1, clickedCount: 1, openRate: 100, clickRate: 100 });
  });

  test("a campaign email's email.* events carry campaignId, and so do its activity items", async () => {
    const p = await project("campev");
    const to = rcpt("campev");
    const c = await srv.api("/contacts", { key: p.secretKey, body: { email: to, subscribed: true } });
    expectOk(c);
    const camp = await srv.api("/campaigns", { key: p.secretKey, body: { name: "E", subject: "S", body: "<p>b</p>", from: p.from, audienceType: "ALL" } });
    const campaignId = camp.body.data.id;
    expectOk(await srv.api(`/campaigns/${campaignId}/send`, { key: p.secretKey, body: {} }));
    const evs = await eventsUntil(p, c.body.id, (n) => n.includes("email.delivery"), "email.delivery");
    for (const e of evs.filter((x) => x.name.startsWith("email."))) expect(e.data).toMatchObject({ campaignId });
    const act = await activity(p, `?type=email.sent,email.delivery`);
    expect(act.length).toBe(2);
    for (const a of act) expect(a.metadata).toMatchObject({ campaignId });
  });
});

describe("feedback over the inbound SMTP listener", () => {
  test("a permanent DSN: BOUNCED with bouncedAt, email.bounce, contact.unsubscribed; later sends SUPPRESSED", async () => {
    const p = await project("dsn");
    const to = rcpt("dsn");
    const { id, contactId } = await sendOne(p, to, { subscribed: true });
    await viewStatus(p, id, "DELIVERED");
    const m = await messageFor(to);
    const before = srv.clock.now();
    const r = await deliverInbound("", m.from, dsn(to, m.from, m, "5.1.1", "failed"));
    expect(r.ok).toBe(true);
    const e = await viewStatus(p, id, "BOUNCED");
    expectTimeBetween(e.bouncedAt, before, srv.clock.now());
    const evs = await eventsUntil(p, contactId, (n) => n.includes("email.bounce") && n.includes("contact.unsubscribed"), "bounce events");
    expect(count(evs.map((x) => x.name), "email.bounce")).toBe(1);
    expect((await lookup(p, to))?.subscribed).toBe(false);
    const later = await sendOne(p, to);
    await viewStatus(p, later.id, "SUPPRESSED");
    expect((await activity(p, `?type=email.bounce`)).map((a) => a.contactId)).toEqual([contactId]);
  });

  test("a transient DSN only records the reply: the email keeps its status, the contact stays subscribed, no email.bounce", async () => {
    const p = await project("dsn4");
    const to = rcpt("dsn4");
    const { id, contactId } = await sendOne(p, to, { subscribed: true });
    await viewStatus(p, id, "DELIVERED");
    const m = await messageFor(to);
    expect((await deliverInbound("", m.from, dsn(to, m.from, m, "4.2.2", "delayed"))).ok).toBe(true);
    const e = await viewUntil(p, id, (v) => String(v.lastReply ?? "").includes("4.2.2"), "lastReply with the DSN");
    expect(e.status).toBe("DELIVERED");
    expect(unset(e.bouncedAt)).toBe(true);
    await srv.drainJobs();
    expect(await names(p, contactId)).not.toContain("email.bounce");
    expect((await lookup(p, to))?.subscribed).toBe(true);
    const again = await sendOne(p, to);
    await viewStatus(p, again.id, "DELIVERED");
  });

  test("an ARF complaint to fbl@<hostname>: COMPLAINED with complainedAt, email.complaint and contact.unsubscribed, later sends SUPPRESSED", async () => {
    const p = await project("arf");
    const to = rcpt("arf");
    const { id, contactId } = await sendOne(p, to, { subscribed: true });
    await viewStatus(p, id, "DELIVERED");
    const m = await messageFor(to);
    const before = srv.clock.now();
    expect((await deliverInbound("", "fbl@mailsvc.test", arfReport(RCPT_DOMAIN, to, "fbl@mailsvc.test", m.raw))).ok).toBe(true);
    const e = await viewStatus(p, id, "COMPLAINED");
    expectTimeBetween(e.complainedAt, before, srv.clock.now());
    const evs = await eventsUntil(p, contactId, (n) => n.includes("email.complaint") && n.includes("contact.unsubscribed"), "complaint events");
    expect(count(evs.map((x) => x.name), "email.complaint")).toBe(1);
    expect(evs.find((x) => x.name === "email.complaint")!.data).toMatchObject({ emailId: id });
    expect((await lookup(p, to))?.subscribed).toBe(false);
    const act = await activity(p, `?type=email.complaint`);
    expect(act.length).toBe(1);
    expect(act[0]).toMatchObject({ contactId, contactEmail: to });
    // README "Tracking, subscription pages and inbound mail": complaints suppress.
    const later = await sendOne(p, to);
    await viewStatus(p, later.id, "SUPPRESSED");
  });

  test("a complaint after a click: COMPLAINED wins over CLICKED (status only moves forward, COMPLAINED wins)", async () => {
    const p = await project("arfclick", "ENABLED");
    const to = rcpt("arfclick");
    const { id } = await sendOne(p, to, { body: `<a href="${LANDING_A}">a</a>` });
    const m = await messageFor(to);
    const link = hrefs(await htmlOf(m)).find(ours)!;
    await (await fetch(link, { redirect: "manual" })).arrayBuffer();
    await viewStatus(p, id, "CLICKED");
    expect((await deliverInbound("", m.from, arfReport(RCPT_DOMAIN, to, m.from, m.raw))).ok).toBe(true);
    const e = await viewStatus(p, id, "COMPLAINED");
    expect(isIsoDate(e.clickedAt)).toBe(true);
    // A later open does not move it back.
    const pixel = imgs(await htmlOf(m)).find(ours)!;
    await (await fetch(pixel)).arrayBuffer();
    await srv.drainJobs();
    expect((await view(p, id)).status).toBe("COMPLAINED");
  });

  test("other mail to an address of a verified domain records email.received on the sender's contact, created unsubscribed", async () => {
    const p = await project("recv");
    const sender = `writer${++seq}@elsewhere-fb-bb.example`;
    const raw = [`From: ${sender}`, `To: support@${p.domain}`, "Subject: Question", `Message-ID: <q${seq}@elsewhere-fb-bb.example>`, "", "Hello there", ""].join("\r\n");
    expect((await deliverInbound(sender, `support@${p.domain}`, raw)).ok).toBe(true);
    const c = await waitFor(
      async () => {
        await srv.drainJobs();
        return lookup(p, sender);
      },
      { what: `contact ${sender}` },
    );
    expect(c.subscribed).toBe(false);
    const evs = await eventsUntil(p, c.id, (n) => n.includes("email.received"), "email.received");
    expect(count(evs.map((e) => e.name), "email.received")).toBe(1);
    expect((await activity(p, "?type=email.received")).map((a) => a.contactId)).toEqual([c.id]);
  });
});

describe("opens and clicks: counted once per email, redirects every time", () => {
  test("two opens record one email.open and keep the first openedAt; status OPENED", async () => {
    const p = await project("opens", "ENABLED");
    const to = rcpt("opens");
    const { id, contactId } = await sendOne(p, to);
    const pixel = imgs(await htmlOf(await messageFor(to))).find(ours)!;
    expect(pixel).toBeDefined();
    const r1 = await fetch(pixel);
    expect(r1.status).toBe(200);
    await r1.arrayBuffer();
    const first = await viewUntil(p, id, (v) => !!v.openedAt, "openedAt");
    srv.clock.advance(60_000);
    const r2 = await fetch(pixel);
    expect(r2.status).toBe(200);
    expect(r2.headers.get("content-type") ?? "").toStartWith("image/");
    await r2.arrayBuffer();
    await srv.drainJobs();
    const second = await view(p, id);
    expect(second.status).toBe("OPENED");
    expect(second.openedAt).toBe(first.openedAt);
    const n = await names(p, contactId);
    expect(count(n, "email.open")).toBe(1);
    expect((await activity(p, "?type=email.open")).length).toBe(1);
  });

  test("each distinct link's first click records email.click; a repeat click redirects but records nothing; a click sets openedAt", async () => {
    const p = await project("clicks", "ENABLED");
    const to = rcpt("clicks");
    const { id, contactId } = await sendOne(p, to, { body: `<a href="${LANDING_A}">a</a> <a href="${LANDING_B}">b</a>` });
    const links = hrefs(await htmlOf(await messageFor(to))).filter(ours);
    expect(links.length).toBe(2);
    const go = async (u: string) => {
      const r = await fetch(u, { redirect: "manual" });
      await r.arrayBuffer();
      expect(r.status).toBe(302);
      return r.headers.get("location");
    };
    const before = srv.clock.now();
    expect(await go(links[0]!)).toBe(LANDING_A);
    const e = await viewStatus(p, id, "CLICKED");
    // No pixel was fetched: the click sets openedAt too (README).
    expectTimeBetween(e.openedAt, before, srv.clock.now());
    expectTimeBetween(e.clickedAt, before, srv.clock.now());
    expect(await go(links[0]!)).toBe(LANDING_A);
    expect(await go(links[1]!)).toBe(LANDING_B);
    const evs = await eventsUntil(p, contactId, (n) => count(n, "email.click") >= 2, "two email.click");
    await srv.drainJobs();
    const clicks = (await events(p, contactId)).filter((x) => x.name === "email.click");
    expect(clicks.length).toBe(2);
    // README: each distinct link's first click records email.click "with the link".
    expect(clicks.map((c) => Object.values(c.data).find((v) => v === LANDING_A || v === LANDING_B)).sort()).toEqual([LANDING_A, LANDING_B]);
    for (const c of clicks) expect(c.data).toMatchObject({ emailId: id });
    expect(evs.length).toBeGreaterThan(0);
    const after = await view(p, id);
    expect(after.clickedAt).toBe(e.clickedAt);
    const act = await activity(p, "?type=email.click");
    expect(act.length).toBe(2);
    for (const a of act) expect(a).toMatchObject({ contactId, contactEmail: to });
    // An open after the click does not move the status back.
    const pixel = imgs(await htmlOf(sink.byRecipient(to)[0]!)).find(ours)!;
    await (await fetch(pixel)).arrayBuffer();
    await srv.drainJobs();
    expect((await view(p, id)).status).toBe("CLICKED");
  });

  test("tampered or made-up tokens: pixel, click, unsubscribe, subscribe and manage are 404, never a redirect", async () => {
    const p = await project("tamper", "ENABLED");
    const to = rcpt("tamper");
    const { id } = await sendOne(p, to, {
      subscribed: true,
      body: `<a href="${LANDING_A}">a</a> <a href="{{unsubscribeUrl}}">u</a> <a href="{{subscribeUrl}}">s</a> <a href="{{manageUrl}}">m</a>`,
    });
    const html = await htmlOf(await messageFor(to));
    const pixel = imgs(html).find(ours)!;
    const all = hrefs(html).filter(ours);
    expect(all.length).toBeGreaterThanOrEqual(4);
    for (const u of [pixel, ...all]) {
      for (const method of ["GET", "POST"]) {
        const r = await fetch(tamper(u), { method, redirect: "manual" });
        await r.arrayBuffer();
        expect(r.status).toBe(404);
        expect(r.headers.get("location")).toBeNull();
      }
    }
    const base = srv.ctx.config.publicUrl;
    for (const path of ["/t/o/garbage", "/t/c/garbage", "/unsubscribe/garbage", "/subscribe/garbage", "/manage/garbage"]) {
      const r = await fetch(base + path, { redirect: "manual" });
      await r.arrayBuffer();
      expect(r.status).toBe(404);
      expect(r.headers.get("location")).toBeNull();
    }
    await srv.drainJobs();
    const e = await view(p, id);
    expect(unset(e.openedAt)).toBe(true);
    expect(unset(e.clickedAt)).toBe(true);
    expect((await lookup(p, to))?.subscribed).toBe(true);
  });
});

describe("tracking modes per email type", () => {
  /** A campaign of `type` to one subscribed contact; returns the delivered message's HTML and raw message. */
  async function campaignTo(p: P, type: string) {
    const to = rcpt(`mode${type.toLowerCase()}`);
    expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: to, subscribed: true } }));
    const c = await srv.api("/campaigns", {
      key: p.secretKey,
      body: { name: `M ${type}`, subject: "S", body: `<p>Hello</p><a href="${LANDING_A}">a</a>`, from: p.from, audienceType: "FILTERED", type,
        audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "equals", value: to }] }] } },
    });
    expect(c.status).toBe(201);
    expectOk(await srv.api(`/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: {} }));
    const m = await messageFor(to);
    return { to, m, html: await htmlOf(m), campaignId: c.body.data.id as string };
  }
  const tracked = (html: string) => ({
    pixel: imgs(html).filter(ours).length > 0,
    link: hrefs(html).some((h) => ours(h) && !/unsubscribe|manage|subscribe/i.test(h)),
    raw: hrefs(html).includes(LANDING_A),
  });

  test("a new project tracks MARKETING_ONLY", async () => {
    const p = await newProject(srv.api, acc, "FB default mode");
    const list = await srv.api("/users/@me/projects", { cookie: acc.cookie });
    expect(items(list.body).find((x: any) => x.id === p.projectId)?.tracking).toBe("MARKETING_ONLY");
  });

  test("MARKETING_ONLY: MARKETING and HEADLESS campaign mail is tracked, TRANSACTIONAL campaign mail is not", async () => {
    const p = await project("mo");
    for (const type of ["MARKETING", "HEADLESS"]) {
      const { html } = await campaignTo(p, type);
      expect(tracked(html)).toEqual({ pixel: true, link: true, raw: false });
    }
    const { html } = await campaignTo(p, "TRANSACTIONAL");
    expect(tracked(html)).toEqual({ pixel: false, link: false, raw: true });
  });

  test("ENABLED tracks a TRANSACTIONAL campaign too; a test send (no contact) is never tracked", async () => {
    const p = await project("en", "ENABLED");
    const { html, campaignId } = await campaignTo(p, "TRANSACTIONAL");
    expect(tracked(html)).toEqual({ pixel: true, link: true, raw: false });
    const testTo = rcpt("entest");
    expectOk(await srv.api(`/campaigns/${campaignId}/test`, { key: p.secretKey, body: { email: testTo } }));
    expect(tracked(await htmlOf(await messageFor(testTo)))).toEqual({ pixel: false, link: false, raw: true });
  });

  test("DISABLED: MARKETING mail has no pixel and direct links, but keeps its List-Unsubscribe and it still works", async () => {
    const p = await project("dis", "DISABLED");
    const { to, m, html } = await campaignTo(p, "MARKETING");
    expect(tracked(html)).toEqual({ pixel: false, link: false, raw: true });
    const lu = rawHeader(m, "List-Unsubscribe") ?? "";
    const url = lu.match(/<(https?:[^>]+)>/)?.[1];
    expect(url).toBeDefined();
    const r = await fetch(url!, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    await r.arrayBuffer();
    expect(r.status).toBeLessThan(300);
    expect((await lookup(p, to))?.subscribed).toBe(false);
  });
});

describe("subscription pages", () => {
  test("List-Unsubscribe: GET shows a page and changes nothing; the one-click POST unsubscribes once (contact.unsubscribed, in /activity); a repeat POST is harmless", async () => {
    const p = await project("lu");
    const to = rcpt("lu");
    const { m } = await (async () => {
      expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: to, subscribed: true } }));
      const c = await srv.api("/campaigns", { key: p.secretKey, body: { name: "LU", subject: "S", body: "<p>x</p>", from: p.from, audienceType: "ALL" } });
      expectOk(await srv.api(`/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: {} }));
      return { m: await messageFor(to) };
    })();
    expect(rawHeader(m, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    const url = (rawHeader(m, "List-Unsubscribe") ?? "").match(/<(https?:[^>]+)>/)?.[1];
    expect(url).toBeDefined();
    expect(ours(url!)).toBe(true);
    const page = await fetch(url!);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type") ?? "").toContain("text/html");
    await page.text();
    await srv.drainJobs();
    const c = (await lookup(p, to))!;
    expect(c.subscribed).toBe(true);
    expect(await names(p, c.id)).not.toContain("contact.unsubscribed");
    for (let i = 0; i < 2; i++) {
      const r = await fetch(url!, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
      await r.arrayBuffer();
      expect(r.status).toBeLessThan(300);
    }
    expect((await lookup(p, to))?.subscribed).toBe(false);
    const evs = await eventsUntil(p, c.id, (n) => n.includes("contact.unsubscribed"), "contact.unsubscribed");
    await srv.drainJobs();
    expect(count((await events(p, c.id)).map((e) => e.name), "contact.unsubscribed")).toBe(1);
    expect(evs.length).toBeGreaterThan(0);
    const act = await activity(p, "?type=contact.unsubscribed");
    expect(act.length).toBe(1);
    expect(act[0]).toMatchObject({ contactId: c.id, contactEmail: to });
  });

  test("the subscribe page: GET changes nothing; POST resubscribes with contact.subscribed", async () => {
    const p = await project("sub");
    const to = rcpt("sub");
    const { contactId } = await sendOne(p, to, { subscribed: false, body: '<a href="{{subscribeUrl}}">Subscribe</a>' });
    const url = hrefs(await htmlOf(await messageFor(to))).find(ours)!;
    expect(url).toBeDefined();
    const g = await fetch(url, { redirect: "manual" });
    expect(g.status).toBe(200);
    await g.text();
    await srv.drainJobs();
    expect((await lookup(p, to))?.subscribed).toBe(false);
    const r = await fetch(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "" });
    await r.arrayBuffer();
    expect(r.status).toBeLessThan(400);
    expect((await lookup(p, to))?.subscribed).toBe(true);
    const n = (await eventsUntil(p, contactId, (x) => x.includes("contact.subscribed"), "contact.subscribed")).map((e) => e.name);
    expect(count(n, "contact.subscribed")).toBe(1);
  });

  test("the manage page: GET shows the page and changes nothing", async () => {
    const p = await project("man");
    const to = rcpt("man");
    await sendOne(p, to, { subscribed: true, body: '<a href="{{manageUrl}}">Manage</a>' });
    const url = hrefs(await htmlOf(await messageFor(to))).find(ours)!;
    const g = await fetch(url, { redirect: "manual" });
    expect(g.status).toBe(200);
    expect(g.headers.get("content-type") ?? "").toContain("text/html");
    await g.text();
    expect((await lookup(p, to))?.subscribed).toBe(true);
  });
});

describe("feedback edge cases", () => {
  test("the same DSN and the same ARF delivered twice record one email.bounce / one email.complaint", async () => {
    const p = await project("dup");
    const a = rcpt("dupa");
    const b = rcpt("dupb");
    const ea = await sendOne(p, a, { subscribed: true });
    const eb = await sendOne(p, b, { subscribed: true });
    await viewStatus(p, ea.id, "DELIVERED");
    await viewStatus(p, eb.id, "DELIVERED");
    const ma = await messageFor(a);
    const mb = await messageFor(b);
    for (let i = 0; i < 2; i++) {
      expect((await deliverInbound("", ma.from, dsn(a, ma.from, ma, "5.1.1", "failed"))).ok).toBe(true);
      expect((await deliverInbound("", mb.from, arfReport(RCPT_DOMAIN, b, mb.from, mb.raw))).ok).toBe(true);
      await srv.drainJobs();
    }
    await viewStatus(p, ea.id, "BOUNCED");
    await viewStatus(p, eb.id, "COMPLAINED");
    const na = (await eventsUntil(p, ea.contactId, (n) => n.includes("contact.unsubscribed"), "a unsubscribed")).map((e) => e.name);
    const nb = (await eventsUntil(p, eb.contactId, (n) => n.includes("contact.unsubscribed"), "b unsubscribed")).map((e) => e.name);
    expect(count(na, "email.bounce")).toBe(1);
    expect(count(na, "contact.unsubscribed")).toBe(1);
    expect(count(nb, "email.complaint")).toBe(1);
    expect(count(nb, "contact.unsubscribed")).toBe(1);
  });

  test("an email queued before its address was suppressed is SUPPRESSED at its retry, not attempted again (email.suppressed)", async () => {
    const p = await project("late");
    const to = rcpt("late");
    // First RCPT (email 1): 451, deferred. Second RCPT (email 2): 550, hard bounce, address suppressed.
    sink.onRcpt = (r, n) => (r !== to ? undefined : n === 1 ? { code: 451, message: "4.7.1 later" } : { code: 550, message: "5.1.1 gone" });
    try {
      const one = await sendOne(p, to, { subscribed: true });
      await viewStatus(p, one.id, "DEFERRED");
      const two = await sendOne(p, to);
      await viewStatus(p, two.id, "BOUNCED");
      const e = await viewStatus(p, one.id, "SUPPRESSED", 1000);
      expect(e.attempts).toBe(1);
      expect(sink.rcptAttempts.get(to)).toBe(2);
      const evs = await eventsUntil(p, one.contactId, (n) => n.includes("email.suppressed"), "email.suppressed");
      expect(evs.filter((x) => x.name === "email.suppressed").map((x) => x.data.emailId)).toEqual([one.id]);
    } finally {
      sink.onRcpt = () => undefined;
    }
  });

  test("a hard bounce of a contact that is already unsubscribed emits no contact.unsubscribed (only flips emit)", async () => {
    const p = await project("nofl");
    const to = rcpt("nofl");
    sink.onRcpt = (r) => (r === to ? { code: 550, message: "5.1.1 no such user" } : undefined);
    try {
      // /v1/send: a new contact defaults to subscribed: false.
      const { id, contactId } = await sendOne(p, to);
      await viewStatus(p, id, "BOUNCED");
      const n = (await eventsUntil(p, contactId, (x) => x.includes("email.bounce"), "email.bounce")).map((e) => e.name);
      expect(n).not.toContain("contact.unsubscribed");
      expect((await lookup(p, to))?.subscribed).toBe(false);
    } finally {
      sink.onRcpt = () => undefined;
    }
  });

  test("an open that arrives before the remote 250 is recorded; the outcome then lands on OPENED, with email.delivery", async () => {
    const p = await project("early", "ENABLED");
    const to = rcpt("early");
    let release!: () => void;
    sink.hold = new Promise<void>((r) => (release = r));
    let id: string, contactId: string;
    try {
      ({ id, contactId } = await sendOne(p, to));
      const m = await waitFor(async () => sink.byRecipient(to)[0], { what: `a held message for ${to}` });
      expect((await view(p, id)).status).toBe("SENDING");
      const pixel = imgs(await htmlOf(m)).find(ours)!;
      const r = await fetch(pixel);
      expect(r.status).toBe(200);
      await r.arrayBuffer();
      // Recorded at once (README: the outcome, when it lands, lands on OPENED).
      await viewUntil(p, id, (v) => !!v.openedAt, "openedAt");
    } finally {
      sink.hold = null;
      release();
    }
    const n = (await eventsUntil(p, contactId!, (x) => x.includes("email.delivery"), "email.delivery")).map((e) => e.name);
    expect(count(n, "email.open")).toBe(1);
    const e = await viewUntil(p, id!, (v) => !!v.deliveredAt, "deliveredAt");
    expect(e.status).toBe("OPENED");
  });

  test("links not rewritten: mailto:, tel:, anchors, relative links, data-no-track and our own page links", async () => {
    const p = await project("norw", "ENABLED");
    const to = rcpt("norw");
    const body = [
      `<a href="${LANDING_A}">tracked</a>`,
      '<a href="mailto:help@example.com">mail</a>',
      '<a href="tel:+15551234">tel</a>',
      '<a href="#top">anchor</a>',
      '<a href="/relative/path">rel</a>',
      `<a data-no-track href="${LANDING_B}">untracked</a>`,
      '<a href="{{unsubscribeUrl}}">unsub</a>',
    ].join(" ");
    await sendOne(p, to, { body, subscribed: true });
    const h = hrefs(await htmlOf(await messageFor(to)));
    for (const raw of ["mailto:help@example.com", "tel:+15551234", "#top", "/relative/path", LANDING_B]) expect(h).toContain(raw);
    expect(h).not.toContain(LANDING_A);
    const mine = h.filter(ours);
    expect(mine.length).toBe(2);
    // The unsubscribe link is the page itself, not a click redirect to it.
    const unsub = mine.find((u) => !u.includes("/t/c/"))!;
    expect(unsub).toBeDefined();
    const page = await fetch(unsub, { redirect: "manual" });
    await page.arrayBuffer();
    expect(page.status).toBe(200);
  });

  test("the List-Unsubscribe mailto address unsubscribes when mailed; a forged one is refused at RCPT", async () => {
    const p = await project("mailto");
    const to = rcpt("mailto");
    expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: to, subscribed: true } }));
    const c = await srv.api("/campaigns", { key: p.secretKey, body: { name: "MT", subject: "S", body: "<p>x</p>", from: p.from, audienceType: "ALL" } });
    expectOk(await srv.api(`/campaigns/${c.body.data.id}/send`, { key: p.secretKey, body: {} }));
    const lu = rawHeader(await messageFor(to), "List-Unsubscribe") ?? "";
    const mailto = lu.match(/<mailto:([^>?]+)(\?[^>]*)?>/)?.[1];
    if (!mailto) return; // the README does not promise a mailto in the header
    const [local, domain] = mailto.split("@");
    const forged = `${local!.slice(0, -4)}${local!.endsWith("0000") ? "1111" : "0000"}@${domain}`;
    const bad = await deliverInbound(to, forged, `From: ${to}\r\nTo: ${forged}\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n`);
    expect(bad.ok).toBe(false);
    expect(bad.responseCode).toBe(550);
    expect((await lookup(p, to))?.subscribed).toBe(true);
    const ok = await deliverInbound(to, mailto, `From: ${to}\r\nTo: ${mailto}\r\nSubject: unsubscribe\r\n\r\nunsubscribe\r\n`);
    expect(ok.ok).toBe(true);
    const after = await waitFor(
      async () => {
        await srv.drainJobs();
        return lookup(p, to);
      },
      { until: (x) => x?.subscribed === false, what: `${to} unsubscribed by mail` },
    );
    expect(after!.subscribed).toBe(false);
  });
});

describe("through a relay (MAILSVC_SMTP_RELAY)", () => {
  test("the relay's 250 is SENT: sentAt set, no deliveredAt, email.sent but no email.delivery", async () => {
    const relay = await startSmtpSink({ starttls: false });
    const rs = await startServer({ config: { dnsServers: [dns.server], smtpRelay: `smtp://127.0.0.1:${relay.port}` } });
    try {
      const r = await createAccount(rs.api, "FB relay");
      await addVerifiedDomain(rs.api, dns, r, "relay.fb-bb.example");
      const to = rcpt("relay");
      const res = await rs.api("/v1/send", { key: r.secretKey, body: { to, from: "a@relay.fb-bb.example", subject: "R", body: "<p>r</p>" } });
      expectOk(res);
      const id = res.body.data.emails[0].email;
      const contactId = res.body.data.emails[0].contact.id;
      await relay.waitFor(1);
      const e = await waitFor(
        async () => {
          await rs.drainJobs();
          return (await rs.api(`/emails/${id}`, { key: r.secretKey })).body;
        },
        { until: (v) => v.status !== "PENDING" && v.status !== "SENDING", what: `email ${id} to leave` },
      );
      expect(e.status).toBe("SENT");
      expect(isIsoDate(e.sentAt)).toBe(true);
      expect(unset(e.deliveredAt)).toBe(true);
      await rs.drainJobs();
      const n = items((await rs.api(`/events/contact/${contactId}`, { key: r.secretKey })).body).map((x: any) => x.name);
      expect(count(n, "email.sent")).toBe(1);
      expect(n).not.toContain("email.delivery");
      const act = items((await rs.api("/activity?type=email.sent,email.delivery", { key: r.secretKey })).body);
      expect(act.map((a: any) => a.type)).toEqual(["email.sent"]);
    } finally {
      await rs.close();
      await relay.close();
    }
  });
});

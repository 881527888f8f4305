// Black-box: campaigns — create/validate, offset list, GET/PUT/DELETE with state refusals, duplicate, send now and
// scheduled (movable clock), cancel, audiences (ALL/TRANSACTIONAL/SEGMENT/FILTERED, suppression), rendering per type
// (footer, List-Unsubscribe), /test, stats and counters, /emails?campaignId=, /activity/upcoming.
// Written from api-spec.md ("Campaign", "Campaign status", "Campaigns (sk)"), decisions.md ("Campaigns", "Templates,
// rendering, types", "Delivery, events, tracking") and docs/api.md "Campaigns"; never from the code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { deliveryEnv, lastMessageFor, type DeliveryEnv } from "../support/delivery";
import { expectEnvelope, expectOffsetPage, expectOk, expectValidation, hrefs, imgs, isIsoDate, newProject, NO_SUCH_ID, rawHeader, UUID } from "./support";
import { addresses, items, lookupContact } from "../support/api";

const SENDER_DOMAIN = "camp.bb.example";
const FROM = `news@${SENDER_DOMAIN}`;
const RCPT_DOMAIN = "inbox-camp-bb.example";
const LANDING = "https://landing.camp-bb.example/offer?x=1";

// Spec "Campaign" fields plus decisions.md's complainedCount and unsubscribedCount.
const CAMPAIGN_KEYS = [
  "id", "name", "description", "subject", "body", "from", "fromName", "replyTo", "type", "status", "audienceType",
  "segmentId", "audienceCondition", "scheduledFor", "totalRecipients", "sentCount", "deliveredCount", "openedCount",
  "clickedCount", "bouncedCount", "complainedCount", "unsubscribedCount", "projectId", "sentAt", "createdAt", "updatedAt",
];
const COUNTERS = ["totalRecipients", "sentCount", "deliveredCount", "openedCount", "clickedCount", "bouncedCount", "complainedCount", "unsubscribedCount"];
const STATS_KEYS = [...COUNTERS, "deliveryRate", "openRate", "clickRate", "bounceRate"];

let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;

beforeAll(async () => {
  env = await deliveryEnv({ name: "BB campaigns", mailDomain: RCPT_DOMAIN, senderDomain: SENDER_DOMAIN, config: { retryScheduleMs: [1000, 2000] } });
  ({ srv, dns, sink, acct: acc } = env);
});
afterAll(() => env?.close());

let seq = 0;
const rcpt = addresses(RCPT_DOMAIN);
const base = (extra: Record<string, unknown> = {}) => ({
  name: "Spring sale",
  subject: "Hello {{firstName}}",
  body: "<p>Hi {{firstName}}</p>",
  from: FROM,
  audienceType: "ALL",
  ...extra,
});

/** A new project of the same user with its own verified sender domain (so its audience is under the test's control). */
async function project(label: string): Promise<Account & { from: string }> {
  const p = await newProject(srv.api, acc, `BB camp ${label}`);
  const domain = `${label}${++seq}.campp-bb.example`;
  await addVerifiedDomain(srv.api, dns, p, domain);
  return { ...p, from: `news@${domain}` };
}

const create = (body: unknown, who: Account = acc) => srv.api("/campaigns", { key: who.secretKey, body });
const get = (id: string, who: Account = acc) => srv.api(`/campaigns/${id}`, { key: who.secretKey });
const put = (id: string, body: unknown, who: Account = acc) => srv.api(`/campaigns/${id}`, { method: "PUT", key: who.secretKey, body });
const del = (id: string, who: Account = acc) => srv.api(`/campaigns/${id}`, { method: "DELETE", key: who.secretKey });
const action = (id: string, what: string, body: unknown = {}, who: Account = acc) =>
  srv.api(`/campaigns/${id}/${what}`, { method: "POST", key: who.secretKey, body });
const send = (id: string, body: unknown = {}, who: Account = acc) => action(id, "send", body, who);
const contact = async (who: Account, email: string, subscribed = true, data: Record<string, unknown> = {}) => {
  const res = await srv.api("/contacts", { key: who.secretKey, body: { email, subscribed, data } });
  expectOk(res);
  return res.body as { id: string; email: string; subscribed: boolean };
};
const lookup = (email: string, who: Account = acc) => lookupContact(srv.api, who, email);

/** Creates a campaign and returns the created campaign (asserting 201 { success: true, data }). */
async function made(body: unknown, who: Account = acc) {
  const res = await create(body, who);
  if (res.status !== 201) throw new Error(`campaign create failed: ${res.status} ${res.text}`);
  return res.body.data;
}

/** Polls the campaign (moving queued work along, optionally the clock) until its status is `status`. */
function waitCampaign(id: string, status: string, who: Account = acc, advanceMs = 0) {
  return waitFor(
    async () => {
      if (advanceMs) srv.clock.advance(advanceMs);
      await srv.drainJobs();
      return (await get(id, who)).body;
    },
    { until: (c) => c?.status === status, what: `campaign ${id} ${status}` },
  );
}

/** Every email of the campaign through GET /emails?campaignId= (one page of 100 is plenty here). */
async function campaignEmails(id: string, who: Account = acc): Promise<any[]> {
  const res = await srv.api(`/emails?campaignId=${id}&limit=100`, { key: who.secretKey });
  expect(res.status).toBe(200);
  return res.body.data;
}

const messageFor = (address: string) => lastMessageFor(env, address);

const ours = (u: string) => u.startsWith(srv.ctx.config.publicUrl);

describe("POST /campaigns", () => {
  test("creates in DRAFT: 201 { success: true, data } with every Campaign field, counters zero; GET returns it bare", async () => {
    const from = srv.clock.now();
    const res = await create(base({ description: "internal", fromName: "The Team", replyTo: "replies@elsewhere-bb.example", type: "HEADLESS" }));
    const to = srv.clock.now();
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    const c = res.body.data;
    for (const k of CAMPAIGN_KEYS) expect(c).toHaveProperty(k);
    expect(c.id).toMatch(UUID);
    expect(c).toMatchObject({
      ...base(),
      description: "internal",
      fromName: "The Team",
      replyTo: "replies@elsewhere-bb.example",
      type: "HEADLESS",
      status: "DRAFT",
      projectId: acc.projectId,
    });
    for (const k of COUNTERS) expect(c[k]).toBe(0);
    expect(c.sentAt).toBeNull();
    expect(c.scheduledFor).toBeNull();
    expectTimeBetween(c.createdAt, from, to);
    expectTimeBetween(c.updatedAt, from, to);
    const got = await get(c.id);
    expect(got.status).toBe(200);
    expect(got.body.success).toBeUndefined();
    expect(got.body).toEqual(c);
  });

  test("type defaults to MARKETING; every type is accepted", async () => {
    expect((await made(base())).type).toBe("MARKETING");
    for (const type of ["TRANSACTIONAL", "MARKETING", "HEADLESS"]) expect((await made(base({ type }))).type).toBe(type);
  });

  test("name, subject, body, from and audienceType are required: 422 VALIDATION_ERROR naming the field", async () => {
    for (const field of ["name", "subject", "body", "from", "audienceType"]) {
      const b: Record<string, unknown> = base();
      delete b[field];
      expectValidation(await create(b), field);
    }
  });

  test("enum and address fields are validated (422)", async () => {
    expectValidation(await create(base({ type: "NEWSLETTER" })), "type");
    expectValidation(await create(base({ audienceType: "EVERYONE" })), "audienceType");
    expectValidation(await create(base({ from: "not an email" })), "from");
    expectValidation(await create(base({ replyTo: "nope" })), "replyTo");
  });

  test("SEGMENT without segmentId, FILTERED without audienceCondition: 422 naming the missing field", async () => {
    expectValidation(await create(base({ audienceType: "SEGMENT" })), "segmentId");
    expectValidation(await create(base({ audienceType: "FILTERED" })), "audienceCondition");
  });

  test("an unknown segmentId is 422 (README)", async () => {
    expectValidation(await create(base({ audienceType: "SEGMENT", segmentId: NO_SUCH_ID })));
  });

  test("a bad audienceCondition is 422 with errors[].field naming the filter path", async () => {
    const bad = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "isSortOf", value: "pro" }] }] };
    expectValidation(await create(base({ audienceType: "FILTERED", audienceCondition: bad })), "audienceCondition.groups[0].filters[0].operator");
    const noValue = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals" }] }] };
    expectValidation(await create(base({ audienceType: "FILTERED", audienceCondition: noValue })));
  });

  test("a FILTERED condition naming a segment that is not the project's is 422 unknown_segment (README: one condition compiler)", async () => {
    const ref = (id: string) => ({ logic: "AND", groups: [{ filters: [{ field: `segment.${id}`, operator: "memberOfSegment" }] }] });
    const errs = expectValidation(await create(base({ audienceType: "FILTERED", audienceCondition: ref(NO_SUCH_ID) })), "audienceCondition.groups[0].filters[0].field");
    expect(errs.find((e) => e.field === "audienceCondition.groups[0].filters[0].field")!.code).toBe("unknown_segment");
    const other = await newProject(srv.api, acc, "BB camp seg owner");
    const seg = await srv.api("/segments", { key: other.secretKey, body: { name: "Theirs", type: "STATIC" } });
    expectOk(seg);
    expectValidation(await create(base({ audienceType: "FILTERED", audienceCondition: ref(seg.body.id) })), "audienceCondition.groups[0].filters[0].field");
    expectValidation(await create(base({ audienceType: "SEGMENT", segmentId: seg.body.id })), "segmentId");
    const mine = await srv.api("/segments", { key: acc.secretKey, body: { name: `Mine ${++seq}`, type: "STATIC" } });
    expect((await made(base({ audienceType: "FILTERED", audienceCondition: ref(mine.body.id) }))).audienceType).toBe("FILTERED");
  });

  test("ALL needs neither segmentId nor audienceCondition; FILTERED with a valid condition is stored as given", async () => {
    expect((await made(base({ audienceType: "ALL" }))).audienceType).toBe("ALL");
    const cond = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };
    const c = await made(base({ audienceType: "FILTERED", audienceCondition: cond }));
    expect(c.audienceCondition).toEqual(cond);
  });

  test("a rejected create creates nothing", async () => {
    const p = await project("rej");
    expectValidation(await create({ ...base({ from: p.from }), name: undefined }, p));
    expectEnvelope(await create(base({ from: "x@unverified-camp-bb.example" }), p), 403);
    expectOffsetPage(await srv.api("/campaigns", { key: p.secretKey }), 1, 20, 0);
  });

  test("an unverified sender domain is 403 with code INTERNAL_SERVER_ERROR and a message naming the domain", async () => {
    const err = expectEnvelope(await create(base({ from: "x@unverified-camp-bb.example" })), 403, "INTERNAL_SERVER_ERROR");
    expect(err.message).toContain("unverified-camp-bb.example");
  });

  test("malformed JSON is 400", async () => {
    const res = await srv.api("/campaigns", { key: acc.secretKey, raw: "{not json", headers: { "content-type": "application/json" }, method: "POST" });
    expectEnvelope(res, 400);
  });
});

describe("authentication and project isolation", () => {
  test("the public key is 401 INVALID_API_KEY on every campaign endpoint", async () => {
    const c = await made(base());
    const calls: [string, string][] = [
      ["GET", "/campaigns"],
      ["POST", "/campaigns"],
      ["GET", `/campaigns/${c.id}`],
      ["PUT", `/campaigns/${c.id}`],
      ["DELETE", `/campaigns/${c.id}`],
      ["POST", `/campaigns/${c.id}/duplicate`],
      ["POST", `/campaigns/${c.id}/send`],
      ["POST", `/campaigns/${c.id}/cancel`],
      ["POST", `/campaigns/${c.id}/test`],
      ["GET", `/campaigns/${c.id}/stats`],
    ];
    for (const [method, path] of calls) {
      const body = method === "GET" || method === "DELETE" ? undefined : method === "POST" && path === "/campaigns" ? base() : {};
      expectEnvelope(await srv.api(path, { method, key: acc.publicKey, body }), 401, "INVALID_API_KEY");
    }
    expect((await get(c.id)).body.status).toBe("DRAFT");
  });

  test("no key is 401", async () => {
    expectEnvelope(await srv.api("/campaigns"), 401);
  });

  test("unknown ids are 404 NOT_FOUND on every :id endpoint", async () => {
    expectEnvelope(await get(NO_SUCH_ID), 404, "NOT_FOUND");
    expectEnvelope(await put(NO_SUCH_ID, { name: "x" }), 404, "NOT_FOUND");
    expectEnvelope(await del(NO_SUCH_ID), 404, "NOT_FOUND");
    for (const a of ["duplicate", "send", "cancel"]) expectEnvelope(await action(NO_SUCH_ID, a), 404, "NOT_FOUND");
    expectEnvelope(await action(NO_SUCH_ID, "test", { email: rcpt() }), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/campaigns/${NO_SUCH_ID}/stats`, { key: acc.secretKey }), 404, "NOT_FOUND");
  });

  test("another project's campaign is 404 everywhere and is left alone", async () => {
    const c = await made(base());
    const other = await newProject(srv.api, acc, "BB camp other");
    expectEnvelope(await get(c.id, other), 404, "NOT_FOUND");
    expectEnvelope(await put(c.id, { name: "hijacked" }, other), 404, "NOT_FOUND");
    expectEnvelope(await del(c.id, other), 404, "NOT_FOUND");
    for (const a of ["duplicate", "send", "cancel"]) expectEnvelope(await action(c.id, a, {}, other), 404, "NOT_FOUND");
    expectEnvelope(await action(c.id, "test", { email: rcpt() }, other), 404, "NOT_FOUND");
    expectEnvelope(await srv.api(`/campaigns/${c.id}/stats`, { key: other.secretKey }), 404, "NOT_FOUND");
    expect(await get(c.id)).toMatchObject({ status: 200, body: { name: base().name, status: "DRAFT" } });
    expectOffsetPage(await srv.api("/campaigns", { key: other.secretKey }), 1, 20, 0);
  });
});

describe("GET /campaigns (offset list)", () => {
  let p: Account & { from: string };
  const names = ["Alpha launch", "beta digest", "Gamma promo", "delta news"];
  const ids: string[] = [];
  beforeAll(async () => {
    p = await project("list");
    await contact(p, rcpt("list"));
    for (let i = 0; i < names.length; i++) {
      srv.clock.advance(1000);
      const c = await made(
        { ...base({ from: i === 3 ? p.from.replace("news@", "Offers@") : p.from }), name: names[i], subject: i === 2 ? "Your WEEKLY deals" : `Subject ${i}` },
        p,
      );
      ids.push(c.id);
    }
    // One SCHEDULED campaign (Gamma) for the status filter.
    const r = await send(ids[2]!, { scheduledFor: new Date(srv.clock.now() + 86_400_000).toISOString() }, p);
    expectOk(r);
  });
  const q = (qs: string) => srv.api(`/campaigns${qs}`, { key: p.secretKey });

  test("defaults: page 1, pageSize 20, newest first, with every campaign field", async () => {
    const res = await q("");
    expectOffsetPage(res, 1, 20, 4);
    expect(res.body.data.map((c: any) => c.name)).toEqual([...names].reverse());
    for (const k of CAMPAIGN_KEYS) expect(res.body.data[0]).toHaveProperty(k);
  });

  test("page and pageSize", async () => {
    const p1 = await q("?page=1&pageSize=3");
    expectOffsetPage(p1, 1, 3, 4);
    expect(p1.body.data.map((c: any) => c.name)).toEqual(["delta news", "Gamma promo", "beta digest"]);
    const p2 = await q("?page=2&pageSize=3");
    expectOffsetPage(p2, 2, 3, 4);
    expect(p2.body.data.map((c: any) => c.name)).toEqual(["Alpha launch"]);
    const past = await q("?page=5&pageSize=3");
    expectOffsetPage(past, 5, 3, 4);
    expect(past.body.data).toEqual([]);
  });

  test("page or pageSize below 1 is 400", async () => {
    expectEnvelope(await q("?page=0"), 400);
    expectEnvelope(await q("?pageSize=0"), 400);
  });

  test("status filter; an unknown status is 400", async () => {
    const sched = await q("?status=SCHEDULED");
    expectOffsetPage(sched, 1, 20, 1);
    expect(sched.body.data[0].name).toBe("Gamma promo");
    const drafts = await q("?status=DRAFT");
    expectOffsetPage(drafts, 1, 20, 3);
    for (const c of drafts.body.data) expect(c.status).toBe("DRAFT");
    expectOffsetPage(await q("?status=SENT"), 1, 20, 0);
    expectEnvelope(await q("?status=PAUSED"), 400, "BAD_REQUEST");
  });

  test("search is case-insensitive over name, subject and sender address", async () => {
    expect((await q("?search=ALPHA")).body.data.map((c: any) => c.name)).toEqual(["Alpha launch"]);
    expect((await q("?search=weekly")).body.data.map((c: any) => c.name)).toEqual(["Gamma promo"]);
    expect((await q("?search=offers%40")).body.data.map((c: any) => c.name)).toEqual(["delta news"]);
    const none = await q("?search=zzz-nothing");
    expectOffsetPage(none, 1, 20, 0);
    expect(none.body.totalPages).toBe(0);
  });

  test("search and status combine; total counts the filtered rows", async () => {
    const res = await q("?status=DRAFT&search=a");
    expect(res.body.total).toBe(res.body.data.length);
    for (const c of res.body.data) expect(c.status).toBe("DRAFT");
    expect(res.body.data.map((c: any) => c.name)).not.toContain("Gamma promo");
  });

  test("sort=name asc/desc (case-insensitive); sort=createdAt dir=asc; sort=updatedAt follows the last change", async () => {
    expect((await q("?sort=name&dir=asc")).body.data.map((c: any) => c.name)).toEqual(["Alpha launch", "beta digest", "delta news", "Gamma promo"]);
    expect((await q("?sort=name&dir=desc")).body.data.map((c: any) => c.name)).toEqual(["Gamma promo", "delta news", "beta digest", "Alpha launch"]);
    expect((await q("?sort=createdAt&dir=asc")).body.data.map((c: any) => c.name)).toEqual(names);
    srv.clock.advance(1000);
    expect((await put(ids[0]!, { description: "touched" }, p)).status).toBe(200);
    expect((await q("?sort=updatedAt&dir=desc")).body.data[0].id).toBe(ids[0]);
  });
});

describe("PUT and DELETE /campaigns/:id", () => {
  test("PUT takes any subset, answers the campaign (bare) and moves updatedAt", async () => {
    const c = await made(base({ description: "keep me" }));
    srv.clock.advance(1000);
    const res = await put(c.id, { name: "Renamed", type: "HEADLESS" });
    expect(res.status).toBe(200);
    expect(res.body.success).toBeUndefined();
    expect(res.body).toMatchObject({ ...base(), name: "Renamed", type: "HEADLESS", description: "keep me", id: c.id, status: "DRAFT" });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(c.updatedAt));
    expect(res.body.createdAt).toBe(c.createdAt);
    expect((await get(c.id)).body).toEqual(res.body);
  });

  test("PUT with an invalid field is 422, an unverified sender 403; neither changes anything", async () => {
    const c = await made(base());
    expectValidation(await put(c.id, { type: "BOGUS", name: "no" }), "type");
    expectValidation(await put(c.id, { audienceType: "SEGMENT", segmentId: NO_SUCH_ID }));
    expectEnvelope(await put(c.id, { from: "x@unverified-camp-bb.example", name: "no" }), 403, "INTERNAL_SERVER_ERROR");
    expect((await get(c.id)).body).toEqual(c);
  });

  test("PUT to a SEGMENT audience without segmentId is 422", async () => {
    const c = await made(base());
    expectValidation(await put(c.id, { audienceType: "SEGMENT" }), "segmentId");
    expect((await get(c.id)).body.audienceType).toBe("ALL");
  });

  test("DELETE a DRAFT: then GET and a second DELETE are 404", async () => {
    const c = await made(base());
    expectOk(await del(c.id));
    expectEnvelope(await get(c.id), 404, "NOT_FOUND");
    expectEnvelope(await del(c.id), 404, "NOT_FOUND");
  });
});

describe("POST /campaigns/:id/send and the campaign lifecycle", () => {
  test("send now: { success, data: { id, name, status: SENDING, scheduledFor: null }, message }, then SENT; each subscribed contact gets exactly one message", async () => {
    const p = await project("now");
    const a = rcpt("now");
    const b = rcpt("now");
    await contact(p, a, true, { firstName: "Ann" });
    await contact(p, b, true, { firstName: "Bob" });
    const c = await made(base({ from: p.from, subject: "Hi {{firstName}}" }), p);
    const before = srv.clock.now();
    const res = await send(c.id, {}, p);
    const after = srv.clock.now();
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data).sort()).toEqual(["id", "name", "scheduledFor", "status"]);
    expect(res.body.data).toEqual({ id: c.id, name: c.name, status: "SENDING", scheduledFor: null });
    expect(typeof res.body.message).toBe("string");
    const done = await waitCampaign(c.id, "SENT", p);
    expectTimeBetween(done.sentAt, before, after);
    expect(done.totalRecipients).toBe(2);
    expect(done.sentCount).toBe(2);
    expect(done.deliveredCount).toBe(2);
    expect((await (await messageFor(a)).parse()).subject).toBe("Hi Ann");
    expect((await (await messageFor(b)).parse()).subject).toBe("Hi Bob");
    expect(sink.byRecipient(a).length).toBe(1);
    expect(sink.byRecipient(b).length).toBe(1);
  });

  test("scheduledFor: null sends immediately too", async () => {
    const p = await project("null");
    const a = rcpt("null");
    await contact(p, a);
    const c = await made(base({ from: p.from }), p);
    const res = await send(c.id, { scheduledFor: null }, p);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe("SENDING");
    await waitCampaign(c.id, "SENT", p);
    await messageFor(a);
  });

  test("sending a SENT or CANCELLED campaign is 409 INVALID_STATE", async () => {
    const p = await project("resend");
    await contact(p, rcpt("resend"));
    const c = await made(base({ from: p.from }), p);
    expectOk(await send(c.id, {}, p));
    await waitCampaign(c.id, "SENT", p);
    expectEnvelope(await send(c.id, {}, p), 409, "INVALID_STATE");
    const d = await made(base({ from: p.from }), p);
    expectOk(await send(d.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p));
    expectOk(await action(d.id, "cancel", {}, p));
    expectEnvelope(await send(d.id, {}, p), 409, "INVALID_STATE");
  });

  test("an empty audience is 400 and the campaign stays DRAFT (now and scheduled)", async () => {
    const p = await project("empty");
    await contact(p, rcpt("unsub"), false); // MARKETING never reaches it: still an empty audience
    const c = await made(base({ from: p.from }), p);
    expectEnvelope(await send(c.id, {}, p), 400);
    expectEnvelope(await send(c.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p), 400);
    expect((await get(c.id, p)).body.status).toBe("DRAFT");
  });

  test("scheduledFor in the past or unparseable is 400 and changes nothing", async () => {
    const p = await project("past");
    await contact(p, rcpt("past"));
    const c = await made(base({ from: p.from }), p);
    expectEnvelope(await send(c.id, { scheduledFor: new Date(srv.clock.now() - 60_000).toISOString() }, p), 400);
    expectEnvelope(await send(c.id, { scheduledFor: "not a date" }, p), 400);
    expectEnvelope(await send(c.id, { scheduledFor: "2030-02-31T25:99:00Z" }, p), 400);
    const got = (await get(c.id, p)).body;
    expect(got.status).toBe("DRAFT");
    expect(got.scheduledFor).toBeNull();
  });

  test("schedule: SCHEDULED with scheduledFor; nothing leaves before the time; at the time it starts by itself and reaches SENT", async () => {
    const p = await project("sched");
    const a = rcpt("sched");
    await contact(p, a);
    const c = await made(base({ from: p.from, subject: "Scheduled" }), p);
    const when = srv.clock.now() + 3_600_000;
    const res = await send(c.id, { scheduledFor: new Date(when).toISOString() }, p);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(res.body.data).toMatchObject({ id: c.id, name: c.name, status: "SCHEDULED" });
    expect(Date.parse(res.body.data.scheduledFor)).toBe(when);
    expect(isIsoDate(res.body.data.scheduledFor)).toBe(true);
    const got = (await get(c.id, p)).body;
    expect(got.status).toBe("SCHEDULED");
    expect(Date.parse(got.scheduledFor)).toBe(when);
    srv.clock.advance(30 * 60_000);
    await srv.drainJobs();
    expect((await get(c.id, p)).body.status).toBe("SCHEDULED");
    expect(sink.byRecipient(a)).toEqual([]);
    const done = await waitCampaign(c.id, "SENT", p, 31 * 60_000);
    expect(Date.parse(done.sentAt)).toBeGreaterThanOrEqual(when);
    expect((await (await messageFor(a)).parse()).subject).toBe("Scheduled");
    expect(sink.byRecipient(a).length).toBe(1);
  });

  test("scheduledFor accepts anything a JavaScript Date parses (an RFC 2822 date)", async () => {
    const p = await project("rfc");
    await contact(p, rcpt("rfc"));
    const c = await made(base({ from: p.from }), p);
    const when = Math.floor((srv.clock.now() + 2 * 86_400_000) / 1000) * 1000;
    const res = await send(c.id, { scheduledFor: new Date(when).toUTCString() }, p);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe("SCHEDULED");
    expect(Date.parse(res.body.data.scheduledFor)).toBe(when);
    expectOk(await action(c.id, "cancel", {}, p));
  });

  test("a SCHEDULED campaign can be moved to another time, or sent now (README)", async () => {
    const p = await project("move");
    const a = rcpt("move");
    await contact(p, a);
    const c = await made(base({ from: p.from }), p);
    expectOk(await send(c.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p));
    const later = srv.clock.now() + 7_200_000;
    const moved = await send(c.id, { scheduledFor: new Date(later).toISOString() }, p);
    expect(moved.status).toBe(200);
    expect(Date.parse(moved.body.data.scheduledFor)).toBe(later);
    expect(Date.parse((await get(c.id, p)).body.scheduledFor)).toBe(later);
    const now = await send(c.id, {}, p);
    expect(now.status).toBe(200);
    expect(now.body.data).toEqual({ id: c.id, name: c.name, status: "SENDING", scheduledFor: null });
    expect((await waitCampaign(c.id, "SENT", p)).scheduledFor).toBeNull();
    // The old schedules do not start it again.
    srv.clock.advance(3 * 3_600_000);
    await srv.drainJobs();
    expect(sink.byRecipient(a).length).toBe(1);
    expect((await campaignEmails(c.id, p)).length).toBe(1);
  });

  test("PUT works while SCHEDULED; PUT of a SENT campaign is 409 INVALID_STATE; a SENT campaign can be deleted", async () => {
    const p = await project("putstate");
    await contact(p, rcpt("putstate"));
    const c = await made(base({ from: p.from }), p);
    expectOk(await send(c.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p));
    const upd = await put(c.id, { subject: "Changed while scheduled" }, p);
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({ subject: "Changed while scheduled", status: "SCHEDULED" });
    expectOk(await send(c.id, {}, p));
    await waitCampaign(c.id, "SENT", p);
    expectEnvelope(await put(c.id, { name: "too late" }, p), 409, "INVALID_STATE");
    expect((await get(c.id, p)).body.name).toBe(base().name);
    expectOk(await del(c.id, p));
    expectEnvelope(await get(c.id, p), 404);
  });
});

describe("cancel", () => {
  test("SCHEDULED -> CANCELLED: it never starts; PUT is then 409; cancelling again is 409 INVALID_STATE", async () => {
    const p = await project("cancel");
    const a = rcpt("cancel");
    await contact(p, a);
    const c = await made(base({ from: p.from }), p);
    const when = srv.clock.now() + 3_600_000;
    expectOk(await send(c.id, { scheduledFor: new Date(when).toISOString() }, p));
    const res = await action(c.id, "cancel", {}, p);
    expect(res.status).toBe(200);
    expect((await get(c.id, p)).body.status).toBe("CANCELLED");
    srv.clock.advance(2 * 3_600_000);
    await srv.drainJobs();
    expect((await get(c.id, p)).body.status).toBe("CANCELLED");
    expect(sink.byRecipient(a)).toEqual([]);
    expect(await campaignEmails(c.id, p)).toEqual([]);
    expectEnvelope(await action(c.id, "cancel", {}, p), 409, "INVALID_STATE");
    expectEnvelope(await put(c.id, { name: "x" }, p), 409, "INVALID_STATE");
  });

  test("cancel of a DRAFT or a SENT campaign is 409 INVALID_STATE", async () => {
    const p = await project("cancel2");
    await contact(p, rcpt("cancel2"));
    const d = await made(base({ from: p.from }), p);
    expectEnvelope(await action(d.id, "cancel", {}, p), 409, "INVALID_STATE");
    expect((await get(d.id, p)).body.status).toBe("DRAFT");
    expectOk(await send(d.id, {}, p));
    await waitCampaign(d.id, "SENT", p);
    expectEnvelope(await action(d.id, "cancel", {}, p), 409, "INVALID_STATE");
    expect((await get(d.id, p)).body.status).toBe("SENT");
  });

  test("SENDING (a deferred email keeps it there): PUT and DELETE are 409 INVALID_STATE; cancel -> CANCELLED and the deferred email never leaves", async () => {
    const p = await project("sending");
    const ok = rcpt("sending");
    const slow = rcpt("sending");
    await contact(p, ok);
    await contact(p, slow);
    sink.onRcpt = (r) => (r === slow ? { code: 451, message: "try later" } : undefined);
    try {
      const c = await made(base({ from: p.from }), p);
      expectOk(await send(c.id, {}, p));
      await messageFor(ok);
      const emails = await waitFor(
        async () => {
          await srv.drainJobs();
          return campaignEmails(c.id, p);
        },
        { until: (es) => es.some((e) => e.to === slow && e.status === "DEFERRED"), what: "the deferred email" },
      );
      expect(emails.length).toBe(2);
      expect((await get(c.id, p)).body.status).toBe("SENDING");
      expectEnvelope(await put(c.id, { name: "no" }, p), 409, "INVALID_STATE");
      expectEnvelope(await del(c.id, p), 409, "INVALID_STATE");
      expectEnvelope(await send(c.id, {}, p), 409, "INVALID_STATE");
      const res = await action(c.id, "cancel", {}, p);
      expect(res.status).toBe(200);
      expect((await get(c.id, p)).body.status).toBe("CANCELLED");
      sink.onRcpt = () => undefined;
      srv.clock.advance(5_000);
      await srv.drainJobs();
      srv.clock.advance(5_000);
      await srv.drainJobs();
      expect(sink.byRecipient(slow)).toEqual([]);
      expect((await get(c.id, p)).body.status).toBe("CANCELLED");
      const after = await campaignEmails(c.id, p);
      expect(after.find((e) => e.to === ok)!.status).toBe("DELIVERED");
      expect(after.find((e) => e.to === slow)!.status).toBe("CANCELLED");
    } finally {
      sink.onRcpt = () => undefined;
    }
  });

  test("a SCHEDULED campaign may be deleted; it then never starts", async () => {
    const p = await project("delsched");
    const a = rcpt("delsched");
    await contact(p, a);
    const c = await made(base({ from: p.from }), p);
    expectOk(await send(c.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p));
    expectOk(await del(c.id, p));
    srv.clock.advance(2 * 3_600_000);
    await srv.drainJobs();
    expect(sink.byRecipient(a)).toEqual([]);
    expectEnvelope(await get(c.id, p), 404);
  });
});

describe("POST /campaigns/:id/duplicate", () => {
  test("201 with a new DRAFT named \"<name> (copy)\", counters zero, same content; the original is unchanged", async () => {
    const p = await project("dup");
    await contact(p, rcpt("dup"));
    const c = await made(base({ from: p.from, name: "Newsletter", description: "d", fromName: "Team", type: "HEADLESS" }), p);
    expectOk(await send(c.id, {}, p));
    const sent = await waitCampaign(c.id, "SENT", p);
    expect(sent.sentCount).toBe(1);
    const res = await action(c.id, "duplicate", {}, p);
    expect(res.status).toBe(201);
    const copy = res.body?.data ?? res.body;
    expect(copy.id).toMatch(UUID);
    expect(copy.id).not.toBe(c.id);
    expect(copy).toMatchObject({
      name: "Newsletter (copy)",
      status: "DRAFT",
      subject: c.subject,
      body: c.body,
      from: p.from,
      fromName: "Team",
      description: "d",
      type: "HEADLESS",
      audienceType: "ALL",
      projectId: p.projectId,
    });
    for (const k of COUNTERS) expect(copy[k]).toBe(0);
    expect(copy.sentAt).toBeNull();
    expect(copy.scheduledFor).toBeNull();
    expect((await get(copy.id, p)).body).toEqual(copy);
    expect((await get(c.id, p)).body).toEqual(sent);
  });
});

describe("audiences", () => {
  let p: Account & { from: string };
  const subA = rcpt("aud");
  const subB = rcpt("aud");
  const subC = rcpt("aud");
  const unsub = rcpt("aud");
  beforeAll(async () => {
    p = await project("aud");
    await contact(p, subA, true, { plan: "pro", firstName: "A" });
    await contact(p, subB, true, { plan: "free", firstName: "B" });
    await contact(p, subC, true, { plan: "pro", firstName: "C" });
    await contact(p, unsub, false, { plan: "pro", firstName: "U" });
  });
  async function run(body: Record<string, unknown>) {
    const c = await made({ ...base({ from: p.from }), ...body }, p);
    expectOk(await send(c.id, {}, p));
    const done = await waitCampaign(c.id, "SENT", p);
    const emails = await campaignEmails(c.id, p);
    return { c: done, emails, to: emails.map((e) => e.to).sort() };
  }

  test("ALL (MARKETING): every subscribed contact, one email each; sourceType CAMPAIGN and campaignId in GET /emails", async () => {
    const { c, emails, to } = await run({ audienceType: "ALL" });
    expect(to).toEqual([subA, subB, subC].sort());
    expect(c.totalRecipients).toBe(3);
    for (const e of emails) {
      expect(e.sourceType).toBe("CAMPAIGN");
      expect(e.campaignId).toBe(c.id);
      expect(e.status).toBe("DELIVERED");
    }
    const ids = emails.map((e) => e.contactId);
    expect(new Set(ids).size).toBe(3);
  });

  test("ALL (HEADLESS): subscribed contacts only", async () => {
    const { to } = await run({ audienceType: "ALL", type: "HEADLESS" });
    expect(to).toEqual([subA, subB, subC].sort());
  });

  test("ALL (TRANSACTIONAL): every contact, unsubscribed ones too", async () => {
    const { c, to } = await run({ audienceType: "ALL", type: "TRANSACTIONAL" });
    expect(to).toEqual([subA, subB, subC, unsub].sort());
    expect(c.totalRecipients).toBe(4);
  });

  test("FILTERED: the contacts matching audienceCondition (subscribed ones for MARKETING; all for TRANSACTIONAL)", async () => {
    const cond = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] };
    expect((await run({ audienceType: "FILTERED", audienceCondition: cond })).to).toEqual([subA, subC].sort());
    expect((await run({ audienceType: "FILTERED", audienceCondition: cond, type: "TRANSACTIONAL" })).to).toEqual([subA, subC, unsub].sort());
  });

  test("FILTERED matching nobody is 400 at send", async () => {
    const cond = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "enterprise" }] }] };
    const c = await made({ ...base({ from: p.from }), audienceType: "FILTERED", audienceCondition: cond }, p);
    expectEnvelope(await send(c.id, {}, p), 400);
    expect((await get(c.id, p)).body.status).toBe("DRAFT");
  });

  test("SEGMENT: the segment's members at fan-out time (STATIC and DYNAMIC), unsubscribed members skipped for MARKETING", async () => {
    const st = await srv.api("/segments", { key: p.secretKey, body: { name: `Static ${seq}`, type: "STATIC" } });
    expectOk(st);
    expectOk(await srv.api(`/segments/${st.body.id}/members`, { key: p.secretKey, body: { emails: [subB, unsub] } }));
    expect((await run({ audienceType: "SEGMENT", segmentId: st.body.id })).to).toEqual([subB]);
    expect((await run({ audienceType: "SEGMENT", segmentId: st.body.id, type: "TRANSACTIONAL" })).to).toEqual([subB, unsub].sort());

    const dyn = await srv.api("/segments", {
      key: p.secretKey,
      body: { name: `Dyn ${seq}`, condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "free" }] }] } },
    });
    expectOk(dyn);
    const c = await made({ ...base({ from: p.from }), audienceType: "SEGMENT", segmentId: dyn.body.id }, p);
    expect(c.segmentId).toBe(dyn.body.id);
    // Membership is taken when the campaign is sent, not when it is created.
    expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: subA, data: { plan: "free" } } }));
    try {
      expectOk(await send(c.id, {}, p));
      await waitCampaign(c.id, "SENT", p);
      expect((await campaignEmails(c.id, p)).map((e) => e.to).sort()).toEqual([subA, subB].sort());
    } finally {
      expectOk(await srv.api("/contacts", { key: p.secretKey, body: { email: subA, data: { plan: "pro" } } }));
    }
  });

  test("a segment used by a SCHEDULED campaign cannot be deleted (409 INVALID_STATE)", async () => {
    const st = await srv.api("/segments", { key: p.secretKey, body: { name: `Busy ${seq}`, type: "STATIC" } });
    expectOk(await srv.api(`/segments/${st.body.id}/members`, { key: p.secretKey, body: { emails: [subA] } }));
    const c = await made({ ...base({ from: p.from }), audienceType: "SEGMENT", segmentId: st.body.id }, p);
    expectOk(await send(c.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p));
    expectEnvelope(await srv.api(`/segments/${st.body.id}`, { method: "DELETE", key: p.secretKey }), 409, "INVALID_STATE");
    expectOk(await action(c.id, "cancel", {}, p));
    expectOk(await srv.api(`/segments/${st.body.id}`, { method: "DELETE", key: p.secretKey }));
  });
});

describe("suppression", () => {
  test("a hard-bounced address gets a SUPPRESSED email (not attempted), even in a TRANSACTIONAL campaign", async () => {
    const p = await project("supp");
    const bad = rcpt("supp");
    const good = rcpt("supp");
    await contact(p, good);
    sink.onRcpt = (r) => (r === bad ? { code: 550, message: "no such user" } : undefined);
    try {
      const r = await srv.api("/v1/send", { key: p.secretKey, body: { to: bad, from: p.from, subject: "s", body: "b" } });
      expectOk(r);
      await waitFor(
        async () => {
          await srv.drainJobs();
          return (await srv.api(`/emails/${r.body.data.emails[0].email}`, { key: p.secretKey })).body;
        },
        { until: (e) => e.status === "BOUNCED", what: "the bounce" },
      );
      const attempts = sink.rcptAttempts.get(bad);
      const c = await made(base({ from: p.from, type: "TRANSACTIONAL" }), p);
      expectOk(await send(c.id, {}, p));
      await waitCampaign(c.id, "SENT", p);
      const emails = await campaignEmails(c.id, p);
      expect(emails.find((e) => e.to === bad)?.status).toBe("SUPPRESSED");
      expect(emails.find((e) => e.to === good)?.status).toBe("DELIVERED");
      expect(sink.rcptAttempts.get(bad)).toBe(attempts);
    } finally {
      sink.onRcpt = () => undefined;
    }
  });
});

describe("rendering per type", () => {
  let p: Account & { from: string };
  const a = rcpt("type");
  beforeAll(async () => {
    p = await project("types");
    await contact(p, a, true, { firstName: "Tess" });
  });
  async function deliver(type: string, body = "<p>Hello {{firstName}}</p>") {
    const tag = `#${++seq}`;
    const c = await made(base({ from: p.from, type, subject: `${type} {{firstName}} ${tag}`, body, fromName: "Camp Team", replyTo: "reply@elsewhere-bb.example" }), p);
    expectOk(await send(c.id, {}, p));
    await waitCampaign(c.id, "SENT", p);
    const m = await waitFor(() => sink.byRecipient(a).find((x) => x.raw.toString().includes(`${type} Tess ${tag}`)), { what: `${type} message` });
    return { c, m, parsed: await m.parse() };
  }

  test("MARKETING: unsubscribe footer, List-Unsubscribe and List-Unsubscribe-Post One-Click; from, fromName, replyTo, variables", async () => {
    const { m, parsed } = await deliver("MARKETING");
    expect(parsed.subject).toStartWith("MARKETING Tess #");
    expect(parsed.from?.value[0]).toMatchObject({ name: "Camp Team", address: p.from });
    expect(parsed.replyTo?.value[0]?.address).toBe("reply@elsewhere-bb.example");
    const html = String(parsed.html);
    expect(html).toContain("Hello Tess");
    expect(rawHeader(m, "List-Unsubscribe")).toMatch(/<https?:[^>]+>/);
    expect(rawHeader(m, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    // The footer adds a link to our unsubscribe page that the body did not have.
    expect(hrefs(html).filter(ours).length).toBeGreaterThan(0);
  });

  test("MARKETING whose body already uses {{unsubscribeUrl}} gets no second footer link", async () => {
    const { parsed } = await deliver("MARKETING", '<p>Bye {{firstName}}</p><a href="{{unsubscribeUrl}}">leave</a>');
    const html = String(parsed.html);
    const unsubLinks = hrefs(html).filter(ours);
    expect(unsubLinks.length).toBe(1);
  });

  test("HEADLESS: List-Unsubscribe headers, no footer", async () => {
    const { m, parsed } = await deliver("HEADLESS");
    expect(rawHeader(m, "List-Unsubscribe")).toMatch(/<https?:[^>]+>/);
    expect(rawHeader(m, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    expect(hrefs(String(parsed.html)).filter(ours)).toEqual([]);
  });

  test("TRANSACTIONAL: no footer, no List-Unsubscribe", async () => {
    const { m, parsed } = await deliver("TRANSACTIONAL");
    expect(rawHeader(m, "List-Unsubscribe")).toBeUndefined();
    expect(rawHeader(m, "List-Unsubscribe-Post")).toBeUndefined();
    expect(hrefs(String(parsed.html)).filter(ours)).toEqual([]);
    // Tracking defaults to MARKETING_ONLY for new projects (decisions.md): no pixel in transactional mail.
    expect(imgs(String(parsed.html)).filter(ours)).toEqual([]);
  });
});

describe("POST /campaigns/:id/test", () => {
  test("sends once with the subject prefixed [TEST], rendered with the address as email; { success, message }; no contact, no counters, status unchanged", async () => {
    const p = await project("test");
    const to = rcpt("test");
    const c = await made(base({ from: p.from, subject: "Offer for {{email}}", body: `<p>To {{email}} [{{firstName}}]</p><a href="${LANDING}">go</a>` }), p);
    const res = await action(c.id, "test", { email: to }, p);
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(typeof res.body.message).toBe("string");
    const m = await messageFor(to);
    const parsed = await m.parse();
    expect(parsed.subject).toBe(`[TEST] Offer for ${to}`);
    const html = String(parsed.html);
    expect(html).toContain(`To ${to} []`);
    // No tracking: the link is left as written.
    expect(hrefs(html)).toContain(LANDING);
    expect(imgs(html).filter(ours)).toEqual([]);
    expect(sink.byRecipient(to).length).toBe(1);
    expect(await lookup(to, p)).toBeUndefined();
    const after = (await get(c.id, p)).body;
    expect(after.status).toBe("DRAFT");
    for (const k of COUNTERS) expect(after[k]).toBe(0);
    expect(await campaignEmails(c.id, p)).toEqual([]);
  });

  test("a missing or invalid email is 422", async () => {
    const c = await made(base());
    expectValidation(await action(c.id, "test", {}), "email");
    expectValidation(await action(c.id, "test", { email: "nope" }), "email");
  });
});

describe("GET /campaigns/:id/stats and counters", () => {
  test("a DRAFT: every count and rate is 0", async () => {
    const c = await made(base());
    const res = await srv.api(`/campaigns/${c.id}/stats`, { key: acc.secretKey });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([...STATS_KEYS].sort());
    for (const k of STATS_KEYS) expect(res.body[k]).toBe(0);
  });

  test("delivered, bounced (550 at RCPT counts as sent), opened, clicked, unsubscribed; rates are percentages of sentCount with two decimals", async () => {
    const p = await project("stats");
    const a = rcpt("stats");
    const b = rcpt("stats");
    const bad = rcpt("stats");
    for (const e of [a, b, bad]) await contact(p, e);
    sink.onRcpt = (r) => (r === bad ? { code: 550, message: "no such user" } : undefined);
    let c: any;
    try {
      c = await made(base({ from: p.from, body: `<p>Hi</p><a href="${LANDING}">Offer</a>` }), p);
      expectOk(await send(c.id, {}, p));
      await waitCampaign(c.id, "SENT", p);
    } finally {
      sink.onRcpt = () => undefined;
    }
    // A opens and clicks (default tracking MARKETING_ONLY tracks campaign mail).
    const ma = await (await messageFor(a)).parse();
    const htmlA = String(ma.html);
    const pixel = imgs(htmlA).find(ours);
    expect(pixel).toBeDefined();
    expect((await fetch(pixel!)).status).toBe(200);
    // The tracked link is the one of ours that redirects to the landing page (the other is the footer's unsubscribe link).
    let clicked = false;
    for (const h of hrefs(htmlA).filter(ours)) {
      if (/unsubscribe|manage/i.test(h)) continue;
      const cr = await fetch(h, { redirect: "manual" });
      if (cr.headers.get("location") === LANDING) clicked = true;
    }
    expect(clicked).toBe(true);
    // B unsubscribes with the one-click List-Unsubscribe POST.
    const lu = rawHeader(await messageFor(b), "List-Unsubscribe") ?? "";
    const url = lu.match(/<(https?:[^>]+)>/)?.[1];
    expect(url).toBeDefined();
    const ur = await fetch(url!, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(ur.status).toBeLessThan(300);
    expect((await lookup(b, p))?.subscribed).toBe(false);

    const want = {
      totalRecipients: 3,
      sentCount: 3,
      deliveredCount: 2,
      openedCount: 1,
      clickedCount: 1,
      bouncedCount: 1,
      complainedCount: 0,
      unsubscribedCount: 1,
      deliveryRate: 66.67,
      openRate: 33.33,
      clickRate: 33.33,
      bounceRate: 33.33,
    };
    const stats = await waitFor(
      async () => {
        await srv.drainJobs();
        return (await srv.api(`/campaigns/${c.id}/stats`, { key: p.secretKey })).body;
      },
      { until: (s) => s.openedCount === 1 && s.clickedCount === 1 && s.unsubscribedCount === 1 && s.bouncedCount === 1, what: "stats" },
    );
    expect(Object.keys(stats).sort()).toEqual([...STATS_KEYS].sort());
    expect(stats).toEqual(want);
    const obj = (await get(c.id, p)).body;
    for (const k of COUNTERS) expect(obj[k]).toBe((want as any)[k]);
    const emails = await campaignEmails(c.id, p);
    expect(emails.find((e) => e.to === bad)?.status).toBe("BOUNCED");
  });
});

describe("GET /activity/upcoming", () => {
  test("lists a scheduled campaign once (type campaign.scheduled); not after cancel", async () => {
    const p = await project("upcoming");
    await contact(p, rcpt("upcoming"));
    const c = await made(base({ from: p.from }), p);
    expectOk(await send(c.id, { scheduledFor: new Date(srv.clock.now() + 3_600_000).toISOString() }, p));
    const res = await srv.api("/activity/upcoming", { key: p.secretKey });
    expect(res.status).toBe(200);
    const mine = items(res.body).filter((i) => JSON.stringify(i).includes(c.id));
    expect(mine.length).toBe(1);
    expect(mine[0].type).toBe("campaign.scheduled");
    expectOk(await action(c.id, "cancel", {}, p));
    const after = await srv.api("/activity/upcoming", { key: p.secretKey });
    expect(items(after.body).filter((i) => JSON.stringify(i).includes(c.id))).toEqual([]);
  });
});

// The campaign API per spec + decisions: shapes, status codes, state refusals, and delivery to the
// smtp-server sink (recipient sets, headers and footer per type, DKIM, variables, stats).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { insertContent, insertEmails } from "../../src/mail/outbox/enqueue";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { waitForStatus, type DeliveryEnv } from "../support/delivery";
import { expectTimeBetween } from "../support/time";
import { sendEnv, verifyDkim } from "../send/support";
import { addContacts, campaignBody, createCampaign, getCampaign, RCPT, SENDER, waitForCampaign } from "./support";

let env: DeliveryEnv;
let key: string;
beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
});
afterAll(() => env.close());

const api = (path: string, opts: Parameters<DeliveryEnv["srv"]["api"]>[1] = {}) => env.srv.api(path, { key, ...opts });

describe("CRUD", () => {
  test("create answers 201 { success, data } in DRAFT with zero counters; get, list, duplicate", async () => {
    const r = await api("/campaigns", { body: campaignBody({ description: "d" }) });
    expect(r.status).toBe(201);
    expect(r.body.success).toBe(true);
    const c = r.body.data;
    expect(c).toMatchObject({
      name: "Spring news",
      description: "d",
      from: `news@${SENDER}`,
      fromName: "News",
      type: "MARKETING",
      status: "DRAFT",
      audienceType: "ALL",
      totalRecipients: 0,
      sentCount: 0,
      deliveredCount: 0,
      openedCount: 0,
      clickedCount: 0,
      bouncedCount: 0,
      complainedCount: 0,
      unsubscribedCount: 0,
      projectId: env.acct.projectId,
      scheduledFor: null,
      sentAt: null,
    });
    expect(c.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await api(`/campaigns/${c.id}`)).body).toEqual(c);

    const dup = await api(`/campaigns/${c.id}/duplicate`, { method: "POST" });
    expect(dup.status).toBe(201);
    expect(dup.body).toMatchObject({ name: "Spring news (copy)", status: "DRAFT", sentCount: 0 });
    expect(dup.body.id).not.toBe(c.id);

    const list = await api("/campaigns?pageSize=1");
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ page: 1, pageSize: 1 });
    expect(list.body.total).toBeGreaterThanOrEqual(2);
    expect(list.body.totalPages).toBe(list.body.total);
    expect(list.body.data[0].id).toBe(dup.body.id); // createdAt desc

    const byName = await api("/campaigns?search=SPRING%20NEWS%20(COPY)");
    expect(byName.body.data.map((x: any) => x.id)).toEqual([dup.body.id]);
    const drafts = await api("/campaigns?status=DRAFT");
    expect(drafts.body.data.every((x: any) => x.status === "DRAFT")).toBe(true);
    expect((await api("/campaigns?status=BOGUS")).status).toBe(400);
    expect((await api("/campaigns?sort=name&dir=asc")).status).toBe(200);
  });

  test("validation: 422 for missing fields and audience rules, 403 for an unverified sender, 404 for another project's id", async () => {
    const missing = await api("/campaigns", { body: { name: "x" } });
    expect(missing.status).toBe(422);
    expect(missing.body.error.code).toBe("VALIDATION_ERROR");
    const seg = await api("/campaigns", { body: campaignBody({ audienceType: "SEGMENT" }) });
    expect(seg.status).toBe(422);
    expect(seg.body.error.errors[0].field).toBe("segmentId");
    const filt = await api("/campaigns", { body: campaignBody({ audienceType: "FILTERED" }) });
    expect(filt.status).toBe(422);
    expect(filt.body.error.errors[0].field).toBe("audienceCondition");
    const badType = await api("/campaigns", { body: campaignBody({ type: "NEWSLETTER" }) });
    expect(badType.status).toBe(422);
    const unverified = await api("/campaigns", { body: campaignBody({ from: "x@unverified.test" }) });
    expect(unverified.status).toBe(403);
    expect((await api("/campaigns", { raw: "{oops", headers: { "content-type": "application/json" } })).status).toBe(400);
    expect((await api("/campaigns/0190a0a0-0000-7000-8000-000000000000")).status).toBe(404);
    expect((await api("/campaigns", { key: env.acct.publicKey })).status).toBe(401);
  });

  test("PUT updates any subset in DRAFT; send 400s: unparseable or past scheduledFor, empty audience", async () => {
    const c = await createCampaign(env, { name: "Empty", type: "MARKETING" });
    const put = await api(`/campaigns/${c.id}`, { method: "PUT", body: { name: "Renamed", subject: "New {{email}}" } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ name: "Renamed", subject: "New {{email}}", status: "DRAFT" });
    expect((await api(`/campaigns/${c.id}`, { method: "PUT", body: { subject: "{{#bad" } })).status).toBe(422);
    expect((await api(`/campaigns/${c.id}/send`, { body: { scheduledFor: "not a date" } })).status).toBe(400);
    expect((await api(`/campaigns/${c.id}/send`, { body: { scheduledFor: "2001-01-01T00:00:00Z" } })).status).toBe(400);
    // No contact at all in a fresh project: the audience is empty.
    const other = await env.srv.api("/users/@me/projects", { body: { name: "Other" }, cookie: env.acct.cookie });
    const r = await env.srv.api("/campaigns", { key: other.body.secret, body: campaignBody() });
    expect(r.status).toBe(403); // the other project has no verified domain
    expect((await api(`/campaigns/${c.id}/cancel`, { method: "POST" })).status).toBe(409);
  });
});

describe("delivery", () => {
  test("ALL MARKETING: subscribed only, suppressed recorded SUPPRESSED, variables, footer, List-Unsubscribe, DKIM, SENT, stats, GET /emails?campaignId", async () => {
    const subs = [`ann@${RCPT}`, `bob@${RCPT}`, `cyd@${RCPT}`];
    await addContacts(env, [
      { email: subs[0]!, data: { firstName: "Ann", plan: "pro" } },
      { email: subs[1]!, data: { firstName: "Bob", plan: "free" } },
      { email: subs[2]!, data: { plan: "team" } },
      { email: `uns@${RCPT}`, subscribed: false, data: { firstName: "Uns" } },
      { email: `sup@${RCPT}` },
    ]);
    await env.srv.ctx.db.insertInto("suppressions").values({ id: Bun.randomUUIDv7(), project_id: env.acct.projectId, email: `sup@${RCPT}`, reason: "MANUAL", detail: null, source: "API", email_id: null, job_id: null, created_at: Date.now() }).execute();
    env.sink.reset();
    const c = await createCampaign(env);
    const sendFrom = env.srv.clock.now();
    const s = await api(`/campaigns/${c.id}/send`, { method: "POST" });
    const sendTo = env.srv.clock.now();
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ success: true, data: { id: c.id, name: "Spring news", status: "SENDING", scheduledFor: null } });
    expect(typeof s.body.message).toBe("string");
    // A second send is a state refusal; so are PUT and DELETE while SENDING.
    const done = await waitForCampaign(env, c.id, "SENT");
    expect(done.totalRecipients).toBe(4); // 3 subscribed + 1 suppressed (recorded, not attempted)
    expect(done.sentCount).toBe(3);
    expect(done.deliveredCount).toBe(3);
    // decisions.md "Campaigns": an immediate send sets sentAt as it moves to SENDING.
    expectTimeBetween(done.sentAt, sendFrom, sendTo);
    const got = env.sink.messages.flatMap((m) => m.to).sort();
    expect(got).toEqual([...subs].sort());

    const ann = await env.sink.byRecipient(subs[0]!)[0]!.parse();
    expect(ann.subject).toBe("Hello Ann");
    expect(ann.html).toContain("plan pro");
    const annRaw = env.sink.byRecipient(subs[0]!)[0]!.raw.toString();
    expect(annRaw).toMatch(/^List-Unsubscribe:\s+<http/m);
    expect(annRaw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click/m);
    expect(String(ann.html)).toMatch(/unsubscribe/i);
    const cyd = await env.sink.byRecipient(subs[2]!)[0]!.parse();
    expect(cyd.subject).toBe("Hello there");
    // Every message passes DKIM: the first is built one at a time, the next ones from the content's skeleton.
    for (const to of subs) {
      const dkim = await verifyDkim(env, env.sink.byRecipient(to)[0]!.raw);
      expect(dkim[0]!.status.result).toBe("pass");
      expect(String((await env.sink.byRecipient(to)[0]!.parse()).html)).toMatch(/unsubscribe/i);
    }

    const emails = await api(`/emails?campaignId=${c.id}&limit=100`);
    expect(emails.body.total).toBe(4);
    expect(emails.body.data.every((e: any) => e.sourceType === "CAMPAIGN" && e.campaignId === c.id)).toBe(true);
    expect(emails.body.data.find((e: any) => e.to === `sup@${RCPT}`).status).toBe("SUPPRESSED");

    // Open and click through the tracked links of Ann's message; a bounce for a new campaign below.
    const html = String(ann.html);
    const pixel = /<img[^>]+src="([^"]+)"/.exec(html.slice(html.lastIndexOf("<img")))![1]!;
    expect((await fetch(pixel)).status).toBe(200);
    const link = /href="([^"]+\/c\/[^"]+)"/.exec(html)?.[1] ?? /href="(http[^"]+)"[^>]*>Read/.exec(html)![1]!;
    await fetch(link, { redirect: "manual" });
    const stats = await api(`/campaigns/${c.id}/stats`);
    expect(stats.status).toBe(200);
    expect(stats.body).toMatchObject({ totalRecipients: 4, sentCount: 3, deliveredCount: 3, openedCount: 1, clickedCount: 1, bouncedCount: 0, complainedCount: 0, unsubscribedCount: 0, deliveryRate: 100, openRate: 33.33, clickRate: 33.33, bounceRate: 0 });
    const after = await getCampaign(env, c.id);
    expect(after.openedCount).toBe(1);
    expect(after.clickedCount).toBe(1);

    expect((await api(`/campaigns/${c.id}`, { method: "PUT", body: { name: "x" } })).status).toBe(409);
    expect((await api(`/campaigns/${c.id}/send`, { method: "POST" })).body.error.code).toBe("INVALID_STATE");
    expect((await api(`/campaigns/${c.id}/cancel`, { method: "POST" })).body.error.code).toBe("INVALID_STATE");
  }, 30_000);

  test("TRANSACTIONAL reaches unsubscribed contacts too, without footer or List-Unsubscribe; a bounce is counted", async () => {
    env.sink.reset();
    env.sink.onRcpt = (rcpt) => (rcpt === `bob@${RCPT}` ? { code: 550, message: "no such user" } : undefined);
    const c = await createCampaign(env, { type: "TRANSACTIONAL", body: "<p>Receipt for {{email}}</p>" });
    expect((await api(`/campaigns/${c.id}/send`, { body: {} })).status).toBe(200);
    const done = await waitForCampaign(env, c.id, "SENT");
    env.sink.onRcpt = () => undefined;
    const got = env.sink.messages.flatMap((m) => m.to).sort();
    expect(got).toEqual([`ann@${RCPT}`, `cyd@${RCPT}`, `uns@${RCPT}`].sort());
    expect(done.totalRecipients).toBe(5);
    expect(done.bouncedCount).toBe(1);
    const m = await env.sink.byRecipient(`uns@${RCPT}`)[0]!.parse();
    expect(env.sink.byRecipient(`uns@${RCPT}`)[0]!.raw.toString()).not.toMatch(/^List-Unsubscribe/im);
    expect(String(m.html)).toContain(`Receipt for uns@${RCPT}`);
    expect(String(m.html)).not.toMatch(/unsubscribe/i);
    const stats = await api(`/campaigns/${c.id}/stats`);
    expect(stats.body).toMatchObject({ sentCount: 4, bouncedCount: 1, bounceRate: 25 });
  }, 30_000);

  test("HEADLESS: List-Unsubscribe headers, no footer; test send: [TEST] subject, no tracking, no counters", async () => {
    env.sink.reset();
    const c = await createCampaign(env, { type: "HEADLESS", body: "<p>Hi {{email}} <a href=\"https://example.com/x\">x</a></p>" });
    const t = await api(`/campaigns/${c.id}/test`, { body: { email: "Tester@Rcpt.Test" } });
    expect(t.status).toBe(200);
    expect(t.body.success).toBe(true);
    expect(typeof t.body.message).toBe("string");
    const [msg] = await env.sink.waitFor(1);
    const p = await msg!.parse();
    expect(p.subject).toBe("[TEST] Hello there");
    expect(String(p.html)).toContain("Hi tester@rcpt.test");
    expect(String(p.html)).toContain('href="https://example.com/x"');
    expect(String(p.html)).not.toMatch(/<img/);
    expect(msg!.raw.toString()).toMatch(/^List-Unsubscribe:\s/m);
    expect((await getCampaign(env, c.id)).status).toBe("DRAFT");
    expect((await api(`/campaigns/${c.id}/test`, { body: { email: "nope" } })).status).toBe(422);

    env.sink.reset();
    await api(`/campaigns/${c.id}/send`, { method: "POST" });
    await waitForCampaign(env, c.id, "SENT");
    const ann = await env.sink.byRecipient(`ann@${RCPT}`)[0]!.parse();
    expect(env.sink.byRecipient(`ann@${RCPT}`)[0]!.raw.toString()).toMatch(/^List-Unsubscribe:\s/m);
    expect(String(ann.html)).not.toMatch(/unsubscribe/i);
    expect(env.sink.byRecipient(`uns@${RCPT}`)).toEqual([]);
  }, 30_000);

  test("scheduled send fires at its time (clock moved), shows in /activity/upcoming until then; cancel before sending", async () => {
    env.sink.reset();
    const c = await createCampaign(env, { name: "Later" });
    const at = new Date(env.srv.clock.now() + 3_600_000).toISOString();
    const s = await api(`/campaigns/${c.id}/send`, { body: { scheduledFor: at } });
    expect(s.status).toBe(200);
    expect(s.body.data).toMatchObject({ id: c.id, status: "SCHEDULED", scheduledFor: at });
    const up = await api("/activity/upcoming");
    // Listed once, as the scheduled campaign (not also as its internal start job).
    const mine = (items: { id: string; details: Record<string, unknown> }[]) => items.filter((i) => i.id === c.id || i.details?.campaignId === c.id || JSON.stringify(i).includes("campaign:start"));
    expect(mine(up.body) as unknown[]).toEqual([{ type: "campaign.scheduled", id: c.id, at, details: { campaignId: c.id, name: "Later", subject: expect.any(String) } }]);
    // PUT is allowed while SCHEDULED.
    expect((await api(`/campaigns/${c.id}`, { method: "PUT", body: { subject: "Later {{email}}" } })).status).toBe(200);

    const c2 = await createCampaign(env, { name: "Cancelled" });
    await api(`/campaigns/${c2.id}/send`, { body: { scheduledFor: at } });
    const cancel = await api(`/campaigns/${c2.id}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(200);
    expect(cancel.body.status).toBe("CANCELLED");
    expect(JSON.stringify((await api("/activity/upcoming")).body)).not.toContain(c2.id);
    expect((await api(`/campaigns/${c2.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await api(`/campaigns/${c2.id}`)).status).toBe(404);
    expect((await api("/activity/upcoming")).body.filter((i: { type: string }) => i.type.startsWith("job.campaign"))).toEqual([]);

    env.srv.clock.advance(3_600_000 + 1000);
    env.srv.ctx.jobs.wake();
    const done = await waitForCampaign(env, c.id, "SENT");
    expect(done.sentCount).toBe(2); // bob bounced above: unsubscribed and suppressed
    const m = await env.sink.byRecipient(`ann@${RCPT}`)[0]!.parse();
    expect(m.subject).toBe(`Later ann@${RCPT}`);
    expect(env.sink.messages.length).toBe(2);
  }, 30_000);

  test("emails of a cancelled campaign that a restart put back in the queue are never sent: CANCELLED", async () => {
    // A crash or SIGTERM right after a cancel requeues the emails the outbox had claimed (SENDING ->
    // PENDING); the outbox checks the campaign's status when it claims them again.
    const c = await createCampaign(env, { name: "Cancelled before the restart" });
    const ctx = env.srv.ctx;
    const now = ctx.clock.now();
    const contentId = await ctx.db.transaction().execute(async (trx) => {
      await trx.updateTable("campaigns").set({ status: "CANCELLED", cancelled_at: now, completed_at: now, updated_at: now }).where("id", "=", c.id).execute();
      return insertContent(trx, now, { projectId: env.acct.projectId, subject: "Never", html: "<p>never</p>", fromEmail: `news@${SENDER}`, fromName: null, replyTo: null, type: "MARKETING" });
    });
    const ids = await ctx.db.transaction().execute((trx) =>
      insertEmails(trx, now, ctx.config.hostname, [
        { projectId: env.acct.projectId, contentId, contactId: null, toEmail: `requeued1@${RCPT}`, vars: {}, sourceType: "CAMPAIGN", campaignId: c.id },
        { projectId: env.acct.projectId, contentId, contactId: null, toEmail: `requeued2@${RCPT}`, vars: {}, sourceType: "CAMPAIGN", campaignId: c.id },
      ]),
    );
    const before = env.sink.messages.length;
    wakeOutbox(ctx);
    for (const id of ids) expect((await waitForStatus(env.srv, id, ["CANCELLED", "DELIVERED"])).status).toBe("CANCELLED");
    expect(env.sink.messages.length).toBe(before);
    expect(env.sink.byRecipient(`requeued1@${RCPT}`)).toHaveLength(0);
  });
});

// The complete delivery trail: every outcome (sent, deferred with the reply, failed, delivered,
// bounced, suppressed) is an event on the contact and an /activity item; opens and clicks made
// while the outcome is not yet committed are recorded. Real SMTP to the sink, retries on 1s,2s.
import { afterAll, beforeAll, describe, expect, test, setDefaultTimeout } from "bun:test";
import { insertContent, insertEmails } from "../../src/mail/outbox/enqueue";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { RCPT, SENDER, emailView, sendEnv, waitForView } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { hrefs, imgSrcs } from "../feedback/support";

setDefaultTimeout(30_000); // the machine is shared; nothing here asserts timings

let env: DeliveryEnv;
let key: string;
beforeAll(async () => {
  env = await sendEnv({ config: { retryScheduleMs: [1000, 2000] } });
  key = env.acct.secretKey;
}, 30_000);
afterAll(() => env.close(), 30_000);

const send = async (to: string, body = "<p>Hello</p>") => {
  const r = await env.srv.api("/v1/send", { key, body: { to, from: `news@${SENDER}`, subject: "Hi", body } });
  expect(r.status).toBe(200);
  const e = r.body.data.emails[0] as { email: string; contact: { id: string } };
  return { email: e.email, contact: e.contact.id };
};

const moveClock = (ms: number) => {
  env.srv.clock.advance(ms);
  wakeOutbox(env.srv.ctx);
};

const waitForAttempts = (id: string, n: number) =>
  waitFor(() => emailView(env.srv, key, id), { until: (v) => v.attempts >= n, what: `email ${id} with ${n} attempts` });

/** The contact's activity, oldest first. */
async function trail(contactId: string) {
  const r = await env.srv.api(`/activity?contactId=${contactId}&limit=100`, { key });
  expect(r.status).toBe(200);
  return (r.body.data as any[]).reverse();
}

describe("delivery outcomes on the trail", () => {
  test("451 then 250: email.sent, email.deferred with the reply, email.delivery", async () => {
    const to = `grey@${RCPT}`;
    env.sink.onRcpt = (rcpt, attempt) => (rcpt === to && attempt === 1 ? { code: 451, message: "4.7.1 greylisted, try later" } : undefined);
    const m = await send(to);
    await waitForView(env.srv, key, m.email, "DEFERRED");
    moveClock(1100);
    await waitForView(env.srv, key, m.email, "DELIVERED");
    const items = await trail(m.contact);
    expect(items.map((i) => i.type)).toEqual(["email.sent", "email.deferred", "email.delivery"]);
    const deferred = items[1];
    expect(deferred.contactEmail).toBe(to);
    expect(deferred.metadata).toMatchObject({ emailId: m.email, to, code: 451, attempt: 1 });
    expect(deferred.metadata.reply).toContain("greylisted");
    expect(Date.parse(deferred.metadata.nextAttemptAt)).toBeGreaterThan(Date.parse(deferred.timestamp));
    // The same on the contact's events.
    const evs = await env.srv.api(`/events/contact/${m.contact}`, { key });
    expect(evs.body.data.map((e: any) => e.name).sort()).toEqual(["email.deferred", "email.delivery", "email.sent"]);
    env.sink.onRcpt = () => undefined;
  });

  test("4xx on every attempt: two email.deferred, then email.failed when the schedule (1s,2s) is exhausted", async () => {
    const to = `full@${RCPT}`;
    env.sink.onRcpt = (rcpt) => (rcpt === to ? { code: 452, message: "4.2.2 mailbox full" } : undefined);
    const m = await send(to);
    await waitForAttempts(m.email, 1);
    moveClock(1100);
    await waitForAttempts(m.email, 2);
    moveClock(2100);
    const v = await waitForView(env.srv, key, m.email, "FAILED");
    expect(v.attempts).toBe(3);
    const items = await trail(m.contact);
    expect(items.map((i) => i.type)).toEqual(["email.sent", "email.deferred", "email.deferred", "email.failed"]);
    expect(items.map((i) => i.metadata.attempt)).toEqual([undefined, 1, 2, 3]);
    expect(items[3].metadata).toMatchObject({ emailId: m.email, code: 452 });
    expect(items[3].metadata.reply).toContain("mailbox full");
    // Filterable by type and counted in /activity/stats.
    const failed = await env.srv.api("/activity?type=email.failed", { key });
    expect(failed.body.total).toBe(1);
    expect(failed.body.data[0].contactId).toBe(m.contact);
    const stats = await env.srv.api("/activity/stats", { key });
    expect(stats.body.failed).toBe(1);
    expect(stats.body.deferred).toBe(3);
    env.sink.onRcpt = () => undefined;
  });

  test("a hard bounce, then a send to the suppressed address: email.bounce, then email.suppressed (never attempted)", async () => {
    const to = `gone@${RCPT}`;
    env.sink.onRcpt = (rcpt) => (rcpt === to ? { code: 550, message: "5.1.1 no such user" } : undefined);
    const m = await send(to);
    await waitForView(env.srv, key, m.email, "BOUNCED");
    const m2 = await send(to);
    expect((await env.srv.api(`/emails/${m2.email}`, { key })).body.status).toBe("SUPPRESSED");
    const items = await trail(m.contact);
    expect(items.map((i) => i.type)).toEqual(["email.sent", "email.bounce", "email.suppressed"]);
    expect(items[2].metadata).toMatchObject({ emailId: m2.email, to });
    expect((await env.srv.api("/activity/types", { key })).body).toContain("email.suppressed");
    env.sink.onRcpt = () => undefined;
  });

  test("an address suppressed after the email was queued: the outbox records SUPPRESSED and email.suppressed", async () => {
    const to = `later@${RCPT}`;
    const ctx = env.srv.ctx;
    const now = ctx.clock.now();
    const contact = await env.srv.api("/contacts", { key, body: { email: to } });
    const [id] = await ctx.db.transaction().execute(async (trx) => {
      const contentId = await insertContent(trx, now, { projectId: env.acct.projectId, subject: "Later", html: "<p>x</p>", fromEmail: `news@${SENDER}` });
      return insertEmails(trx, now, ctx.config.hostname, [
        { projectId: env.acct.projectId, contentId, contactId: contact.body.id, toEmail: to, sourceType: "TRANSACTIONAL", runAt: now + 60_000 },
      ]);
    });
    await ctx.db.insertInto("suppressions").values({ id: Bun.randomUUIDv7(), project_id: env.acct.projectId, email: to, reason: "COMPLAINT", detail: null, source: "API", email_id: null, job_id: null, created_at: now }).execute();
    moveClock(61_000);
    await waitForView(env.srv, key, id!, "SUPPRESSED");
    const items = await trail(contact.body.id);
    expect(items.map((i) => i.type)).toEqual(["email.suppressed"]);
    expect(items[0].metadata).toMatchObject({ emailId: id, to });
    expect(env.sink.byRecipient(to)).toHaveLength(0);
  });
});

describe("opens and clicks before the outcome is committed", () => {
  test("a pixel fetch and a click while the sink holds its 250 are recorded; the email ends CLICKED", async () => {
    const patch = await env.srv.api(`/users/@me/projects/${env.acct.projectId}`, { method: "PATCH", cookie: env.acct.cookie, body: { tracking: "ENABLED" } });
    expect(patch.status).toBe(200);
    let release!: () => void;
    env.sink.hold = new Promise<void>((r) => (release = r));
    const to = `scanner@${RCPT}`;
    const m = await send(to, `<p>Offer</p><p><a href="https://shop.example.com/offer">See it</a></p>`);
    const [msg] = await env.sink.waitFor(env.sink.messages.length + 1).then(() => env.sink.byRecipient(to));
    const html = (await msg!.parse()).html as string;
    const pixel = imgSrcs(html).find((s) => s.includes("/t/o/"))!;
    const link = hrefs(html).find((h) => h.includes("/t/c/"))!;
    expect((await env.srv.api(`/emails/${m.email}`, { key })).body.status).toBe("SENDING");

    const engagedFrom = env.srv.clock.now();
    expect((await fetch(pixel)).status).toBe(200);
    const click = await fetch(link, { redirect: "manual" });
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.example.com/offer");
    // Recorded at once, while the row is still SENDING.
    const early = await trail(m.contact);
    expect(early.map((i) => i.type)).toEqual(["email.open", "email.click"]);
    const engagedTo = env.srv.clock.now();

    release();
    env.sink.hold = null;
    const v = await waitForView(env.srv, key, m.email, "CLICKED");
    const openedAt = expectTimeBetween(v.openedAt, engagedFrom, engagedTo);
    expectTimeBetween(v.clickedAt, openedAt, engagedTo);
    // The 250 was held until after the open and the click.
    expectTimeBetween(v.deliveredAt, engagedTo, env.srv.clock.now());
    const items = await trail(m.contact);
    expect(items.map((i) => i.type).sort()).toEqual(["email.click", "email.delivery", "email.open", "email.sent"]);
  });
});

// The set-based email insert (insertEmailsRaw, issue 31): one fan-out batch mixing suppressed and
// deliverable recipients records each SUPPRESSED email with exactly one `email.suppressed` event and
// delivers the others once; the multi-row insert keeps the rows' order across its statement chunks.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { RecordedEvent } from "../../src/audience/events";
import { insertContent, insertEmails, type NewEmail } from "../../src/mail/outbox/enqueue";
import type { DeliveryEnv } from "../support/delivery";
import { waitFor } from "../support/wait";
import { sendEnv } from "../send/support";
import { addContacts, createCampaign, RCPT, SENDER, waitForCampaign } from "./support";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

const api = (path: string, opts: Parameters<DeliveryEnv["srv"]["api"]>[1] = {}) => env.srv.api(path, { key: env.acct.secretKey, ...opts });
const items = (b: any): any[] => (Array.isArray(b) ? b : (b.data ?? b.items ?? b.events));
const contactEvents = async (contactId: string): Promise<{ name: string; data: any }[]> => items((await api(`/events/contact/${contactId}`)).body);

async function suppress(email: string) {
  await env.srv.ctx.db
    .insertInto("suppressions")
    .values({ id: Bun.randomUUIDv7(), project_id: env.acct.projectId, email, reason: "MANUAL", detail: null, source: "API", email_id: null, job_id: null, created_at: Date.now() })
    .execute();
}

describe("a fan-out batch with suppressed and deliverable recipients", () => {
  test("every SUPPRESSED email has exactly one email.suppressed event, the others are delivered once and have none", async () => {
    const emails = Array.from({ length: 8 }, (_, i) => `fb${i}@${RCPT}`);
    const ids = await addContacts(env, emails.map((email, i) => ({ email, data: { firstName: `F${i}` } })));
    const suppressed = new Set([emails[0]!, emails[3]!, emails[4]!, emails[7]!]); // first, adjacent and last of the batch
    for (const e of suppressed) await suppress(e);
    env.sink.reset();
    const c = await createCampaign(env);
    expect((await api(`/campaigns/${c.id}/send`, { method: "POST" })).status).toBe(200);
    const done = await waitForCampaign(env, c.id, "SENT");
    expect(done.totalRecipients).toBe(8);
    expect(done.sentCount).toBe(4);

    const list = await api(`/emails?campaignId=${c.id}&limit=100`);
    expect(list.body.total).toBe(8);
    const byTo = new Map<string, any>(list.body.data.map((e: any) => [e.to, e]));
    for (const e of emails) expect(byTo.get(e).status).toBe(suppressed.has(e) ? "SUPPRESSED" : "DELIVERED");
    expect(env.sink.messages.flatMap((m) => m.to).sort()).toEqual(emails.filter((e) => !suppressed.has(e)).sort());

    for (let i = 0; i < emails.length; i++) {
      const to = emails[i]!;
      const evs = await waitFor(() => contactEvents(ids[i]!), { until: (x) => !suppressed.has(to) || x.some((e) => e.name === "email.suppressed"), what: `events of ${to}` });
      const sup = evs.filter((e) => e.name === "email.suppressed");
      if (suppressed.has(to)) {
        expect(sup).toHaveLength(1);
        expect(sup[0]!.data).toMatchObject({ emailId: byTo.get(to).id, to, campaignId: c.id });
      } else expect(sup).toHaveLength(0);
    }
  });

  test("insertEmails over several statement chunks keeps the rows' order, and records each suppressed row's event once, in order", async () => {
    const ctx = env.srv.ctx;
    const contactIds = await addContacts(env, [{ email: `chunk-a@${RCPT}` }, { email: `chunk-b@${RCPT}` }, { email: `chunk-c@${RCPT}` }]);
    const now = ctx.clock.now();
    const later = now + 86_400_000; // never due during the test
    const contentId = await insertContent(ctx.db, now, { projectId: env.acct.projectId, subject: "Chunks", html: "<p>x</p>", fromEmail: `news@${SENDER}`, type: "MARKETING" });
    const rows: NewEmail[] = Array.from({ length: 1203 }, (_, i) => ({ projectId: env.acct.projectId, contentId, contactId: null, toEmail: `chunk${i}@${RCPT}`, sourceType: "TRANSACTIONAL" as const, runAt: later }));
    const supAt = [0, 500, 1202]; // the first row, the first of the second statement, the last row
    supAt.forEach((at, k) => (rows[at] = { ...rows[at]!, contactId: contactIds[k]!, toEmail: `chunk-${"abc"[k]}@${RCPT}`, status: "SUPPRESSED" }));
    const recorded: RecordedEvent[] = [];
    const ids = await ctx.db.transaction().execute((trx) => insertEmails(trx, now, ctx.config.hostname, rows, recorded));
    expect(ids).toHaveLength(1203);
    expect(new Set(ids).size).toBe(1203);

    const stored = await ctx.db.selectFrom("emails").select(["id", "to_email", "status", "next_attempt_at"]).where("content_id", "=", contentId).execute();
    const byId = new Map(stored.map((r) => [r.id, r]));
    expect(stored).toHaveLength(1203);
    ids.forEach((id, i) => {
      const r = byId.get(id)!;
      expect(r.to_email).toBe(rows[i]!.toEmail);
      expect(r.status).toBe(supAt.includes(i) ? "SUPPRESSED" : "PENDING");
      expect(r.next_attempt_at === null ? null : Number(r.next_attempt_at)).toBe(supAt.includes(i) ? null : later);
    });
    expect(recorded.map((e) => [e.name, e.contactId, e.data.emailId])).toEqual(supAt.map((at, k) => ["email.suppressed", contactIds[k], ids[at]]));
    for (let k = 0; k < 3; k++) {
      const sup = (await contactEvents(contactIds[k]!)).filter((e) => e.name === "email.suppressed");
      expect(sup.map((e) => e.data.emailId)).toEqual([ids[supAt[k]!]]);
    }
    await ctx.db.deleteFrom("emails").where("content_id", "=", contentId).where("status", "=", "PENDING").execute();
  });
});

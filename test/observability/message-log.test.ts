// "Did my email arrive, and if not, why?": delivered, bounced, deferred and suppressed emails as GET /emails,
// /activity and /metrics report them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { createAccount } from "../support/server";
import { RCPT, SENDER, sendEnv, waitForView } from "../send/support";
import type { DeliveryEnv } from "../support/delivery";
import { expectTimeBetween } from "../support/time";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

const key = () => env.acct.secretKey;
const send = async (to: string, subject = "Hello {{name}}") => {
  const r = await env.srv.api("/v1/send", {
    key: key(),
    body: { to, from: `app@${SENDER}`, subject, body: "<p>Hi {{name}}</p>", data: { name: "Ann" } },
  });
  expect(r.status).toBe(200);
  return r.body.data.emails[0].email as string;
};

async function metricValues(name: string): Promise<Record<string, number>> {
  const r = await env.srv.api("/metrics");
  expect(r.status).toBe(200);
  const families = parsePrometheusTextFormat(r.text) as { name: string; metrics: { labels?: Record<string, string>; value: string }[] }[];
  const fam = families.find((f) => f.name === name);
  const out: Record<string, number> = {};
  for (const m of fam?.metrics ?? []) out[m.labels?.result ?? m.labels?.status ?? ""] = Number(m.value);
  return out;
}

test("delivered, bounced, deferred-then-delivered and suppressed emails read back through /emails, /activity and /metrics", async () => {
  const before = await metricValues("mailsvc_delivery_attempts_total");
  env.sink.onRcpt = (rcpt, attempt) => {
    if (rcpt.startsWith("gone@")) return { code: 550, message: "5.1.1 No such user here" };
    if (rcpt.startsWith("slow@") && attempt === 1) return { code: 451, message: "4.7.1 Greylisted, try again" };
    return undefined;
  };

  const sentFrom = env.srv.clock.now();
  const delivered = await send(`ok@${RCPT}`);
  const bounced = await send(`gone@${RCPT}`);
  const deferred = await send(`slow@${RCPT}`);

  const d = await waitForView(env.srv, key(), delivered, "DELIVERED");
  expect(d).toMatchObject({ to: `ok@${RCPT}`, from: `app@${SENDER}`, subject: "Hello Ann", sourceType: "TRANSACTIONAL", attempts: 1 });
  expect(d.messageId).toBeString();
  const sentAt = expectTimeBetween(d.sentAt, sentFrom, env.srv.clock.now());
  expectTimeBetween(d.deliveredAt, sentAt, env.srv.clock.now());

  const b = await waitForView(env.srv, key(), bounced, "BOUNCED");
  expect(b.lastReply).toContain("No such user");
  expectTimeBetween(b.bouncedAt, sentFrom, env.srv.clock.now());

  const def = await waitForView(env.srv, key(), deferred, "DEFERRED");
  expect(def.lastReply).toContain("Greylisted");
  expect(def.attempts).toBe(1);
  env.srv.clock.advance(1_500);
  const later = await waitForView(env.srv, key(), deferred, "DELIVERED");
  expect(later.attempts).toBe(2);

  const suppressed = await send(`gone@${RCPT}`);
  const s = await waitForView(env.srv, key(), suppressed, "SUPPRESSED");
  expect(s.attempts).toBe(0);

  // The log: newest first, filters and cursors.
  const all = await env.srv.api("/emails", { key: key() });
  expect(all.body.total).toBe(4);
  expect(all.body.data.map((e: any) => e.id)).toEqual([suppressed, deferred, bounced, delivered]);
  const byStatus = await env.srv.api("/emails?status=BOUNCED", { key: key() });
  expect(byStatus.body.data.map((e: any) => e.id)).toEqual([bounced]);
  const byTo = await env.srv.api(`/emails?to=gone@${RCPT}`, { key: key() });
  expect(byTo.body.data.map((e: any) => e.id)).toEqual([suppressed, bounced]);
  const byContact = await env.srv.api(`/emails?contactId=${d.contactId}`, { key: key() });
  expect(byContact.body.data.map((e: any) => e.id)).toEqual([delivered]);
  const p1 = await env.srv.api("/emails?limit=3", { key: key() });
  const p2 = await env.srv.api(`/emails?limit=3&cursor=${p1.body.cursor}`, { key: key() });
  expect([...p1.body.data, ...p2.body.data].map((e: any) => e.id)).toEqual(all.body.data.map((e: any) => e.id));
  expect(p2.body).toMatchObject({ hasMore: false, total: 0 });
  expect((await env.srv.api("/emails?status=LOST", { key: key() })).status).toBe(400);

  // The activity feed tells the same story.
  const types = async (emailId: string) => {
    const r = await env.srv.api("/activity?limit=100", { key: key() });
    return r.body.data.filter((i: any) => i.metadata.emailId === emailId).map((i: any) => i.type).reverse();
  };
  expect(await types(delivered)).toEqual(["email.sent", "email.delivery"]);
  expect(await types(bounced)).toEqual(["email.sent", "email.bounce"]);
  expect((await types(deferred)).filter((t: string) => t !== "email.deferred")).toEqual(["email.sent", "email.delivery"]);
  const bouncedContact = (await env.srv.api(`/activity?contactId=${b.contactId}&type=email.bounce`, { key: key() })).body;
  expect(bouncedContact.data.map((i: any) => i.metadata.emailId)).toEqual([bounced]);

  // Metrics moved by exactly these attempts: 2 delivered, 1 bounced, 1 deferred (the suppressed one was never attempted).
  const after = await metricValues("mailsvc_delivery_attempts_total");
  const delta = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
  expect(delta("delivered")).toBe(2);
  expect(delta("bounced")).toBe(1);
  expect(delta("deferred")).toBe(1);
  const http = await metricValues("mailsvc_http_requests_total");
  expect(Object.keys(http).length).toBeGreaterThan(0);

  // Project B sees none of it.
  const other = await createAccount(env.srv.api, "B");
  expect((await env.srv.api("/emails", { key: other.secretKey })).body).toMatchObject({ data: [], total: 0 });
  expect((await env.srv.api(`/emails/${delivered}`, { key: other.secretKey })).status).toBe(404);
  expect((await env.srv.api("/activity", { key: other.secretKey })).body.data).toEqual([]);
});

test("/metrics can require a token", async () => {
  const { startServer } = await import("../support/server");
  const s = await startServer({ config: { metricsToken: "s3cret-token" } });
  expect((await s.api("/metrics")).status).toBe(401);
  expect((await s.api("/metrics", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
  const ok = await s.api("/metrics", { headers: { authorization: "Bearer s3cret-token" } });
  expect(ok.status).toBe(200);
  expect(ok.text).toContain("mailsvc_outbox_emails");
  await s.close();
});

// /v1/send and the audience: contact upserts, subscription semantics, data rules, and the email.*
// events the engine records on the contact.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv, waitForView } from "./support";

let env: DeliveryEnv;
let key: string;
beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
});
afterAll(() => env.close());

const from = `hello@${SENDER}`;
const send = (body: Record<string, unknown>) => env.srv.api("/v1/send", { key, body: { from, subject: "Hi {{plan}}", body: "<p>{{plan}} {{code}}</p>", ...body } });
const contact = async (id: string) => (await env.srv.api(`/contacts/${id}`, { key })).body;
const eventsOf = async (contactId: string) =>
  ((await env.srv.api(`/events?contactId=${contactId}&limit=100`, { key })).body.data as { name: string; data: Record<string, unknown> }[]).map((e) => e.name).sort();

describe("/v1/send contacts", () => {
  test("a new contact is created unsubscribed; data is stored, non-persistent values only rendered", async () => {
    const r = await send({ to: `new1@${RCPT}`, data: { plan: "pro", code: { value: "ONE-TIME-42", persistent: false } } });
    expect(r.status).toBe(200);
    const c = await contact(r.body.data.emails[0].contact.id);
    expect(c.email).toBe(`new1@${RCPT}`);
    expect(c.subscribed).toBe(false);
    expect(c.data).toEqual({ plan: "pro" });
    await waitForView(env.srv, key, r.body.data.emails[0].email, "DELIVERED");
    const p = await env.sink.byRecipient(`new1@${RCPT}`)[0]!.parse();
    expect(p.subject).toBe("Hi pro");
    expect(p.html).toContain("pro ONE-TIME-42");
  });

  test("subscribed: true subscribes (event recorded); omitted keeps an existing contact's state", async () => {
    const first = await send({ to: `sub1@${RCPT}`, subscribed: true });
    const id = first.body.data.emails[0].contact.id;
    expect((await contact(id)).subscribed).toBe(true);
    const again = await send({ to: `sub1@${RCPT}` });
    expect(again.body.data.emails[0].contact.id).toBe(id);
    expect((await contact(id)).subscribed).toBe(true);
    await send({ to: `sub1@${RCPT}`, subscribed: false });
    expect((await contact(id)).subscribed).toBe(false);
    const names = await eventsOf(id);
    expect(names.filter((n) => n === "contact.unsubscribed")).toHaveLength(1);
  });

  test("the engine records email.sent and email.delivery on the contact", async () => {
    const r = await send({ to: `ev1@${RCPT}` });
    const { contact: c, email } = r.body.data.emails[0];
    await waitForView(env.srv, key, email, "DELIVERED");
    const res = await env.srv.api(`/events?contactId=${c.id}&limit=100`, { key });
    const byName = new Map((res.body.data as { name: string; data: Record<string, unknown> }[]).map((e) => [e.name, e]));
    expect(byName.has("email.sent")).toBe(true);
    expect(byName.has("email.delivery")).toBe(true);
    expect(byName.get("email.delivery")!.data.mxHost).toBe(`mx.${RCPT}`);
  });

  test("a hard bounce unsubscribes the contact and records email.bounce", async () => {
    env.sink.onRcpt = (rcpt) => (rcpt === `hard@${RCPT}` ? { code: 550, message: "5.1.1 no such mailbox" } : undefined);
    const r = await send({ to: `hard@${RCPT}`, subscribed: true });
    const { contact: c, email } = r.body.data.emails[0];
    await waitForView(env.srv, key, email, "BOUNCED");
    expect((await contact(c.id)).subscribed).toBe(false);
    const names = await eventsOf(c.id);
    expect(names).toContain("email.bounce");
    expect(names).toContain("contact.unsubscribed");
    env.sink.onRcpt = () => undefined;
  });
});

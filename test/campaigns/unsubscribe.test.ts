// MARKETING mail never reaches a contact who unsubscribes after the fan-out queued its email: the
// outbox checks the subscription again before each attempt, a retry included (decisions.md "Campaigns").
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { sendEnv } from "../send/support";
import { waitFor } from "../support/wait";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import { addContacts, createCampaign, RCPT, waitForCampaign } from "./support";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

const api = (path: string, opts: Parameters<DeliveryEnv["srv"]["api"]>[1] = {}) => env.srv.api(path, { key: env.acct.secretKey, ...opts });

test("a contact who unsubscribes while the campaign's email waits for its retry gets nothing; the email is CANCELLED", async () => {
  const emails = [`keep@${RCPT}`, `leave@${RCPT}`, `stay@${RCPT}`];
  const ids = await addContacts(env, emails.map((email) => ({ email })));
  // The first attempt of `leave` and `stay` meets a 451: both wait in the queue for their retry.
  env.sink.onRcpt = (rcpt, attempt) => (rcpt !== `keep@${RCPT}` && attempt === 1 ? { code: 451, message: "4.7.1 Try later" } : undefined);
  const c = await createCampaign(env);
  expect((await api(`/campaigns/${c.id}/send`, { method: "POST" })).status).toBe(200);
  const statusOf = async () => Object.fromEntries((await api(`/emails?campaignId=${c.id}`)).body.data.map((e: { to: string; status: string }) => [e.to, e.status]));
  await waitFor(statusOf, { until: (s) => s[`leave@${RCPT}`] === "DEFERRED" && s[`stay@${RCPT}`] === "DEFERRED" && s[`keep@${RCPT}`] === "DELIVERED", what: "first attempts" });

  expect((await api(`/contacts/${ids[1]}`, { method: "PATCH", body: { subscribed: false } })).status).toBe(200);
  env.srv.clock.advance(3_600_000);
  wakeOutbox(env.srv.ctx);

  const done = await waitForCampaign(env, c.id, "SENT", 20_000);
  expect(env.sink.messages.flatMap((m) => m.to).sort()).toEqual([`keep@${RCPT}`, `stay@${RCPT}`]);
  expect(await statusOf()).toEqual({ [`keep@${RCPT}`]: "DELIVERED", [`leave@${RCPT}`]: "CANCELLED", [`stay@${RCPT}`]: "DELIVERED" });
  expect(done.deliveredCount).toBe(2);
  env.sink.onRcpt = () => undefined;
}, 40_000);

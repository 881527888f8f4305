// Email lifecycle events of a real send reach a subscribed endpoint, carrying the email id.
import { afterAll, beforeAll, setDefaultTimeout, expect, test } from "bun:test";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv } from "../send/support";
import { startReceiver, verify, type Receiver } from "./support";

setDefaultTimeout(30_000);

let env: DeliveryEnv;
let rx: Receiver;
beforeAll(async () => {
  env = await sendEnv({ config: { allowPrivateWebhooks: true } });
  rx = startReceiver();
}, 60_000);
afterAll(async () => {
  rx.close();
  await env.close();
});

test("a send's email.sent and email.delivery are POSTed to an email.* endpoint, signed", async () => {
  const key = env.acct.secretKey;
  const ep = (await env.srv.api("/webhook-endpoints", { key, body: { url: rx.url + "/mail", events: ["email.*"] } })).body;
  const contactsOnly = (await env.srv.api("/webhook-endpoints", { key, body: { url: rx.url + "/contacts", events: ["contact.*"] } })).body;
  const r = await env.srv.api("/v1/send", { key, body: { to: `ann@${RCPT}`, from: `hello@${SENDER}`, subject: "Hi", body: "<p>Hi</p>" } });
  expect(r.status).toBe(200);
  const emailId = r.body.data.emails[0].email;
  const got = await rx.waitFor(2, (x) => x.path === "/mail");
  const types = got.map((x) => x.json.type);
  expect(types).toContain("email.sent");
  expect(types).toContain("email.delivery");
  for (const x of got) {
    expect(verify(ep.secret, x)).toMatchObject({ data: { emailId, contactEmail: `ann@${RCPT}` } });
  }
  expect(rx.received.filter((x) => x.path === "/contacts")).toHaveLength(0);
  expect(contactsOnly.events).toEqual(["contact.*"]);
});

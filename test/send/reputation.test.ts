import { afterAll, beforeAll, expect, test } from "bun:test";
import { enqueueDirect, waitForStatus, type DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv } from "./support";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await sendEnv();
});
afterAll(() => env.close());

test("/security reports 30-day rates; more than 10% hard bounces over 100+ sends disables the project", async () => {
  const key = env.acct.secretKey;
  const security = () => env.srv.api(`/users/@me/projects/${env.acct.projectId}/security`, { cookie: env.acct.cookie });
  const clean = await security();
  expect(clean.body).toMatchObject({ disabled: false, windowDays: 30, sends: 0, bounces: 0, bounceRate: 0 });

  env.sink.onRcpt = (rcpt) => (rcpt.startsWith("bad") ? { code: 550, message: "5.1.1 unknown user" } : undefined);
  const to = [...Array.from({ length: 90 }, (_, i) => `good${i}@${RCPT}`), ...Array.from({ length: 15 }, (_, i) => `bad${i}@${RCPT}`)];
  const r = await env.srv.api("/v1/send", { key, body: { to, from: `news@${SENDER}`, subject: "s", body: "<p>b</p>" } });
  expect(r.status).toBe(200);
  for (const e of r.body.data.emails as { contact: { email: string }; email: string }[]) {
    await waitForStatus(env.srv, e.email, e.contact.email.startsWith("bad") ? "BOUNCED" : "DELIVERED");
  }
  // The check runs after bounces, at most every 10 s per project: one more bounce later settles it.
  if (!(await security()).body.disabled) {
    env.srv.clock.advance(11_000);
    const [late] = await enqueueDirect(env.srv, env.acct.projectId, { subject: "s", html: "<p>b</p>", fromEmail: `news@${SENDER}` }, [{ email: `bad-late@${RCPT}` }]);
    await waitForStatus(env.srv, late!, "BOUNCED");
  }
  const sec = await security();
  expect(sec.body).toMatchObject({ disabled: true, disabledReason: "EMAIL_REPUTATION", windowDays: 30 });
  expect(sec.body.sends).toBeGreaterThanOrEqual(105);
  expect(sec.body.bounceRate).toBeGreaterThan(0.1);
  expect(sec.body.suspensions[0].reason).toBe("EMAIL_REPUTATION");
  const blocked = await env.srv.api("/v1/send", { key, body: { to: `good0@${RCPT}`, from: `news@${SENDER}`, subject: "s", body: "<p>b</p>" } });
  expect(blocked.status).toBe(403);
  expect(blocked.body.error.code).toBe("PROJECT_DISABLED");
  env.sink.onRcpt = () => undefined;
});

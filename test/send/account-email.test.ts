import { afterAll, beforeAll, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";
import { verifyDkim } from "./support";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await deliveryEnv({ config: { systemFrom: "Mailsvc <no-reply@sys.test>" } });
  env.dns.mailDomain("example.com"); // test accounts are user…@example.com
  await addVerifiedDomain(env.srv.api, env.dns, env.acct, "sys.test");
});
afterAll(() => env.close());

test("password reset and verification emails go through the engine from MAILSVC_SYSTEM_FROM, DKIM-signed", async () => {
  const r = await env.srv.api("/auth/request-password-reset", { body: { email: env.acct.email } });
  expect(r.status).toBe(200);
  const [msg] = await env.sink.waitFor(1);
  expect(msg!.to).toEqual([env.acct.email]);
  expect(msg!.from).toMatch(/^bounces\+[0-9a-f-]+@bounces\.sys\.test$/);
  const p = await msg!.parse();
  expect(p.from!.value[0]).toEqual({ name: "Mailsvc", address: "no-reply@sys.test" });
  expect(p.subject).toBe("Reset your password");
  expect(p.text).toContain("/auth/reset-password?token=");
  expect(p.html).toContain("/auth/reset-password?token=");
  const dkim = await verifyDkim(env, msg!.raw);
  expect(dkim[0]!.status.result).toBe("pass");
  expect(dkim[0]!.signingDomain).toBe("sys.test");

  const v = await env.srv.api("/auth/request-verification", { cookie: env.acct.cookie, body: {} });
  expect(v.status).toBe(200);
  const msgs = await env.sink.waitFor(2);
  expect((await msgs[1]!.parse()).subject).toBe("Verify your email address");

  // Account emails belong to no project: they are not in the project's email log.
  const rows = await env.srv.ctx.db.selectFrom("emails").select(["project_id", "source_type", "status"]).where("source_type", "=", "SYSTEM").execute();
  expect(rows).toHaveLength(2);
  expect(rows.every((row) => row.project_id === null)).toBe(true);
  const log = await env.srv.api("/emails", { key: env.acct.secretKey });
  expect(log.body.data.filter((e: { sourceType: string }) => e.sourceType === "SYSTEM")).toHaveLength(0);
});

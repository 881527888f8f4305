import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { deliveryEnv, emailRow, enqueueDirect, waitForStatus, type DeliveryEnv } from "./helpers";

let env: DeliveryEnv;
beforeAll(async () => {
  env = await deliveryEnv();
  env.dns.mailDomain("rcpt.test");
});
afterAll(() => env.close());

const content = { subject: "Hi {{name}}", html: "<p>Hello <b>{{name}}</b></p>", fromEmail: "news@sender.test", fromName: "Sender" };

describe("outbox", () => {
  test("delivers a queued email to the recipient's MX", async () => {
    const [id] = await enqueueDirect(env.srv, env.acct.projectId, content, [{ email: "ann@rcpt.test", vars: { name: "Ann" } }]);
    const row = await waitForStatus(env.srv, id!, "DELIVERED");
    expect(row.attempts).toBe(1);
    expect(row.last_reply).toContain("250");
    expect(row.mx_host).toBe("mx.rcpt.test");
    expect(row.delivered_at).toBeGreaterThan(0);
    const [msg] = env.sink.byRecipient("ann@rcpt.test");
    expect(msg!.from).toBe(`bounces+${id}@bounces.sender.test`);
    const parsed = await msg!.parse();
    expect(parsed.subject).toBe("Hi Ann");
    expect(parsed.html).toContain("Hello <b>Ann</b>");
    expect(parsed.text).toContain("Hello Ann");
    expect(parsed.messageId).toBe(`<${id}@mailsvc.test>`);
    expect(msg!.secure).toBe(true);
  });
});

// The editors' estimate of what the open pixel costs (src/mail/message/pixel-cost.ts): SpamAssassin's
// HTML_IMAGE_ONLY_* ranges, and estimates checked against the HTML part the service really delivers.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { imageOnlyRule, pixelCost } from "../../src/mail/message/pixel-cost";
import { addContacts, createCampaign, RCPT, waitForCampaign } from "../campaigns/support";
import { sendEnv } from "../send/support";
import { lastMessageFor, type DeliveryEnv } from "../support/delivery";

describe("imageOnlyRule", () => {
  test("the eight ranges of 400 bytes up to 3200, upper bound included, with the local-rules scores", () => {
    expect(imageOnlyRule(0)).toBeNull();
    expect(imageOnlyRule(1)).toEqual({ rule: "HTML_IMAGE_ONLY_04", score: 1.68 });
    expect(imageOnlyRule(400)).toEqual({ rule: "HTML_IMAGE_ONLY_04", score: 1.68 });
    expect(imageOnlyRule(401)).toEqual({ rule: "HTML_IMAGE_ONLY_08", score: 0.585 });
    expect(imageOnlyRule(1999)).toEqual({ rule: "HTML_IMAGE_ONLY_20", score: 2.109 });
    expect(imageOnlyRule(3000)).toEqual({ rule: "HTML_IMAGE_ONLY_32", score: 2.196 });
    expect(imageOnlyRule(3200)).toEqual({ rule: "HTML_IMAGE_ONLY_32", score: 2.196 });
    expect(imageOnlyRule(3201)).toBeNull();
  });

  test("a body with images of its own: the pixel costs only the difference", () => {
    const base = { type: "TRANSACTIONAL" as const, publicUrl: "https://mail.example.com", clickTracking: false };
    const own = pixelCost({ ...base, body: '<p>Logo</p><img src="https://cdn.example.com/logo.png" alt="Acme">' });
    expect(own.withoutPixel).not.toBeNull();
    expect(own.withPixel).not.toBeNull();
    expect(own.cost).toBe(Math.max(0, Math.round((own.withPixel!.score - own.withoutPixel!.score) * 1000) / 1000));
    const long = pixelCost({ ...base, body: `<p>${"x".repeat(3000)}</p>` });
    expect(long).toEqual({ length: long.length, withPixel: null, withoutPixel: null, cost: 0, missingBytes: 0 });
  });
});

describe("estimates against delivered mail", () => {
  let env: DeliveryEnv;
  beforeAll(async () => {
    env = await sendEnv();
  });
  afterAll(() => env.close());

  const para = (i: number) => `<p>Paragraph ${i}: our workshop makes every pair by hand, from leather tanned without chromium, in Porto.</p>`;
  const bodies = {
    short: '<p>Hi {{firstName}}, <a href="https://example.com/spring">read the spring news</a>.</p>',
    medium: Array.from({ length: 8 }, (_, i) => para(i)).join("\n") + '<p><a href="https://example.com/a">A</a> <a href="https://example.com/b">B</a></p>',
    long: Array.from({ length: 20 }, (_, i) => para(i)).join("\n"),
  };

  for (const [name, body] of Object.entries(bodies)) {
    test(`${name}: the estimated length is within 5% of the delivered HTML part and names the same rule`, async () => {
      const to = `${name}@${RCPT}`;
      await addContacts(env, [{ email: to, data: { firstName: "Ann" } }]);
      const c = await createCampaign(env, { body, audienceType: "FILTERED", audienceCondition: { logic: "AND", groups: [{ filters: [{ field: "email", operator: "equals", value: to }] }] } });
      expect((await env.srv.api(`/campaigns/${c.id}/send`, { key: env.acct.secretKey, method: "POST" })).status).toBe(200);
      await waitForCampaign(env, c.id, "SENT");
      const html = String((await (await lastMessageFor(env, to)).parse()).html);
      expect(html).toContain("/t/o/");
      const actual = html.length;
      const est = pixelCost({ body, type: "MARKETING", publicUrl: env.srv.ctx.config.publicUrl, clickTracking: true });
      expect(Math.abs(est.length - actual) / actual).toBeLessThan(0.05);
      expect(est.withPixel?.rule ?? null).toBe(imageOnlyRule(actual)?.rule ?? null);
    });
  }
});

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Webhook } from "standardwebhooks";
import { createLogger } from "../../src/http/logger";
import { newWebhookSecret } from "../../src/webhooks/sign";
import { WebhookSender } from "../../src/webhooks/sender";

// The sending thread: what a receiver gets is the same whether the worker or the main thread sent it.
describe("webhook sender", () => {
  let srv: ReturnType<typeof Bun.serve>;
  const got: { id: string | null; body: string; verified: boolean }[] = [];
  const secret = newWebhookSecret();
  const dir = mkdtempSync(join(tmpdir(), "sender-test-"));
  const log = createLogger({ write: () => {} });
  beforeAll(() => {
    srv = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const body = await req.text();
        let verified = true;
        try {
          new Webhook(secret).verify(body, Object.fromEntries(req.headers));
        } catch {
          verified = false;
        }
        got.push({ id: req.headers.get("webhook-id"), body, verified });
        return new Response("ok");
      },
    });
  });
  afterAll(() => {
    srv.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });
  const target = () => ({ url: `http://127.0.0.1:${srv.port}/hook`, secret });

  test("the worker signs and POSTs; the live address policy applies to every attempt", async () => {
    const config = { dnsServers: [] as string[], allowPrivateWebhooks: true };
    const sender = new WebhookSender(config, log);
    try {
      const body = JSON.stringify({ type: "email.sent", data: { n: 1 } });
      const outcomes = await Promise.all([1, 2, 3].map((i) => sender.send(target(), `msg_${i}`, body, 5000)));
      expect(sender.mode).toBe("worker");
      expect(outcomes.map((o) => [o.ok, o.status, o.body])).toEqual([
        [true, 200, "ok"],
        [true, 200, "ok"],
        [true, 200, "ok"],
      ]);
      expect(got.filter((g) => g.id?.startsWith("msg_")).map((g) => [g.id, g.verified])).toEqual(
        expect.arrayContaining([
          ["msg_1", true],
          ["msg_2", true],
          ["msg_3", true],
        ]),
      );
      config.allowPrivateWebhooks = false;
      expect(await sender.send(target(), "msg_4", body, 5000)).toMatchObject({ ok: false, errorKind: "refused" });
      config.allowPrivateWebhooks = true;
      expect(await sender.send(target(), "msg_5", body, 5000)).toMatchObject({ ok: true, status: 200 });
      expect(got.some((g) => g.id === "msg_4")).toBe(false);
    } finally {
      sender.close();
    }
  });

  test("a worker that fails: its attempts and the next ones are made in-process", async () => {
    const broken = join(dir, "broken-worker.ts");
    writeFileSync(broken, `throw new Error("no worker here");\n`);
    const sender = new WebhookSender({ dnsServers: [], allowPrivateWebhooks: true }, log, pathToFileURL(broken));
    try {
      const body = JSON.stringify({ type: "contact.created" });
      const first = await sender.send(target(), "fallback_1", body, 5000);
      expect(first).toMatchObject({ ok: true, status: 200 });
      expect(await sender.send(target(), "fallback_2", body, 5000)).toMatchObject({ ok: true, status: 200 });
      expect(sender.mode).toBe("in-process");
      expect(got.filter((g) => g.id?.startsWith("fallback_")).map((g) => [g.id, g.verified])).toEqual([
        ["fallback_1", true],
        ["fallback_2", true],
      ]);
    } finally {
      sender.close();
    }
  });
});

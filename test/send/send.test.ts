import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { wakeOutbox } from "../../src/mail/outbox/outbox";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, emailView, sendEnv, verifyDkim, waitForView } from "./support";

let env: DeliveryEnv;
let key: string;
beforeAll(async () => {
  env = await sendEnv();
  key = env.acct.secretKey;
});
afterAll(() => env.close());

const send = (body: unknown, headers?: Record<string, string>) => env.srv.api("/v1/send", { key, body, headers });
const from = `hello@${SENDER}`;

describe("POST /v1/send delivers", () => {
  test("a DKIM-signed message (d= the sender domain, pass) with the spec's response shape", async () => {
    const r = await send({ to: `ann@${RCPT}`, from: { name: "Hello Team", email: from }, subject: "Welcome {{name}}", body: "<p>Hi <b>{{name}}</b></p>", data: { name: "Ann" } });
    expect(r.status).toBe(200);
    expect(r.body.success).toBe(true);
    expect(r.body.data.emails).toHaveLength(1);
    const item = r.body.data.emails[0];
    expect(item.contact.email).toBe(`ann@${RCPT}`);
    expect(typeof item.contact.id).toBe("string");
    expect(typeof item.email).toBe("string");
    expect(new Date(r.body.data.timestamp).toString()).not.toBe("Invalid Date");
    const v = await waitForView(env.srv, key, item.email, "DELIVERED");
    expect(v.attempts).toBe(1);
    const [msg] = env.sink.byRecipient(`ann@${RCPT}`);
    expect(msg!.from).toBe(`bounces+${item.email}@bounces.${SENDER}`);
    expect(msg!.secure).toBe(true);
    const parsed = await msg!.parse();
    expect(parsed.subject).toBe("Welcome Ann");
    expect(parsed.from!.value[0]).toEqual({ name: "Hello Team", address: from });
    expect(parsed.messageId).toBe(`<${item.email}@mailsvc.test>`);
    expect(parsed.html).toContain("Hi <b>Ann</b>");
    const dkim = await verifyDkim(env, msg!.raw);
    expect(dkim).toHaveLength(1);
    expect(dkim[0]!.status.result).toBe("pass");
    expect(dkim[0]!.signingDomain).toBe(SENDER);
  });

  test("variables are HTML-escaped in the body, raw with {{{ }}}, never escaped in the subject", async () => {
    const r = await send({
      to: `esc@${RCPT}`,
      from,
      subject: "Hi {{name}} & co",
      body: "<p>{{name}}</p><div>{{{snippet}}}</div><p>{{missing}}|{{nick ?? \"friend\"}}</p>",
      data: { name: "<script>alert(1)</script>", snippet: { value: "<i>raw</i>", persistent: false } },
    });
    expect(r.status).toBe(200);
    await waitForView(env.srv, key, r.body.data.emails[0].email, "DELIVERED");
    const parsed = await env.sink.byRecipient(`esc@${RCPT}`)[0]!.parse();
    expect(parsed.subject).toBe("Hi <script>alert(1)</script> & co");
    expect(parsed.html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(parsed.html).not.toContain("<script>");
    expect(parsed.html).toContain("<div><i>raw</i></div>");
    expect(parsed.html).toContain("<p>|friend</p>");
  });

  test("an array `to` yields one message and one email id per recipient", async () => {
    const r = await send({ to: [`a1@${RCPT}`, { name: "Bea", email: `a2@${RCPT}` }, `A3@${RCPT}`], from, subject: "To {{email}}", body: "<p>for {{email}}</p>" });
    expect(r.status).toBe(200);
    const emails = r.body.data.emails as { contact: { email: string }; email: string }[];
    expect(emails.map((e) => e.contact.email)).toEqual([`a1@${RCPT}`, `a2@${RCPT}`, `a3@${RCPT}`]);
    expect(new Set(emails.map((e) => e.email)).size).toBe(3);
    for (const e of emails) await waitForView(env.srv, key, e.email, "DELIVERED");
    for (const e of emails) {
      const msgs = env.sink.byRecipient(e.contact.email);
      expect(msgs).toHaveLength(1);
      const p = await msgs[0]!.parse();
      expect(p.subject).toBe(`To ${e.contact.email}`);
      expect(p.to).toBeDefined();
    }
    const bea = await env.sink.byRecipient(`a2@${RCPT}`)[0]!.parse();
    expect((bea.to as { value: { name: string }[] }).value[0]!.name).toBe("Bea");
  });

  test("attachments arrive intact", async () => {
    const bin = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7) % 256));
    const r = await send({
      to: `att@${RCPT}`,
      from,
      subject: "Files",
      body: '<p>see attached <img src="cid:logo1"></p>',
      attachments: [
        { filename: "report.bin", content: bin.toString("base64"), contentType: "application/octet-stream" },
        { filename: "notes é.txt", content: Buffer.from("hello notes").toString("base64"), contentType: "text/plain" },
        { filename: "logo.png", content: Buffer.from("PNGDATA").toString("base64"), contentType: "image/png", contentId: "logo1", disposition: "inline" },
        { filename: "invoice.pdf", content: Buffer.from("%PDF-1.4").toString("base64") },
      ],
    });
    expect(r.status).toBe(200);
    await waitForView(env.srv, key, r.body.data.emails[0].email, "DELIVERED");
    const msg = env.sink.byRecipient(`att@${RCPT}`)[0]!;
    const p = await msg.parse();
    const byName = new Map(p.attachments.map((a) => [a.filename, a]));
    expect(byName.get("report.bin")!.content.equals(bin)).toBe(true);
    expect(byName.get("notes é.txt")!.content.toString()).toBe("hello notes");
    expect(byName.get("logo.png")!.contentId).toBe("<logo1>");
    // Without a contentType the type comes from the filename.
    expect(byName.get("invoice.pdf")!.contentType).toBe("application/pdf");
    const dkim = await verifyDkim(env, msg.raw);
    expect(dkim[0]!.status.result).toBe("pass");
  });

  test("lines starting with a dot and bare line feeds survive SMTP (with and without attachments), signed", async () => {
    const body = "<pre>\n.hidden line\n..two dots\n.\nlast</pre>";
    for (const [to, attachments] of [
      [`dots@${RCPT}`, undefined],
      [`dots-att@${RCPT}`, [{ filename: "d.txt", content: Buffer.from(".\r\n..\nx\n.").toString("base64"), contentType: "text/plain" }]],
    ] as const) {
      const r = await send({ to, from, subject: "Dots", body, ...(attachments ? { attachments } : {}) });
      expect(r.status).toBe(200);
      await waitForView(env.srv, key, r.body.data.emails[0].email, "DELIVERED");
      const msg = env.sink.byRecipient(to)[0]!;
      const p = await msg.parse();
      expect(p.html).toContain("\n.hidden line\n..two dots\n.\nlast");
      expect(p.text!.replace(/\r\n/g, "\n")).toContain(".hidden line\n..two dots\n.\nlast");
      if (attachments) expect(p.attachments[0]!.content.toString()).toBe(".\r\n..\nx\n.");
      const dkim = await verifyDkim(env, msg.raw);
      expect(dkim[0]!.status.result).toBe("pass");
    }
  });

  test("custom headers and reply-to are on the message", async () => {
    const r = await send({ to: `hdr@${RCPT}`, from, subject: "H", body: "<p>h</p>", headers: { "X-Campaign-Ref": "abc-123", "X-Entity-Ref-ID": "e1" }, reply: `support@${SENDER}` });
    expect(r.status).toBe(200);
    await waitForView(env.srv, key, r.body.data.emails[0].email, "DELIVERED");
    const p = await env.sink.byRecipient(`hdr@${RCPT}`)[0]!.parse();
    expect(p.headers.get("x-campaign-ref")).toBe("abc-123");
    expect((p.replyTo as { value: { address: string }[] }).value[0]!.address).toBe(`support@${SENDER}`);
  });

  test("a 550 ends BOUNCED and suppresses: the next send is SUPPRESSED and not attempted", async () => {
    env.sink.onRcpt = (rcpt) => (rcpt === `nobody@${RCPT}` ? { code: 550, message: "5.1.1 User unknown" } : undefined);
    const r = await send({ to: `nobody@${RCPT}`, from, subject: "x", body: "<p>x</p>" });
    const v = await waitForView(env.srv, key, r.body.data.emails[0].email, "BOUNCED");
    expect(v.lastReply).toContain("550");
    const again = await send({ to: `nobody@${RCPT}`, from, subject: "y", body: "<p>y</p>" });
    expect(again.status).toBe(200);
    const v2 = await emailView(env.srv, key, again.body.data.emails[0].email);
    expect(v2.status).toBe("SUPPRESSED");
    await Bun.sleep(200);
    expect((await emailView(env.srv, key, again.body.data.emails[0].email)).attempts).toBe(0);
    expect(env.sink.rcptAttempts.get(`nobody@${RCPT}`)).toBe(1);
    env.sink.onRcpt = () => undefined;
  });

  test("a 451 is retried after the delay and delivered", async () => {
    env.sink.onRcpt = (rcpt, attempt) => (rcpt === `grey@${RCPT}` && attempt === 1 ? { code: 451, message: "4.7.1 Greylisted" } : undefined);
    const r = await send({ to: `grey@${RCPT}`, from, subject: "g", body: "<p>g</p>" });
    const id = r.body.data.emails[0].email;
    const d = await waitForView(env.srv, key, id, "DEFERRED");
    expect(d.lastReply).toContain("451");
    env.srv.clock.advance(1_500);
    wakeOutbox(env.srv.ctx);
    const v = await waitForView(env.srv, key, id, "DELIVERED");
    expect(v.attempts).toBe(2);
    expect(env.sink.byRecipient(`grey@${RCPT}`)).toHaveLength(1);
    env.sink.onRcpt = () => undefined;
  });
});

describe("POST /v1/send with a template", () => {
  test("the template supplies subject, body, from and reply-to; explicit fields override", async () => {
    const tpl = await env.srv.api("/templates", {
      key,
      body: { name: "Welcome", subject: "Welcome {{name ?? \"friend\"}}", body: "<h1>Hello {{name}}</h1>", from: `team@${SENDER}`, fromName: "The Team", replyTo: `reply@${SENDER}`, type: "MARKETING" },
    });
    expect(tpl.status).toBe(201);
    const a = await send({ to: `t1@${RCPT}`, template: tpl.body.id, data: { name: "Tom" } });
    expect(a.status).toBe(200);
    const b = await send({ to: `t2@${RCPT}`, template: tpl.body.id, subject: "Custom {{name}}", from: `other@${SENDER}`, name: "Other Name", data: { name: "Tia" } });
    expect(b.status).toBe(200);
    await waitForView(env.srv, key, a.body.data.emails[0].email, "DELIVERED");
    await waitForView(env.srv, key, b.body.data.emails[0].email, "DELIVERED");
    const pa = await env.sink.byRecipient(`t1@${RCPT}`)[0]!.parse();
    expect(pa.subject).toBe("Welcome Tom");
    expect(pa.html).toContain("<h1>Hello Tom</h1>");
    expect(pa.from!.value[0]).toEqual({ name: "The Team", address: `team@${SENDER}` });
    expect((pa.replyTo as { value: { address: string }[] }).value[0]!.address).toBe(`reply@${SENDER}`);
    // /v1/send is always transactional: no List-Unsubscribe even from a MARKETING template.
    expect(pa.headers.has("list-unsubscribe")).toBe(false);
    const pb = await env.sink.byRecipient(`t2@${RCPT}`)[0]!.parse();
    expect(pb.subject).toBe("Custom Tia");
    expect(pb.html).toContain("<h1>Hello Tia</h1>");
    expect(pb.from!.value[0]).toEqual({ name: "Other Name", address: `other@${SENDER}` });
  });
});

describe("POST /v1/send refuses", () => {
  const base = { to: `v@${RCPT}`, from, subject: "s", body: "<p>b</p>" };
  const expect422 = async (body: unknown, field?: string, code?: string) => {
    const r = await send(body);
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("VALIDATION_ERROR");
    if (field) expect(r.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
    if (code) expect(r.body.error.errors.map((e: { code: string }) => e.code)).toContain(code);
    return r;
  };

  test("bad addresses, a subject with a newline, an empty body", async () => {
    await expect422({ ...base, to: "not-an-email" }, "to");
    await expect422({ ...base, to: [`ok@${RCPT}`, "bad@"] }, "to.1");
    await expect422({ ...base, to: { name: "X", email: "nope" } }, "to.email");
    await expect422({ ...base, from: "nope" }, "from");
    await expect422({ ...base, reply: "nope" }, "reply");
    await expect422({ ...base, subject: "a\r\nBcc: evil@x.test" }, "subject");
    await expect422({ ...base, body: "" }, "body");
    await expect422({ ...base, to: [] }, "to");
  });

  test("data keys that cannot be stored", async () => {
    await expect422({ ...base, data: { 'bad"key': 1 } }, 'data.bad"key', "invalid_key");
  });

  test("header injection, reserved headers and over-long values", async () => {
    await expect422({ ...base, headers: { "X-Ok": "fine\r\nBcc: evil@x.test" } }, "headers.X-Ok", "invalid_string");
    await expect422({ ...base, headers: { "X-Bad\nName": "v" } });
    await expect422({ ...base, headers: { From: "evil@x.test" } }, "headers.From", "reserved_header");
    await expect422({ ...base, headers: { "DKIM-Signature": "v=1" } }, "headers.DKIM-Signature", "reserved_header");
    await expect422({ ...base, headers: { "Message-ID": "<x@y>" } }, "headers.Message-ID", "reserved_header");
    await expect422({ ...base, headers: { "X-Long": "a".repeat(999) } }, "headers.X-Long", "too_big");
    const ok = await send({ ...base, headers: { "X-Long": "a".repeat(998) } });
    expect(ok.status).toBe(200);
  });

  test("attachments: more than 10 is 422, more than 10 MB decoded is 413, bad base64 is 422", async () => {
    const one = { filename: "a.txt", content: Buffer.from("a").toString("base64"), contentType: "text/plain" };
    await expect422({ ...base, attachments: Array.from({ length: 11 }, () => one) }, "attachments");
    await expect422({ ...base, attachments: [{ ...one, content: "not base64!!" }] }, "attachments.0.content");
    const big = Buffer.alloc(5.5 * 1024 * 1024, 1).toString("base64");
    const r = await send({ ...base, attachments: [{ ...one, content: big }, { ...one, content: big }] });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe("PAYLOAD_TOO_LARGE");
  });

  test("the public key is 401 INVALID_API_KEY; nothing is stored by refused requests", async () => {
    const r = await env.srv.api("/v1/send", { key: env.acct.publicKey, body: base });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("INVALID_API_KEY");
    const before = await env.srv.ctx.db.selectFrom("emails").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    await send({ ...base, headers: { From: "x@y.test" } });
    const after = await env.srv.ctx.db.selectFrom("emails").select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
  });
});

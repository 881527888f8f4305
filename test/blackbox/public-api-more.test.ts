// Black-box, second pass over the public API (/v1/send, /v1/track, /v1/verify, Idempotency-Key) and rendering
// rules: what the other black-box files leave out (templates: test/templates/rules-and-usage.test.ts).
// Written from api-spec.md, decisions.md and the docs/api.md (the API guide) only.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { addVerifiedDomain } from "../domains/support";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { deliveryEnv, lastMessageFor, type DeliveryEnv } from "../support/delivery";
import { expectEnvelope, expectOk, expectValidation, newProject, rawHeader, UUID } from "./support";
import { addresses, contactEvents, createTemplate, lookupContact } from "../support/api";

const SENDER_DOMAIN = "more.bb.example";
const RCPT_DOMAIN = "inbox-more-bb.example";
const FROM = `hello@${SENDER_DOMAIN}`;

let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;

beforeAll(async () => {
  env = await deliveryEnv({ name: "BB public more", mailDomain: RCPT_DOMAIN, senderDomain: SENDER_DOMAIN });
  ({ srv, dns, sink, acct: acc } = env);
  for (const d of ["gmail.com", "att.com"]) {
    dns.set(d, "MX", [{ exchange: `mx.${d}`, priority: 10 }]);
    dns.set(d, "A", ["192.0.2.1"]);
  }
});
afterAll(() => env?.close());

const rcpt = addresses(RCPT_DOMAIN, "m");
const send = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  srv.api("/v1/send", { key: opts.key ?? acc.secretKey, body, headers: opts.headers });
const track = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  srv.api("/v1/track", { key: opts.key ?? acc.publicKey, body, headers: opts.headers });
const basic = (to: unknown, extra: Record<string, unknown> = {}) => ({ to, from: FROM, subject: "Hello", body: "<p>Hi</p>", ...extra });
const lookup = (email: string, who: Account = acc) => lookupContact(srv.api, who, email);
const contactById = async (id: string) => (await srv.api(`/contacts/${id}`, { key: acc.secretKey })).body;
const eventsOf = (contactId: string) => contactEvents(srv.api, acc, contactId);
const eventNames = async (contactId: string) => (await eventsOf(contactId)).map((e: any) => e.name as string);
const mkTemplate = (extra: Record<string, unknown> = {}) => createTemplate(srv.api, acc, { name: "T", subject: "S", body: "<p>B</p>", from: FROM, ...extra });

/** The newest message the sink received for `address` (running queued work meanwhile). */
const messageFor = (address: string) => lastMessageFor(env, address);
/** Sends one message and returns the delivered message, parsed. */
async function sendAndParse(extra: Record<string, unknown>, to = rcpt()) {
  const res = await send(basic(to, extra));
  expectOk(res);
  const m = await messageFor(to);
  return { res, m, parsed: await m.parse(), to };
}

describe("POST /v1/send: response shape and recipients", () => {
  test("the response is exactly { success, data: { emails: [{ contact: { id, email }, email }], timestamp } }", async () => {
    const to = rcpt();
    const from = srv.clock.now();
    const res = await send(basic(to));
    expectOk(res);
    expect(Object.keys(res.body).sort()).toEqual(["data", "success"]);
    expect(res.body.success).toBe(true);
    expect(Object.keys(res.body.data).sort()).toEqual(["emails", "timestamp"]);
    expectTimeBetween(res.body.data.timestamp, from, srv.clock.now());
    const e = res.body.data.emails[0];
    expect(Object.keys(e).sort()).toEqual(["contact", "email"]);
    expect(Object.keys(e.contact).sort()).toEqual(["email", "id"]);
    expect(e.email).toMatch(UUID);
  });

  test("each recipient of an array gets its own contact and its own rendered email, in order", async () => {
    const list = [rcpt("each"), rcpt("each"), rcpt("each")];
    const res = await send(basic(list, { subject: "For {{email}}", body: "<p>To {{email}}</p>" }));
    expectOk(res);
    expect(res.body.data.emails.map((e: any) => e.contact.email)).toEqual(list);
    expect(new Set(res.body.data.emails.map((e: any) => e.contact.id)).size).toBe(3);
    for (let i = 0; i < list.length; i++) {
      const m = await messageFor(list[i]!);
      expect(m.to).toEqual([list[i]!]);
      const parsed = await m.parse();
      expect(parsed.subject).toBe(`For ${list[i]}`);
      expect(String(parsed.html)).toContain(`To ${list[i]}`);
      expect((await lookup(list[i]!))?.id).toBe(res.body.data.emails[i].contact.id);
    }
  });

  test("recipient addresses are lower-cased (README) and upsert the same contact", async () => {
    const to = rcpt("case");
    const first = await send(basic(to.toUpperCase()));
    expectOk(first);
    expect(first.body.data.emails[0].contact.email).toBe(to);
    const second = await send(basic(to));
    expect(second.body.data.emails[0].contact.id).toBe(first.body.data.emails[0].contact.id);
  });

  test("`to` validation: empty string, { name } without email, { email } not an email, more than 1,000 recipients (README): 422", async () => {
    expectValidation(await send(basic("")));
    expectValidation(await send(basic({ name: "No Address" })));
    expectValidation(await send(basic({ name: "Bad", email: "not-an-email" })));
    expectValidation(await send(basic([{ name: "Ok", email: rcpt() }, { email: "bad" }])));
    const many = Array.from({ length: 1001 }, (_, i) => `many${i}@${RCPT_DOMAIN}`);
    expectValidation(await send(basic(many)));
    expect(await lookup(many[0]!)).toBeUndefined();
  });

  test("a rejected request (422) has no side effects: no contact, no email", async () => {
    const to = rcpt("rej");
    expectValidation(await send(basic(to, { subject: "x".repeat(999) })));
    expectValidation(await send(basic(to, { headers: { "X-Bad": "a\nb" } })));
    expect(await lookup(to)).toBeUndefined();
    expect((await srv.api(`/emails?to=${encodeURIComponent(to)}`, { key: acc.secretKey })).body.total).toBe(0);
  });
});

describe("POST /v1/send: field rules", () => {
  test("subject: a lone CR is a newline too (422); one character is fine; not a string is 422", async () => {
    expectValidation(await send(basic(rcpt(), { subject: "a\rb" })), "subject");
    expectValidation(await send(basic(rcpt(), { subject: 42 })), "subject");
    expectOk(await send(basic(rcpt(), { subject: "x" })));
  });

  test("body: not a string is 422; one character is fine", async () => {
    expectValidation(await send(basic(rcpt(), { body: 5 })), "body");
    expectOk(await send(basic(rcpt(), { body: "x" })));
  });

  test("subscribed must be a boolean, data an object, headers an object of strings (422, nothing stored)", async () => {
    expectValidation(await send(basic(rcpt(), { subscribed: "yes" })), "subscribed");
    for (const data of ["plan=pro", ["a"], 5]) {
      const to = rcpt("baddata");
      expectValidation(await send(basic(to, { data })), "data");
      expect(await lookup(to)).toBeUndefined();
    }
    for (const headers of ["X-A", ["X-A"]]) {
      const to = rcpt("badhdr");
      expectValidation(await send(basic(to, { headers })), "headers");
      expect(await lookup(to)).toBeUndefined();
    }
    expectValidation(await send(basic(rcpt(), { headers: { "X-Num": 5 } })));
  });

  test("from as \"Name <addr>\" (README): the display name is its own, and `name` does not replace it", async () => {
    const { parsed } = await sendAndParse({ from: `Angle Name <${FROM}>`, name: "Legacy" });
    expect(parsed.from?.value[0]).toMatchObject({ name: "Angle Name", address: FROM });
  });

  test("from { name, email } wins over the deprecated `name`", async () => {
    const { parsed } = await sendAndParse({ from: { name: "Object Name", email: FROM }, name: "Legacy" });
    expect(parsed.from?.value[0]).toMatchObject({ name: "Object Name", address: FROM });
  });

  test("from { name, email } on an unverified domain is 403; a bad email in it is 422", async () => {
    expectEnvelope(await send(basic(rcpt(), { from: { name: "X", email: "x@unverified-more.bb.example" } })), 403, "INTERNAL_SERVER_ERROR");
    expectValidation(await send(basic(rcpt(), { from: { name: "X", email: "not an email" } })));
  });

  test("the deprecated `name` with a line break is 422", async () => {
    expectValidation(await send(basic(rcpt(), { name: "A\r\nBcc: victim@x.example" })), "name");
  });

  test("reply sets Reply-To; a reply that is not an email is 422", async () => {
    const { parsed } = await sendAndParse({ reply: "answers@elsewhere-more.example" });
    expect(parsed.replyTo?.value[0]?.address).toBe("answers@elsewhere-more.example");
    expectValidation(await send(basic(rcpt(), { reply: "nope" })));
  });
});

describe("POST /v1/send: custom headers (README limits)", () => {
  test("a custom header arrives as given; List-Unsubscribe is allowed", async () => {
    const { m, parsed } = await sendAndParse({ headers: { "X-Order-Id": "o-77", "List-Unsubscribe": "<mailto:leave@elsewhere-more.example>" } });
    expect(parsed.headers.get("x-order-id")).toBe("o-77");
    expect(rawHeader(m, "List-Unsubscribe")).toBe("<mailto:leave@elsewhere-more.example>");
  });

  test("reserved headers are 422 reserved_header", async () => {
    for (const name of ["Subject", "Reply-To", "To", "Cc", "Message-ID", "Content-Type", "DKIM-Signature", "Return-Path", "Sender", "Date", "MIME-Version"]) {
      const errs = expectValidation(await send(basic(rcpt(), { headers: { [name]: "x" } })));
      expect(errs.map((e) => e.code)).toContain("reserved_header");
    }
    // Case does not matter.
    const errs = expectValidation(await send(basic(rcpt(), { headers: { "message-id": "<x@y>" } })));
    expect(errs.map((e) => e.code)).toContain("reserved_header");
  });

  test("a value with CR/LF or another control character is 422 invalid_string", async () => {
    for (const value of ["a\r\nX-Injected: 1", "a\nb", "a\u0007b"]) {
      const errs = expectValidation(await send(basic(rcpt(), { headers: { "X-Val": value } })));
      expect(errs.map((e) => e.code)).toContain("invalid_string");
    }
  });

  test("names: a colon, a space or more than 76 characters is 422", async () => {
    expectValidation(await send(basic(rcpt(), { headers: { "X-A:B": "x" } })));
    expectValidation(await send(basic(rcpt(), { headers: { "X A": "x" } })));
    expectValidation(await send(basic(rcpt(), { headers: { ["X-" + "n".repeat(75)]: "x" } })));
    expectOk(await send(basic(rcpt(), { headers: { ["X-" + "n".repeat(74)]: "x" } })));
  });

  test("at most 50 custom headers", async () => {
    const h = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, `v${i}`]));
    expectOk(await send(basic(rcpt(), { headers: h(50) })));
    expectValidation(await send(basic(rcpt(), { headers: h(51) })));
  });
});

describe("POST /v1/send: attachments (README shape)", () => {
  test("without contentType the type comes from the filename's extension; content arrives decoded", async () => {
    const pdf = Buffer.from("%PDF-1.4 fake");
    const { parsed } = await sendAndParse({ attachments: [{ filename: "invoice.pdf", content: pdf.toString("base64") }] });
    const a = parsed.attachments.find((x) => x.filename === "invoice.pdf")!;
    expect(a).toBeDefined();
    expect(a.contentType).toBe("application/pdf");
    expect(a.content.equals(pdf)).toBe(true);
  });

  test("content that is not base64 is 422", async () => {
    expectValidation(await send(basic(rcpt(), { attachments: [{ filename: "a.txt", content: "!!!not base64***" }] })));
  });

  test("a message over 40 MB is 413 PAYLOAD_TOO_LARGE and nothing is sent", async () => {
    const to = rcpt("huge");
    const res = await send(basic(to, { body: "<p>" + "a".repeat(41 * 1024 * 1024) + "</p>" }));
    expectEnvelope(res, 413, "PAYLOAD_TOO_LARGE");
    expect(await lookup(to)).toBeUndefined();
  }, 20_000);
});

describe("POST /v1/send: templates", () => {
  test("template supplies replyTo and fromName; request reply, from and body override them", async () => {
    const t = await mkTemplate({ subject: "T {{n}}", body: "<p>Template body {{n}}</p>", fromName: "Tpl Team", replyTo: "tpl-reply@elsewhere-more.example" });
    const a = rcpt("tpl");
    expectOk(await send({ to: a, template: t.id, data: { n: "1" } }));
    const pa = await (await messageFor(a)).parse();
    expect(pa.from?.value[0]).toMatchObject({ name: "Tpl Team", address: FROM });
    expect(pa.replyTo?.value[0]?.address).toBe("tpl-reply@elsewhere-more.example");
    expect(pa.subject).toBe("T 1");

    const b = rcpt("tpl");
    expectOk(
      await send({ to: b, template: t.id, from: { name: "Req Name", email: `other@${SENDER_DOMAIN}` }, reply: "req-reply@elsewhere-more.example", body: "<p>Own body {{n}}</p>", data: { n: "2" } }),
    );
    const pb = await (await messageFor(b)).parse();
    expect(pb.from?.value[0]).toMatchObject({ name: "Req Name", address: `other@${SENDER_DOMAIN}` });
    expect(pb.replyTo?.value[0]?.address).toBe("req-reply@elsewhere-more.example");
    expect(String(pb.html)).toContain("Own body 2");
    expect(String(pb.html)).not.toContain("Template body");
    expect(pb.subject).toBe("T 2");
  });

  test("the email made from a template names it in GET /emails/:id (decisions.md), sourceType TRANSACTIONAL", async () => {
    const t = await mkTemplate();
    const res = await send({ to: rcpt("log"), template: t.id });
    expectOk(res);
    const e = await srv.api(`/emails/${res.body.data.emails[0].email}`, { key: acc.secretKey });
    expect(e.status).toBe(200);
    expect(e.body).toMatchObject({ templateId: t.id, sourceType: "TRANSACTIONAL", contactId: res.body.data.emails[0].contact.id });
  });

  test("display name order (README): the from's own, then `name`, then the template's fromName", async () => {
    const t = await mkTemplate({ fromName: "Tpl Name" });
    const a = rcpt("order");
    expectOk(await send({ to: a, template: t.id, name: "Legacy Name" }));
    expect((await (await messageFor(a)).parse()).from?.value[0]).toMatchObject({ name: "Legacy Name", address: FROM });
  });

  test("a template request still needs `to` (422); a template with an unverified request from is 403", async () => {
    const t = await mkTemplate();
    expectValidation(await send({ template: t.id }));
    expectEnvelope(await send({ to: rcpt(), template: t.id, from: "a@unverified-more.bb.example" }), 403, "INTERNAL_SERVER_ERROR");
  });

  test("/v1/send is always transactional: a MARKETING template reaches an unsubscribed contact, without footer or List-Unsubscribe", async () => {
    const t = await mkTemplate({ type: "MARKETING", body: "<p>Promo body</p>" });
    const to = rcpt("unsub");
    expectOk(await srv.api("/contacts", { key: acc.secretKey, body: { email: to, subscribed: false } }));
    const res = await send({ to, template: t.id });
    expectOk(res);
    const m = await messageFor(to);
    const html = String((await m.parse()).html);
    expect(html).toContain("Promo body");
    expect(html).not.toContain("/unsubscribe/");
    expect(rawHeader(m, "List-Unsubscribe")).toBeUndefined();
    expect(rawHeader(m, "List-Unsubscribe-Post")).toBeUndefined();
    expect((await lookup(to))?.subscribed).toBe(false);
  });
});

describe("POST /v1/send: subscribed and contact data", () => {
  test("a new contact with subscribed: true is subscribed, and creation records no contact.subscribed (README)", async () => {
    const to = rcpt("newsub");
    const res = await send(basic(to, { subscribed: true }));
    expectOk(res);
    const c = await lookup(to);
    expect(c?.subscribed).toBe(true);
    expect(await eventNames(c!.id)).not.toContain("contact.subscribed");
  });

  test("an unsubscribed contact given subscribed: true flips and emits contact.subscribed; true again emits nothing more", async () => {
    const to = rcpt("resub");
    expectOk(await send(basic(to)));
    const c = await lookup(to);
    expect(c?.subscribed).toBe(false);
    expectOk(await send(basic(to, { subscribed: true })));
    expect((await lookup(to))?.subscribed).toBe(true);
    expectOk(await send(basic(to, { subscribed: true })));
    expectOk(await send(basic(to)));
    expect((await lookup(to))?.subscribed).toBe(true);
    const names = await eventNames(c!.id);
    expect(names.filter((n) => n === "contact.subscribed").length).toBe(1);
    expect(names).not.toContain("contact.unsubscribed");
    // README: the event's data.source names the path.
    const ev = (await eventsOf(c!.id)).find((e) => e.name === "contact.subscribed");
    expect(typeof ev.data?.source).toBe("string");
    expect(ev.data.source.length).toBeGreaterThan(0);
  });

  test("subscribed applies to every recipient of an array", async () => {
    const a = rcpt("arrsub");
    const b = rcpt("arrsub");
    expectOk(await send(basic([a, b], { subscribed: true })));
    expect((await lookup(a))?.subscribed).toBe(true);
    expect((await lookup(b))?.subscribed).toBe(true);
  });

  test("data rules on send: null deletes, empty string ignored, reserved keys dropped", async () => {
    const to = rcpt("data");
    expectOk(await send(basic(to, { data: { plan: "free", city: "Rome", old: 1 } })));
    expectOk(await send(basic(to, { data: { plan: "pro", city: "", old: null, email: "x@y.example", id: "x", svc_id: "x", svc_email: "x", unsubscribeUrl: "x", subscribeUrl: "x", manageUrl: "x" } })));
    const c = await contactById((await lookup(to))!.id);
    expect(c.email).toBe(to);
    expect(c.data).toEqual({ plan: "pro", city: "Rome" });
  });
});

describe("rendering (decisions.md \"Templates, rendering, types\", README)", () => {
  test("{{plan}} finds data.plan, {{data.plan}} and {{ data.plan }} too; dotted paths; {{id}} and {{email}} are the contact's", async () => {
    const { parsed, res, to } = await sendAndParse({
      subject: "S {{plan}}",
      body: "<p>[{{plan}}|{{data.plan}}|{{ data.plan }}|{{address.city}}|{{data.address.city}}|{{id}}|{{email}}]</p>",
      data: { plan: "pro", address: { city: "Oslo" } },
    });
    expect(parsed.subject).toBe("S pro");
    expect(String(parsed.html)).toContain(`[pro|pro|pro|Oslo|Oslo|${res.body.data.emails[0].contact.id}|${to}]`);
  });

  test("?? fallbacks: missing, null and empty use the fallback; fallbacks chain to variables and literals", async () => {
    const { parsed } = await sendAndParse({
      subject: "{{nick ?? \"there\"}}",
      body: '<p>[{{a ?? "A"}}|{{b ?? "B"}}|{{nick ?? first ?? "x"}}|{{none ?? other ?? "last"}}|{{first ?? "unused"}}]</p>',
      data: { b: { value: "", persistent: false }, first: "Kim" },
    });
    expect(parsed.subject).toBe("there");
    expect(String(parsed.html)).toContain("[A|B|Kim|last|Kim]");
  });

  test("stored contact data is available to later sends; a non-persistent value wins for one send only; null deletes", async () => {
    const to = rcpt("stored");
    expectOk(await send(basic(to, { data: { plan: "pro" } })));
    await messageFor(to);
    const later = async (data: unknown) => {
      const before = sink.byRecipient(to).length;
      expectOk(await send(basic(to, { subject: "[{{plan}}]", ...(data === undefined ? {} : { data }) })));
      const m = await waitFor(async () => {
        await srv.drainJobs();
        return sink.byRecipient(to)[before];
      }, { what: `message ${before + 1} for ${to}` });
      return (await m.parse()).subject;
    };
    expect(await later(undefined)).toBe("[pro]");
    expect(await later({ plan: { value: "trial", persistent: false } })).toBe("[trial]");
    expect((await contactById((await lookup(to))!.id)).data).toEqual({ plan: "pro" });
    expect(await later({ plan: null })).toBe("[]");
    expect((await contactById((await lookup(to))!.id)).data).toEqual({});
  });

  test("data tracked with /v1/track is a variable of a later /v1/send", async () => {
    const to = rcpt("tracked");
    expectOk(await track({ email: to, event: "signed_up", data: { firstName: "Tia" } }));
    const { parsed } = await sendAndParse({ subject: "Hi {{firstName}}" }, to);
    expect(parsed.subject).toBe("Hi Tia");
  });

  test("a missing variable renders empty in subject and body", async () => {
    const { parsed } = await sendAndParse({ subject: "A{{nothing}}B", body: "<p>[{{nothing}}|{{deep.no.such}}]</p>" });
    expect(parsed.subject).toBe("AB");
    expect(String(parsed.html)).toContain("[|]");
  });

  test("body values escape & < > \" ' and backtick; {{{raw}}} inserts as is; \\{{ prints literal braces", async () => {
    const { m, parsed } = await sendAndParse({
      body: '<p title="{{v}}">[{{v}}]</p><div>{{{raw}}}</div><p>\\{{name}}</p>',
      data: { v: `a&b<c>"d'e\`f`, raw: "<em>raw</em>", name: "N" },
    });
    const html = String(parsed.html);
    expect(html).not.toContain(`"d'e`);
    expect(html).not.toContain("e`f");
    expect(html).not.toContain("<c>");
    expect(html).toContain("<em>raw</em>");
    expect(html).toContain("{{name}}");
    // The escaped value decodes back to the original text.
    const decoded = html.match(/\[([^\]]*)\]/)![1]!
      .replace(/&#x?([0-9a-f]+);/gi, (_s, n: string) => String.fromCharCode(/^[0-9]+$/.test(n) ? Number(n) : parseInt(n, 16)))
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
    expect(decoded).toBe(`a&b<c>"d'e\`f`);
    expect(m.raw.length).toBeGreaterThan(0);
  });

  test("subjects are never HTML-escaped; CR/LF become a space and other control characters are dropped", async () => {
    const { parsed } = await sendAndParse({ subject: "[{{v}}][{{w}}][{{c}}]", data: { v: "a&b<c>\"'", w: "x\ny", c: "p\u0007q" } });
    expect(parsed.subject).toBe("[a&b<c>\"'][x y][pq]");
  });

  test("a raw {{{var}}} in the subject cannot add headers either", async () => {
    const { m, parsed } = await sendAndParse({ subject: "S {{{v}}}", data: { v: "a\r\nBcc: victim@x.example" } });
    expect(parsed.subject).not.toMatch(/[\r\n]/);
    expect(parsed.subject).toStartWith("S a");
    expect(parsed.headers.has("bcc")).toBe(false);
    expect(m.to.length).toBe(1);
  });

  test("non-ASCII names, subject and body arrive intact", async () => {
    const to = rcpt("utf");
    const { parsed } = await sendAndParse(
      { to: { name: "Zoë Ünicode", email: to }, from: { name: "Grüße Team", email: FROM }, subject: "Grüße {{n}} 🎉", body: "<p>Ça va, {{n}}? 日本語</p>", data: { n: "Zoë" } },
      to,
    );
    expect(parsed.subject).toBe("Grüße Zoë 🎉");
    expect(parsed.from?.value[0]?.name).toBe("Grüße Team");
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value[0]?.name : undefined).toBe("Zoë Ünicode");
    expect(String(parsed.html)).toContain("Ça va, Zoë? 日本語");
  });

  test("arrays render comma-joined, objects as JSON", async () => {
    const { parsed } = await sendAndParse({ subject: "[{{tags}}][{{obj}}]", data: { tags: ["red", "blue"], obj: { value: { k: 1 }, persistent: false } } });
    expect(parsed.subject).toMatch(/^\[red, ?blue\]\[\{"k":1\}\]$/);
  });

  test("unsubscribeUrl, subscribeUrl and manageUrl render as our signed page links, and data cannot override them", async () => {
    const { parsed } = await sendAndParse({
      body: '<p><a href="{{unsubscribeUrl}}">u</a> <a href="{{subscribeUrl}}">s</a> <a href="{{manageUrl}}">m</a></p>',
      data: { unsubscribeUrl: "http://evil.example/x" },
    });
    const html = String(parsed.html);
    expect(html).not.toContain("evil.example");
    const hrefs = [...html.matchAll(/href="([^"]+)"/g)].map((x) => x[1]!);
    expect(hrefs.length).toBe(3);
    const kinds = ["unsubscribe", "subscribe", "manage"];
    for (let i = 0; i < 3; i++) {
      const url = new URL(hrefs[i]!.replace(/&amp;/g, "&"));
      expect(url.pathname).toMatch(new RegExp(`^/${kinds[i]}/[^/]+$`));
      // GET never changes anything and answers the page.
      expect((await srv.api(url.pathname + url.search)).status).toBe(200);
    }
  });
});

describe("Idempotency-Key (both endpoints)", () => {
  test("/v1/send: a reused key with a different body is still 409 and performs nothing", async () => {
    const key = `send-more-${Date.now()}`;
    const first = await send(basic(rcpt()), { headers: { "idempotency-key": key } });
    expectOk(first);
    const other = rcpt("idem");
    const err = expectEnvelope(await send(basic(other), { headers: { "idempotency-key": key } }), 409, "IDEMPOTENCY_KEY_REUSED");
    expect(err.details!.key).toBe(key);
    expect(err.details!.originalStatusCode).toBe(first.status);
    expect(await lookup(other)).toBeUndefined();
  });

  test("/v1/send: keys are per project", async () => {
    const p = await newProject(srv.api, acc, "Idem other");
    await addVerifiedDomain(srv.api, dns, p, "idem-more.bb.example");
    const key = `per-project-${Date.now()}`;
    expectOk(await send(basic(rcpt()), { headers: { "idempotency-key": key } }));
    expectOk(await send({ to: rcpt(), from: "a@idem-more.bb.example", subject: "s", body: "b" }, { key: p.secretKey, headers: { "idempotency-key": key } }));
  });

  test("/v1/send: a rejected request releases its key (README)", async () => {
    const key = `release-${Date.now()}`;
    expectValidation(await send(basic(rcpt(), { subject: "" }), { headers: { "idempotency-key": key } }));
    expectOk(await send(basic(rcpt()), { headers: { "idempotency-key": key } }));
    expectEnvelope(await send(basic(rcpt()), { headers: { "idempotency-key": key } }), 409, "IDEMPOTENCY_KEY_REUSED");
  });

  test("/v1/send: a 403 (unverified sender) or 404 (unknown template) releases the key too", async () => {
    const key = `release-403-${Date.now()}`;
    expectEnvelope(await send(basic(rcpt(), { from: "a@unverified-more.bb.example" }), { headers: { "idempotency-key": key } }), 403);
    expectEnvelope(await send({ to: rcpt(), template: "00000000-0000-4000-8000-000000000000" }, { headers: { "idempotency-key": key } }), 404);
    expectOk(await send(basic(rcpt()), { headers: { "idempotency-key": key } }));
  });

  test("key length: 1 and 255 printable characters are accepted; empty and non-ASCII are 422", async () => {
    expectOk(await send(basic(rcpt()), { headers: { "idempotency-key": "1" } }));
    expectOk(await send(basic(rcpt()), { headers: { "idempotency-key": `${Date.now()}-`.padEnd(255, "~") } }));
    expectEnvelope(await send(basic(rcpt()), { headers: { "idempotency-key": "" } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await track({ email: rcpt(), event: "x" }, { headers: { "idempotency-key": "caf\u00e9" } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await track({ email: rcpt(), event: "x" }, { headers: { "idempotency-key": "" } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await track({ email: rcpt(), event: "x" }, { headers: { "idempotency-key": "del\x7f" } }), 422, "VALIDATION_ERROR");
    expectOk(await track({ email: rcpt(), event: "x" }, { headers: { "idempotency-key": `~!@#$%^&*()_+{}|:<>? ${Date.now()}` } }));
  });

  test("concurrent requests with one key: exactly one is performed, the others are 409", async () => {
    const key = `race-${Date.now()}`;
    const email = rcpt("race");
    const all = await Promise.all(Array.from({ length: 5 }, () => track({ email, event: "raced" }, { headers: { "idempotency-key": key } })));
    expect(all.filter((r) => r.status === 200).length).toBe(1);
    for (const r of all.filter((x) => x.status !== 200)) expectEnvelope(r, 409, "IDEMPOTENCY_KEY_REUSED");
    const c = await lookup(email);
    expect((await eventNames(c!.id)).filter((n) => n === "raced").length).toBe(1);
  });

  test("/v1/track: keys are per project, shared by its public and secret keys", async () => {
    const key = `pk-sk-${Date.now()}`;
    expectOk(await track({ email: rcpt(), event: "x" }, { headers: { "idempotency-key": key } }));
    expectEnvelope(await track({ email: rcpt(), event: "x" }, { key: acc.secretKey, headers: { "idempotency-key": key } }), 409, "IDEMPOTENCY_KEY_REUSED");
  });

  test("/v1/track: a reused key for another email is 409 and creates no contact; details carry the original", async () => {
    const key = `track-more-${Date.now()}`;
    const at = srv.clock.now();
    const first = await track({ email: rcpt(), event: "paid" }, { headers: { "idempotency-key": key } });
    expectOk(first);
    const other = rcpt("idemtrack");
    const err = expectEnvelope(await track({ email: other, event: "paid" }, { headers: { "idempotency-key": key } }), 409, "IDEMPOTENCY_KEY_REUSED");
    expect(typeof err.details!.originalRequest).toBe("string");
    expect(err.details!.originalStatusCode).toBe(first.status);
    expectTimeBetween(err.details!.originalRequestAt, at, srv.clock.now());
    expect(await lookup(other)).toBeUndefined();
  });
});

describe("authentication and bodies on the public API (README \"API\")", () => {
  test("authentication runs before body validation: a public key on /v1/send with a bad body is 401 INVALID_API_KEY", async () => {
    expectEnvelope(await send({}, { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/v1/send", { key: acc.publicKey, raw: "{oops", headers: { "content-type": "application/json" } }), 401, "INVALID_API_KEY");
    expectEnvelope(await track({}, { key: "pk_wrong_wrong_wrong" }), 401);
    expectEnvelope(await srv.api("/v1/verify", { key: acc.publicKey, body: {} }), 401, "INVALID_API_KEY");
  });

  test("malformed JSON with a valid key is 400 BAD_REQUEST on /v1/send and /v1/track", async () => {
    expectEnvelope(await srv.api("/v1/send", { key: acc.secretKey, raw: "{oops", headers: { "content-type": "application/json" } }), 400, "BAD_REQUEST");
    expectEnvelope(await srv.api("/v1/track", { key: acc.publicKey, raw: "{oops", headers: { "content-type": "application/json" } }), 400, "BAD_REQUEST");
  });

  test("a body without a Content-Type is parsed as JSON", async () => {
    const email = rcpt("noct");
    const res = await srv.api("/v1/track", { key: acc.publicKey, raw: new TextEncoder().encode(JSON.stringify({ email, event: "no_content_type" })) });
    expectOk(res);
    expect(res.body.data.contact).toBe((await lookup(email))!.id);
  });
});

describe("POST /v1/track: more rules", () => {
  test("data.contact is the contact's id and data.event the stored event's id", async () => {
    const email = rcpt("trk");
    const res = await track({ email, event: "opened_app" });
    expectOk(res);
    expect(res.body.data.contact).toBe((await lookup(email))!.id);
    expect((await eventsOf(res.body.data.contact)).map((e) => e.id)).toContain(res.body.data.event);
  });

  test("reserved names match case-insensitively and after trimming (README): 422 reserved_event, no contact", async () => {
    for (const event of ["EMAIL.OPEN", "Email.Sent", "Contact.Subscribed", "CONTACT.UNSUBSCRIBED", "Segment.Big-Spenders.Entry", "segment.vip-2.EXIT", " email.click "]) {
      const email = rcpt("rsv");
      const errs = expectValidation(await track({ email, event }));
      expect(errs.map((e) => e.code)).toContain("reserved_event");
      expect(await lookup(email)).toBeUndefined();
    }
  });

  test("the secret key cannot track reserved names either", async () => {
    const errs = expectValidation(await track({ email: rcpt(), event: "contact.subscribed" }, { key: acc.secretKey }));
    expect(errs.map((e) => e.code)).toContain("reserved_event");
  });

  test("event names are trimmed and 1-255 characters (README); a blank or too long name is 422 and creates no contact", async () => {
    const email = rcpt("trim");
    const res = await track({ email, event: "  padded_name  " });
    expectOk(res);
    expect((await eventsOf(res.body.data.contact)).find((e) => e.id === res.body.data.event)?.name).toBe("padded_name");
    expectOk(await track({ email, event: "e".repeat(255) }));
    for (const event of ["", "   ", "e".repeat(256)]) {
      const other = rcpt("blank");
      expectValidation(await track({ email: other, event }), "event");
      expect(await lookup(other)).toBeUndefined();
    }
  });

  test("a 422 for a bad field creates no contact (decisions.md)", async () => {
    for (const body of [{ event: "x", subscribed: "yes" }, { event: "x", data: "str" }, { event: 5 }]) {
      const email = rcpt("bad");
      expectValidation(await track({ email, ...body }));
      expect(await lookup(email)).toBeUndefined();
    }
  });

  test("subscribed on a new contact: false creates it unsubscribed, true creates it subscribed; creation emits no subscription event", async () => {
    const a = rcpt("n1");
    const b = rcpt("n2");
    const ra = (await track({ email: a, event: "x", subscribed: false })).body.data;
    const rb = (await track({ email: b, event: "x", subscribed: true })).body.data;
    expect((await contactById(ra.contact)).subscribed).toBe(false);
    expect((await contactById(rb.contact)).subscribed).toBe(true);
    for (const id of [ra.contact, rb.contact]) {
      const names = await eventNames(id);
      expect(names).not.toContain("contact.subscribed");
      expect(names).not.toContain("contact.unsubscribed");
    }
  });

  test("an explicit subscribed: false on a subscribed contact unsubscribes it and emits contact.unsubscribed", async () => {
    const email = rcpt("unsubtrack");
    const r = (await track({ email, event: "a" })).body.data;
    expect((await contactById(r.contact)).subscribed).toBe(true);
    expectOk(await track({ email, event: "b", subscribed: false }));
    expect((await contactById(r.contact)).subscribed).toBe(false);
    const names = await eventNames(r.contact);
    expect(names.filter((n) => n === "contact.unsubscribed").length).toBe(1);
  });

  test("the email is lower-cased; non-persistent data is in the event but not on the contact (README)", async () => {
    const email = rcpt("lower");
    const r = (await track({ email: email.toUpperCase(), event: "bought", data: { sku: "A1", once: { value: "tmp", persistent: false } } })).body.data;
    const c = await contactById(r.contact);
    expect(c.email).toBe(email);
    expect(c.data).toEqual({ sku: "A1" });
    const ev = (await eventsOf(r.contact)).find((e) => e.id === r.event);
    expect(ev.data).toMatchObject({ sku: "A1", once: "tmp" });
    const again = (await track({ email, event: "bought" })).body.data;
    expect(again.contact).toBe(r.contact);
  });
});

describe("POST /v1/verify: more", () => {
  test("the echoed email is lower-cased (README)", async () => {
    const res = await srv.api("/v1/verify", { key: acc.secretKey, body: { email: "Jane.Doe@GMAIL.com" } });
    expect(res.status).toBe(200);
    expect(res.body.data.email).toBe("jane.doe@gmail.com");
  });

  test("a real short domain (att.com) is not a typo: no suggestedEmail (README)", async () => {
    const res = await srv.api("/v1/verify", { key: acc.secretKey, body: { email: "bob@att.com" } });
    expect(res.status).toBe(200);
    expect(res.body.data.isTypo).toBe(false);
    expect(res.body.data).not.toHaveProperty("suggestedEmail");
    expect(res.body.data.valid).toBe(true);
  });

  test("a null MX (RFC 7505) accepts no mail: no MX, not valid, with a reason (README)", async () => {
    dns.set("nullmx-more.example", "MX", [{ exchange: ".", priority: 0 }]);
    dns.set("nullmx-more.example", "A", ["192.0.2.9"]);
    const res = await srv.api("/v1/verify", { key: acc.secretKey, body: { email: "a@nullmx-more.example" } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ valid: false, hasMxRecords: false, domainExists: true, hasWebsite: true });
    expect(res.body.data.reasons.length).toBeGreaterThan(0);
  });

  test("malformed JSON is 400 BAD_REQUEST; a non-string email is 422", async () => {
    expectEnvelope(await srv.api("/v1/verify", { key: acc.secretKey, raw: "{not json", headers: { "content-type": "application/json" } }), 400, "BAD_REQUEST");
    expectValidation(await srv.api("/v1/verify", { key: acc.secretKey, body: { email: 42 } }), "email");
  });
});

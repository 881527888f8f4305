// Black-box: POST /v1/send end to end — validation, sender rule, contacts, idempotency, rendering, delivery to the
// recipient's MX (MAILSVC_DNS_SERVERS + MAILSVC_MX_PORT), DKIM, retries (MAILSVC_RETRY_SCHEDULE), bounces, GET /emails.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { authenticate } from "mailauth";
import { addVerifiedDomain, type DomainView } from "../domains/support";
import type { TestDns } from "../support/dns";
import type { Account, TestServer } from "../support/server";
import type { SmtpSink } from "../support/smtp-sink";
import { expectTimeBetween } from "../support/time";
import { waitFor } from "../support/wait";
import { deliveryEnv, lastMessageFor, type DeliveryEnv } from "../support/delivery";
import { expectCursorPage, expectEnvelope, expectOk, expectValidation, newProject, NO_SUCH_ID, rawHeader, UUID } from "./support";
import { addresses, lookupContact } from "../support/api";


const SENDER_DOMAIN = "send.bb.example";
const RCPT_DOMAIN = "inbox-bb.example";
const FROM = `hello@${SENDER_DOMAIN}`;

let env: DeliveryEnv, srv: TestServer, dns: TestDns, sink: SmtpSink, acc: Account;
let domain: DomainView;

beforeAll(async () => {
  env = await deliveryEnv({ name: "BB send", mailDomain: RCPT_DOMAIN, senderDomain: SENDER_DOMAIN, config: { retryScheduleMs: [1000, 2000] } });
  ({ srv, dns, sink, acct: acc } = env);
  domain = env.domain!;
});
afterAll(() => env?.close());

const rcpt = addresses(RCPT_DOMAIN);
const send = (body: unknown, opts: { key?: string; headers?: Record<string, string> } = {}) =>
  srv.api("/v1/send", { key: opts.key ?? acc.secretKey, body, headers: opts.headers });
const basic = (to: unknown, extra: Record<string, unknown> = {}) => ({ to, from: FROM, subject: "Hello", body: "<p>Hi</p>", ...extra });
const lookup = (email: string, who: Account = acc) => lookupContact(srv.api, who, email);
const email = (id: string) => srv.api(`/emails/${id}`, { key: acc.secretKey });

/** Polls GET /emails/:id (moving queued work along) until its status is one of `want`. */
function waitStatus(id: string, want: string[], advanceMs = 0) {
  const view = async () => {
    if (advanceMs) srv.clock.advance(advanceMs);
    await srv.drainJobs();
    return (await email(id)).body;
  };
  return waitFor(view, { until: (v) => want.includes(v.status), what: `email ${id} ${want.join("|")}` });
}

/** The newest message the sink received for `address` (running queued work meanwhile). */
const messageFor = (address: string) => lastMessageFor(env, address);

describe("POST /v1/send: request and response", () => {
  test("one recipient: { success: true, data: { emails: [{ contact: { id, email }, email: <uuid> }], timestamp } }", async () => {
    const to = rcpt();
    const sentFrom = srv.clock.now();
    const res = await send(basic(to));
    const sentTo = srv.clock.now();
    expectOk(res);
    expect(res.body.success).toBe(true);
    expectTimeBetween(res.body.data.timestamp, sentFrom, sentTo);
    expect(res.body.data.emails.length).toBe(1);
    const e = res.body.data.emails[0];
    expect(e.contact.email).toBe(to);
    expect(typeof e.contact.id).toBe("string");
    expect(e.email).toMatch(UUID);
    // The recipient contact was created.
    expect((await lookup(to))?.id).toBe(e.contact.id);
  });

  test("to as an array of strings and { name, email }: one email and one contact per recipient", async () => {
    const a = rcpt("arr");
    const b = rcpt("arr");
    const res = await send(basic([a, { name: "Bee Bee", email: b }]));
    expectOk(res);
    expect(res.body.data.emails.map((e: any) => e.contact.email)).toEqual([a, b]);
    const ids = res.body.data.emails.map((e: any) => e.email);
    expect(new Set(ids).size).toBe(2);
    const mb = await messageFor(b);
    const parsed = await mb.parse();
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value[0] : undefined).toMatchObject({ name: "Bee Bee", address: b });
    await messageFor(a);
  });

  test("to as a single { name, email } object", async () => {
    const to = rcpt();
    const res = await send(basic({ name: "Solo", email: to }));
    expectOk(res);
    expect(res.body.data.emails[0].contact.email).toBe(to);
  });

  test("the public key is 401 INVALID_API_KEY and nothing is sent", async () => {
    const to = rcpt();
    expectEnvelope(await send(basic(to), { key: acc.publicKey }), 401, "INVALID_API_KEY");
    expect(await lookup(to)).toBeUndefined();
  });

  test("neither template nor subject+body is 422", async () => {
    expectValidation(await send({ to: rcpt(), from: FROM }));
    expectValidation(await send({ to: rcpt(), from: FROM, subject: "only subject" }), "body");
    expectValidation(await send({ to: rcpt(), from: FROM, body: "<p>only body</p>" }), "subject");
  });

  test("to is required and must hold email addresses (422)", async () => {
    expectValidation(await send({ from: FROM, subject: "s", body: "b" }));
    expectValidation(await send(basic("not-an-email")));
    expectValidation(await send(basic([rcpt(), "nope"])));
  });

  test("subject: 1 to 998 characters, no newline (422 otherwise); 998 is fine", async () => {
    expectValidation(await send(basic(rcpt(), { subject: "" })), "subject");
    expectValidation(await send(basic(rcpt(), { subject: "x".repeat(999) })), "subject");
    expectValidation(await send(basic(rcpt(), { subject: "line one\nline two" })), "subject");
    expectValidation(await send(basic(rcpt(), { subject: "line one\r\nBcc: victim@x.example" })), "subject");
    expectOk(await send(basic(rcpt(), { subject: "x".repeat(998) })));
  });

  test("body must not be empty (422)", async () => {
    expectValidation(await send(basic(rcpt(), { body: "" })), "body");
  });

  test("from is required without a template (422) and must be an email", async () => {
    expectValidation(await send({ to: rcpt(), subject: "s", body: "b" }));
    expectValidation(await send(basic(rcpt(), { from: "not an email" })));
  });

  test("custom headers: CR/LF in names or values, or values over 998 characters, are rejected (422)", async () => {
    expectValidation(await send(basic(rcpt(), { headers: { "X-Ok": "fine\r\nBcc: victim@x.example" } })));
    expectValidation(await send(basic(rcpt(), { headers: { "X-Bad\r\nBcc": "x" } })));
    expectValidation(await send(basic(rcpt(), { headers: { "X-Long": "v".repeat(999) } })));
    expectOk(await send(basic(rcpt(), { headers: { "X-Long": "v".repeat(998) } })));
  });

  test("10 attachments are accepted and arrive; an attachment total over 10 MB is refused (413/422)", async () => {
    const to = rcpt("att");
    const ten = Array.from({ length: 10 }, (_, i) => ({ filename: `f${i}.txt`, content: Buffer.from(`file ${i}`).toString("base64"), contentType: "text/plain" }));
    expectOk(await send(basic(to, { attachments: ten })));
    const parsed = await (await messageFor(to)).parse();
    expect(parsed.attachments.map((a) => a.filename).sort()).toEqual(ten.map((a) => a.filename).sort());
    expect(parsed.attachments.find((a) => a.filename === "f3.txt")!.content.toString()).toBe("file 3");
    const six = Buffer.alloc(6 * 1024 * 1024, 7).toString("base64");
    const big = [
      { filename: "a.bin", content: six, contentType: "application/octet-stream" },
      { filename: "b.bin", content: six, contentType: "application/octet-stream" },
    ];
    const res = await send(basic(rcpt(), { attachments: big }));
    // README "Sending": more than 10 MB decoded is 413 PAYLOAD_TOO_LARGE.
    expectEnvelope(res, 413, "PAYLOAD_TOO_LARGE");
  });

  test("header injection is rejected: CR/LF in a recipient or sender name, overriding From/Bcc via headers", async () => {
    expectValidation(await send(basic({ name: "A\r\nBcc: victim@x.example", email: rcpt() })));
    expectValidation(await send(basic(rcpt(), { from: { name: "X\r\nBcc: victim@x.example", email: FROM } })));
    expectValidation(await send(basic(rcpt(), { headers: { Bcc: "victim@x.example" } })));
    expectValidation(await send(basic(rcpt(), { headers: { From: "ceo@bank.example" } })));
  });

  test("a variable with CR/LF in the subject cannot add headers (line breaks are stripped)", async () => {
    const to = rcpt("inj");
    expectOk(await send(basic(to, { subject: "Hi {{n}}", data: { n: "a\r\nBcc: victim@x.example" } })));
    const m = await messageFor(to);
    const parsed = await m.parse();
    expect(parsed.headers.has("bcc")).toBe(false);
    expect(parsed.subject).not.toMatch(/[\r\n]/);
    expect(m.to).toEqual([to]);
    expect(sink.byRecipient("victim@x.example")).toEqual([]);
  });

  test("more than 10 attachments is 422", async () => {
    const att = Array.from({ length: 11 }, (_, i) => ({ filename: `f${i}.txt`, content: Buffer.from("hi").toString("base64") }));
    expectValidation(await send(basic(rcpt(), { attachments: att })));
  });

  test("an unverified sender domain is 403 INTERNAL_SERVER_ERROR naming it; no contact, no email", async () => {
    const to = rcpt();
    const err = expectEnvelope(await send(basic(to, { from: "x@not-verified-bb.example" })), 403, "INTERNAL_SERVER_ERROR");
    expect(err.message).toContain("not-verified-bb.example");
    expect(await lookup(to)).toBeUndefined();
    expect((await srv.api(`/emails?to=${encodeURIComponent(to)}`, { key: acc.secretKey })).body.total).toBe(0);
  });

  test("a subdomain of the verified domain is not a verified sender (403)", async () => {
    expectEnvelope(await send(basic(rcpt(), { from: `x@news.${SENDER_DOMAIN}` })), 403, "INTERNAL_SERVER_ERROR");
  });
});

describe("POST /v1/send: the contact", () => {
  test("a new contact defaults to subscribed: false", async () => {
    const to = rcpt();
    expectOk(await send(basic(to)));
    expect((await lookup(to))?.subscribed).toBe(false);
  });

  test("an existing contact keeps its state when subscribed is omitted; an explicit change emits the event", async () => {
    const to = rcpt();
    const c = (await srv.api("/contacts", { key: acc.secretKey, body: { email: to } })).body;
    expect(c.subscribed).toBe(true);
    expectOk(await send(basic(to)));
    expect((await lookup(to))?.subscribed).toBe(true);
    expectOk(await send(basic(to, { subscribed: false })));
    expect((await lookup(to))?.subscribed).toBe(false);
    const evs = await srv.api(`/events/contact/${c.id}`, { key: acc.secretKey });
    const names = (Array.isArray(evs.body) ? evs.body : evs.body.data).map((e: any) => e.name);
    expect(names).toContain("contact.unsubscribed");
  });

  test("data is stored on the contact (persistent values only)", async () => {
    const to = rcpt();
    expectOk(await send(basic(to, { data: { plan: "pro", otp: { value: "123456", persistent: false } } })));
    const c = await lookup(to);
    const full = (await srv.api(`/contacts/${c!.id}`, { key: acc.secretKey })).body;
    expect(full.data).toEqual({ plan: "pro" });
  });
});

describe("POST /v1/send: Idempotency-Key", () => {
  test("a reused key is 409 IDEMPOTENCY_KEY_REUSED with details, and only one email goes out", async () => {
    const to = rcpt("idem");
    const key = `send-${Date.now()}`;
    const firstFrom = srv.clock.now();
    const first = await send(basic(to), { headers: { "idempotency-key": key } });
    const firstTo = srv.clock.now();
    expectOk(first);
    const again = await send(basic(to), { headers: { "idempotency-key": key } });
    const err = expectEnvelope(again, 409, "IDEMPOTENCY_KEY_REUSED");
    expect(err.details!.key).toBe(key);
    expect(typeof err.details!.originalRequest).toBe("string");
    expectTimeBetween(err.details!.originalRequestAt, firstFrom, firstTo);
    expect(err.details!.originalStatusCode).toBe(first.status);
    await messageFor(to);
    expect(sink.byRecipient(to)).toHaveLength(1);
    const list = await srv.api(`/emails?to=${encodeURIComponent(to)}`, { key: acc.secretKey });
    expect(list.body.total).toBe(1);
  });

  test("keys longer than 255 characters or with non-printable characters are refused", async () => {
    // docs/api.md "Conventions": a key that is not 1-255 printable ASCII characters is 422 VALIDATION_ERROR.
    expectEnvelope(await send(basic(rcpt()), { headers: { "idempotency-key": "k".repeat(256) } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await send(basic(rcpt()), { headers: { "idempotency-key": "tab\there" } }), 422, "VALIDATION_ERROR");
  });
});

describe("delivery", () => {
  test("the message reaches the recipient's MX, DKIM-signed by the sender domain; GET /emails/:id says DELIVERED", async () => {
    const to = rcpt("dkim");
    const sentFrom = srv.clock.now();
    const res = await send(basic(to, { subject: "Signed", body: "<p>Signed body</p>", reply: "replies@elsewhere-bb.example", headers: { "X-Campaign-Ref": "abc-123" } }));
    expectOk(res);
    const m = await messageFor(to);
    const parsed = await m.parse();
    expect(parsed.subject).toBe("Signed");
    expect(parsed.html).toContain("Signed body");
    expect(parsed.from?.value[0]?.address).toBe(FROM);
    expect(parsed.replyTo?.value[0]?.address).toBe("replies@elsewhere-bb.example");
    expect(parsed.headers.get("x-campaign-ref")).toBe("abc-123");
    // /v1/send is transactional: no List-Unsubscribe.
    expect(rawHeader(m, "List-Unsubscribe")).toBeUndefined();

    const dkimRec = domain.records.find((r) => r.purpose === "dkim")!;
    const resolver = async (name: string, rr: string) => {
      if (rr === "TXT" && name.toLowerCase() === dkimRec.name.toLowerCase()) return [[dkimRec.value]];
      const e: any = new Error(`no ${rr} for ${name}`);
      e.code = "ENOTFOUND";
      throw e;
    };
    const auth = await authenticate(m.raw, { ip: "127.0.0.1", helo: "mailsvc.test", sender: m.from, mta: "sink.test", resolver, disableArc: true, disableBimi: true } as any);
    const results = auth.dkim.results.map((r: any) => ({ d: r.signingDomain, result: r.status.result }));
    expect(results).toContainEqual({ d: SENDER_DOMAIN, result: "pass" });

    const e = await waitStatus(res.body.data.emails[0].email, ["DELIVERED"]);
    for (const k of ["id", "to", "from", "subject", "status", "sourceType", "contactId", "attempts", "messageId", "createdAt"]) expect(e).toHaveProperty(k);
    expect(e.to).toBe(to);
    expect(e.subject).toBe("Signed");
    expect(e.sourceType).toBe("TRANSACTIONAL");
    expect(e.contactId).toBe(res.body.data.emails[0].contact.id);
    expect(e.attempts).toBe(1);
    const createdAt = expectTimeBetween(e.createdAt, sentFrom, srv.clock.now());
    expectTimeBetween(e.deliveredAt, createdAt, srv.clock.now());
  });

  test("a from { name, email } becomes the From display name; `name` is the fallback for a plain from", async () => {
    const a = rcpt();
    const b = rcpt();
    expectOk(await send(basic(a, { from: { name: "Ann From", email: FROM } })));
    expectOk(await send(basic(b, { name: "Legacy Name" })));
    expect((await (await messageFor(a)).parse()).from?.value[0]).toMatchObject({ name: "Ann From", address: FROM });
    expect((await (await messageFor(b)).parse()).from?.value[0]).toMatchObject({ name: "Legacy Name", address: FROM });
  });

  test("variables: data and contact fields, fallbacks, HTML escaping in the body, raw triple braces, plain subject", async () => {
    const to = rcpt("vars");
    expectOk(
      await send(
        basic(to, {
          subject: "Hi {{firstName}} & {{missing}}<ok>",
          body: '<p>{{firstName}}|{{ nickname ?? "friend" }}|{{email}}|{{{rawHtml}}}|{{code}}|[{{missing}}]</p>',
          data: { firstName: "<Ann>", rawHtml: "<b>bold</b>", code: { value: "X1", persistent: false } },
        }),
      ),
    );
    const parsed = await (await messageFor(to)).parse();
    expect(parsed.subject).toBe("Hi <Ann> & <ok>");
    expect(parsed.html).toContain(`&lt;Ann&gt;|friend|${to}|<b>bold</b>|X1|[]`);
  });

  test("a template supplies subject, body and from; request fields override them", async () => {
    const t = await srv.api("/templates", {
      key: acc.secretKey,
      body: { name: "Receipt", subject: "Receipt for {{item}}", body: "<p>You bought {{item}}</p>", from: FROM, type: "MARKETING" },
    });
    expectOk(t);
    const a = rcpt("tpl");
    const b = rcpt("tpl");
    expectOk(await send({ to: a, template: t.body.id, data: { item: "a hat" } }));
    expectOk(await send({ to: b, template: t.body.id, subject: "Override {{item}}", data: { item: "a cap" } }));
    const ma = await messageFor(a);
    const pa = await ma.parse();
    expect(pa.subject).toBe("Receipt for a hat");
    expect(pa.html).toContain("You bought a hat");
    expect(pa.from?.value[0]?.address).toBe(FROM);
    // /v1/send is always transactional, even with a MARKETING template: no unsubscribe header.
    expect(rawHeader(ma, "List-Unsubscribe")).toBeUndefined();
    const pb = await (await messageFor(b)).parse();
    expect(pb.subject).toBe("Override a cap");
  });

  test("an unknown template is 404, and another project's template too (README: never revealing that it exists)", async () => {
    expectEnvelope(await send({ to: rcpt(), template: NO_SUCH_ID }), 404, "NOT_FOUND");
    const other = await newProject(srv.api, acc, "Send other");
    const t = await srv.api("/templates", { key: acc.secretKey, body: { name: "T", subject: "S", body: "B", from: FROM } });
    const cross = await srv.api("/v1/send", { key: other.secretKey, body: { to: rcpt(), template: t.body.id } });
    expectEnvelope(cross, 404, "NOT_FOUND");
  });

  test("a 4xx from the MX is retried on MAILSVC_RETRY_SCHEDULE and then delivered", async () => {
    const to = rcpt("defer");
    sink.onRcpt = (r, n) => (r === to && n === 1 ? { code: 451, message: "try later" } : undefined);
    try {
      const res = await send(basic(to));
      const id = res.body.data.emails[0].email;
      const deferred = await waitStatus(id, ["DEFERRED"]);
      expect(deferred.lastReply ?? "").toContain("451");
      const done = await waitStatus(id, ["DELIVERED"], 1000);
      expect(done.attempts).toBeGreaterThanOrEqual(2);
    } finally {
      sink.onRcpt = () => undefined;
    }
  });

  test("4xx every time: FAILED after the last wait of the schedule", async () => {
    const to = rcpt("fail");
    sink.onRcpt = (r) => (r === to ? { code: 451 } : undefined);
    try {
      const res = await send(basic(to));
      const e = await waitStatus(res.body.data.emails[0].email, ["FAILED"], 1000);
      expect(e.attempts).toBe(3); // first try + one per wait in "1s,2s"
    } finally {
      sink.onRcpt = () => undefined;
    }
  });

  test("a 5xx is a hard bounce: BOUNCED, the contact unsubscribed, later sends SUPPRESSED and not attempted", async () => {
    const to = rcpt("bounce");
    sink.onRcpt = (r) => (r === to ? { code: 550, message: "no such user" } : undefined);
    try {
      const res = await send(basic(to));
      const e = await waitStatus(res.body.data.emails[0].email, ["BOUNCED"]);
      expect(e.lastReply ?? "").toContain("550");
      expect((await lookup(to))?.subscribed).toBe(false);
      const attemptsBefore = sink.rcptAttempts.get(to);
      const again = await send(basic(to));
      expectOk(again);
      const s = await waitStatus(again.body.data.emails[0].email, ["SUPPRESSED"]);
      expect(s.status).toBe("SUPPRESSED");
      expect(sink.rcptAttempts.get(to)).toBe(attemptsBefore);
    } finally {
      sink.onRcpt = () => undefined;
    }
  });
});

describe("GET /emails after sends", () => {
  test("filters to, contactId and status; cursor pages with total only on the first page", async () => {
    const p = await newProject(srv.api, acc, "Log");
    await addVerifiedDomain(srv.api, dns, p, "log.bb.example");
    const to = rcpt("log");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await srv.api("/v1/send", { key: p.secretKey, body: { to, from: "a@log.bb.example", subject: `n${i}`, body: "b" } });
      expectOk(r);
      ids.push(r.body.data.emails[0].email);
    }
    const other = rcpt("log");
    expectOk(await srv.api("/v1/send", { key: p.secretKey, body: { to: other, from: "a@log.bb.example", subject: "other", body: "b" } }));
    for (const id of ids) {
      const view = async () => {
        await srv.drainJobs();
        return (await srv.api(`/emails/${id}`, { key: p.secretKey })).body;
      };
      await waitFor(view, { until: (v) => v.status === "DELIVERED", what: `email ${id} DELIVERED` });
    }
    const byTo = await srv.api(`/emails?to=${encodeURIComponent(to)}`, { key: p.secretKey });
    expectCursorPage(byTo);
    expect(byTo.body.total).toBe(3);
    const contactId = (await lookup(to, p))!.id;
    expect((await srv.api(`/emails?contactId=${contactId}`, { key: p.secretKey })).body.total).toBe(3);
    expect((await srv.api(`/emails?status=DELIVERED&to=${encodeURIComponent(to)}`, { key: p.secretKey })).body.total).toBe(3);
    expect((await srv.api(`/emails?status=BOUNCED`, { key: p.secretKey })).body.total).toBe(0);

    const seen: string[] = [];
    let cursor: string | null = null;
    let page = 0;
    for (;;) {
      const res: any = await srv.api(`/emails?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { key: p.secretKey });
      expectCursorPage(res);
      expect(res.body.total).toBe(page === 0 ? 4 : 0);
      seen.push(...res.body.data.map((e: any) => e.id));
      page++;
      if (!res.body.hasMore) break;
      cursor = res.body.cursor;
    }
    expect(seen.length).toBe(4);
    expect(new Set(seen).size).toBe(4);
    // Other projects see none of it.
    expect((await srv.api("/emails", { key: acc.secretKey })).body.data.map((e: any) => e.id)).not.toContain(ids[0]);
    expectEnvelope(await srv.api(`/emails/${ids[0]}`, { key: acc.secretKey }), 404);
  });
});

describe("sending reputation (decisions.md: >10% bounces over at least 100 sends disables the project)", () => {
  /** Sends 100 emails (88 accepted, 12 refused with 550) from a new project; returns it once every outcome is in. */
  async function hundredWithTwelveBounces(name: string, domainName: string) {
    const p = await newProject(srv.api, acc, name);
    await addVerifiedDomain(srv.api, dns, p, domainName);
    const bad = new Set(Array.from({ length: 12 }, (_, i) => `${name.toLowerCase()}-bad${i}@${RCPT_DOMAIN}`));
    const all = [...Array.from({ length: 88 }, (_, i) => `${name.toLowerCase()}-good${i}@${RCPT_DOMAIN}`), ...bad];
    sink.onRcpt = (r) => (bad.has(r) || r.includes("-late-bad") ? { code: 550, message: "no such user" } : undefined);
    for (let i = 0; i < all.length; i += 50) {
      expectOk(await srv.api("/v1/send", { key: p.secretKey, body: { to: all.slice(i, i + 50), from: `a@${domainName}`, subject: "s", body: "b" } }));
    }
    const outstanding = async () => {
      await srv.drainJobs();
      const pending = await srv.api("/emails?status=PENDING", { key: p.secretKey });
      const sending = await srv.api("/emails?status=SENDING", { key: p.secretKey });
      return { status: pending.status, pending: pending.body.total, sending: sending.body.total };
    };
    await waitFor(outstanding, { until: (o) => o.status === 403 || (o.pending === 0 && o.sending === 0), what: "every outcome of the 100 sends" });
    return p;
  }
  function waitDisabled(p: Account) {
    const list = async () => {
      await srv.drainJobs();
      return srv.api("/emails?limit=1", { key: p.secretKey });
    };
    return waitFor(list, { until: (res) => res.status === 403, what: "the project to be disabled" });
  }

  test("once over the threshold, the next hard bounce disables the project: 403 PROJECT_DISABLED, reason EMAIL_REPUTATION", async () => {
    try {
      const p = await hundredWithTwelveBounces("RepLate", "rep-late.bb.example");
      // The next hard bounce, sent before the 10 s check window passes (once it has passed, the check job may
      // disable the project before this request: then it is refused already, which is the outcome asserted below).
      const late = await srv.api("/v1/send", { key: p.secretKey, body: { to: `replate-late-bad@${RCPT_DOMAIN}`, from: "a@rep-late.bb.example", subject: "s", body: "b" } });
      if (late.status !== 200) expectEnvelope(late, 403, "PROJECT_DISABLED");
      srv.clock.advance(11_000);
      const last = await waitDisabled(p);
      const err = expectEnvelope(last, 403, "PROJECT_DISABLED");
      expect(JSON.stringify(err)).toContain("EMAIL_REPUTATION");
      const proj = (await srv.api("/users/@me/projects", { cookie: p.cookie })).body.find((x: any) => x.id === p.projectId);
      expect(proj).toMatchObject({ disabled: true, disabledReason: "EMAIL_REPUTATION" });
      const sec = await srv.api(`/users/@me/projects/${p.projectId}/security`, { cookie: p.cookie });
      expect(sec.status).toBe(200);
      expect(JSON.stringify(sec.body)).toContain("EMAIL_REPUTATION");
      // Other projects of the same user are not affected.
      expect((await srv.api("/templates", { key: acc.secretKey })).status).toBe(200);
    } finally {
      sink.onRcpt = () => undefined;
    }
  }, 20_000);

  test("12 hard bounces in one burst of 100 sends disable the project without any later bounce", async () => {
    try {
      const p = await hundredWithTwelveBounces("RepBurst", "rep-burst.bb.example");
      // The check may be throttled to once per 10 s per project: let that window pass (no further bounce needed).
      srv.clock.advance(11_000);
      const last = await waitDisabled(p);
      expectEnvelope(last, 403, "PROJECT_DISABLED");
    } finally {
      sink.onRcpt = () => undefined;
    }
  }, 20_000);
});

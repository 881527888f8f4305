// The engine's pure pieces: quoted-printable, DKIM canonicalization and signatures (checked with
// mailauth), the HTML-to-text conversion, custom-header rules, reply classification, relay URLs.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { authenticate } from "mailauth";
import { simpleParser } from "mailparser";
import { acquireBuffer, releaseBuffer } from "../../src/mail/message/buffers";
import type { BuildPlan } from "../../src/mail/message/build";
import { checkWorkerBuild, InlineBuilder, WorkerBuilder } from "../../src/mail/message/builder";
import { composeAlternative, splitRaw, toWire } from "../../src/mail/message/compose";
import { checkCustomHeaders } from "../../src/mail/message/custom-headers";
import { dkimHeader, prepareDkim, relaxedBody } from "../../src/mail/dkim/dkim";
import { chooseFairly, ProjectBuckets } from "../../src/mail/outbox/send-rate";
import { htmlToText } from "../../src/mail/message/html-text";
import { parseRelayUrl } from "../../src/mail/smtp/pool";
import { qpEncode } from "../../src/mail/message/qp";
import { isSmtpReady, toSmtpData } from "../../src/mail/smtp/smtp-data";
import { Signer } from "../../src/mail/dkim/signer";
import { fromSmtpError } from "../../src/mail/smtp/smtp-result";

function qpDecode(s: string): Buffer {
  const bytes: number[] = [];
  const text = s.replace(/=\r\n/g, "");
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "=") {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(text.charCodeAt(i));
  }
  return Buffer.from(bytes);
}

describe("quoted-printable", () => {
  const samples = [
    "plain ascii",
    "Grüße, 日本語, emoji 🎉 and = signs",
    "trailing spaces   \nand\ttabs\t\r\nmixed\rbreaks",
    "  leading and   many    spaces  ",
    "x".repeat(500),
    "é".repeat(200),
    ".dot at line start\n.another",
  ];
  for (const s of samples) {
    test(`round-trips ${JSON.stringify(s.slice(0, 24))}`, () => {
      const enc = qpEncode(s).toString("latin1");
      for (const line of enc.split("\r\n")) expect(line.length).toBeLessThanOrEqual(76);
      expect(enc).not.toMatch(/[ \t]\r\n|[ \t]$/);
      expect(enc).not.toMatch(/ {2}|\t/);
      expect(enc).not.toMatch(/[^\r]\n/);
      expect(qpDecode(enc).toString("utf8")).toBe(s.replace(/\r\n|\r|\n/g, "\r\n"));
    });
  }
});

describe("SMTP DATA form", () => {
  test("quoted-printable never starts a line with a dot", () => {
    const enc = qpEncode(".a\n..b\n" + "x".repeat(74) + ".c").toString("latin1");
    for (const line of enc.split("\r\n")) expect(line.startsWith(".")).toBe(false);
    expect(qpDecode(enc).toString()).toBe(".a\r\n..b\r\n" + "x".repeat(74) + ".c");
  });

  test("toSmtpData passes ready bytes through and fixes the rest", () => {
    const ready = Buffer.from("Subject: x\r\n\r\nline\r\n=2Edot\r\n");
    expect(isSmtpReady(ready)).toBe(true);
    expect(toSmtpData(ready)).toBe(ready);
    expect(toSmtpData(Buffer.from(".a\r\n.b\nc\rd\r\n..e")).toString()).toBe("..a\r\n..b\r\nc\r\nd\r\n...e");
  });
});

describe("DKIM", () => {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  const p = (publicKey.export({ type: "spki", format: "der" }) as Buffer).toString("base64");
  const verify = async (raw: Buffer) => {
    const res = await authenticate(raw, {
      ip: "127.0.0.1",
      helo: "x",
      sender: "b@sender.test",
      mta: "mx.test",
      resolver: async (name: string, type: string) => {
        if (type === "TXT" && name === "s1._domainkey.sender.test") return [[`v=DKIM1; k=rsa; p=${p}`]];
        throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      },
    } as never);
    return (res as { dkim: { results: { status: { result: string } }[] } }).dkim.results[0]!.status.result;
  };

  test("relaxed body canonicalization", () => {
    expect(relaxedBody("a  b \t c  \r\n\r\n\r\n")).toBe("a b c\r\n");
    expect(relaxedBody("\r\n\r\n")).toBe("");
    expect(relaxedBody("x")).toBe("x\r\n");
  });

  test("our composer's message passes, and so does one whose body needs canonicalizing", async () => {
    const signer = new Signer();
    const msg = composeAlternative({
      messageId: "1@mailsvc.test",
      date: new Date(),
      from: { name: "Sénder", email: "a@sender.test" },
      to: { email: "r@rcpt.test" },
      subject: "Ünïcode subject that is long enough to be folded over more than one header line, surely",
      html: "<div>\n    <p>indented   html</p>\n</div>",
      text: "text",
      headers: { "List-Unsubscribe": "<https://x.test/u>", "X-Custom": "a  b" },
    });
    const prep = prepareDkim(msg, { domain: "sender.test", selector: "s1", timeMs: Date.now() });
    const signed = toWire(msg, dkimHeader(prep, await signer.sign(pem, prep.data)));
    expect(await verify(signed)).toBe("pass");
    // A foreign body with runs of spaces, tabs and trailing whitespace takes the slow path.
    const odd = splitRaw(Buffer.from("From: a@sender.test\r\nTo: r@rcpt.test\r\nSubject: x\r\n\r\nline  one \t\r\n\tline two\r\n\r\n\r\n", "latin1"));
    const prep2 = prepareDkim(odd, { domain: "sender.test", selector: "s1", timeMs: Date.now() });
    expect(await verify(toWire(odd, dkimHeader(prep2, await signer.sign(pem, prep2.data))))).toBe("pass");
    // Tampering breaks it.
    const tampered = Buffer.from(signed.toString("latin1").replace("indented", "INDENTED"), "latin1");
    expect(await verify(tampered)).not.toBe("pass");
  });

  test("RSA signatures are the same bytes from the system's OpenSSL and from WebCrypto; other keys fall back", async () => {
    const viaOpenSsl = new Signer();
    const viaWebCrypto = new Signer({ openssl: false });
    expect(viaWebCrypto.rsaBackend).toBe("webcrypto");
    // The CI and development machines are Debian with libssl3: the fast path must be the one taken there.
    expect(viaOpenSsl.rsaBackend).toBe("openssl");
    for (const data of ["a", "dkim-signature:v=1; a=rsa-sha256; d=sender.test; s=s1; bh=abc; b=", "x".repeat(5000)]) {
      expect(await viaOpenSsl.sign(pem, data)).toBe(await viaWebCrypto.sign(pem, data));
    }
    const ed = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    expect(await viaOpenSsl.sign(ed, "data")).toBe(await viaWebCrypto.sign(ed, "data"));
    expect(Buffer.from(await viaOpenSsl.sign(ed, "data"), "base64").length).toBe(64);
  });

  test("the composed message parses back to the same parts", async () => {
    const html = "<p>Grüße <b>bold</b></p>\n" + "<p>para</p>\n".repeat(100);
    const msg = toWire(composeAlternative({ messageId: "2@m.test", date: new Date(), from: { email: "a@s.test" }, to: { name: "Zoë", email: "z@r.test" }, subject: "Grüße", html, text: "Grüße bold" }));
    const p = await simpleParser(msg);
    expect(p.subject).toBe("Grüße");
    expect((p.html as string).replace(/\r\n/g, "\n").trim()).toBe(html.trim());
    expect(p.text!.trim()).toBe("Grüße bold");
    expect((p.to as { value: { name: string }[] }).value[0]!.name).toBe("Zoë");
  });
});

test("recycled message buffers are handed out again", () => {
  const a = acquireBuffer(30_000);
  expect(a.length).toBe(30_000);
  const ab = a.buffer;
  releaseBuffer(a);
  const b = acquireBuffer(20_000);
  expect(b.buffer).toBe(ab);
  releaseBuffer(b);
});

test("html to text keeps words and link targets, drops markup", () => {
  const t = htmlToText('<html><head><style>p{}</style></head><body><h1>Title</h1><p>Hello&nbsp;<b>Ann</b> &amp; co</p><a href="https://x.test/a?b=1&amp;c=2">Read more</a><br><ul><li>one</li><li>two</li></ul></body></html>');
  expect(t).toContain("Title");
  expect(t).toContain("Hello Ann & co");
  expect(t).toContain("Read more (https://x.test/a?b=1&c=2)");
  expect(t).toContain("* one");
  expect(t).not.toContain("<");
  expect(t).not.toContain("p{}");
});

test("custom headers: injection, reserved names, limits", () => {
  const r = checkCustomHeaders({ "X-Ok": "fine", "X-Inj": "a\r\nBcc: x@y", From: "x@y", "X Space": "v", "X-Long": "v".repeat(999) });
  expect(r.headers).toEqual({ "X-Ok": "fine" });
  const byField = Object.fromEntries(r.errors.map((e) => [e.field, e.code]));
  expect(byField).toEqual({ "headers.X-Inj": "invalid_string", "headers.From": "reserved_header", "headers.X Space": "invalid_string", "headers.X-Long": "too_big" });
});

test("SMTP replies: 5xx on the envelope or data bounces, everything else defers", () => {
  expect(fromSmtpError({ code: "EENVELOPE", command: "RCPT TO", response: "550 5.1.1 unknown", responseCode: 550 }, "rcpt").kind).toBe("bounced");
  expect(fromSmtpError({ code: "EMESSAGE", command: "DATA", response: "552 too big", responseCode: 552 }, "data").kind).toBe("bounced");
  expect(fromSmtpError({ code: "EENVELOPE", command: "RCPT TO", response: "451 try later", responseCode: 451 }, "rcpt").kind).toBe("deferred");
  expect(fromSmtpError({ code: "EAUTH", command: "AUTH PLAIN", response: "535 bad credentials", responseCode: 535 }, "auth").kind).toBe("deferred");
  expect(fromSmtpError({ code: "ECONNECTION", command: "CONN", response: "554 no service", responseCode: 554 }, "connect").kind).toBe("deferred");
  const net = fromSmtpError({ code: "ESOCKET", originalCode: "ECONNREFUSED", message: "connect ECONNREFUSED" }, "connect");
  expect(net).toMatchObject({ kind: "deferred", code: 0 });
  expect(net.reply).toContain("ECONNREFUSED");
});

test("relay URLs", () => {
  expect(parseRelayUrl("smtps://user%40x.test:p%3Ass@relay.test")).toEqual({ host: "relay.test", port: 465, secure: true, auth: { user: "user@x.test", pass: "p:ss" } });
  expect(parseRelayUrl("smtp://relay.test:2525")).toEqual({ host: "relay.test", port: 2525, secure: false });
  expect(() => parseRelayUrl("http://relay.test")).toThrow();
});

describe("message builders", () => {
  const content = {
    id: "c1",
    project_id: "p1",
    subject: "Hi {{name}}",
    html: '<p>Hello {{name}} <a href="https://example.com/a?x=1&amp;y=2">a</a> <a href="https://example.com/b">b</a></p>',
    text: null,
    from_email: "news@sender.test",
    from_name: "News",
    reply_to: null,
    type: "MARKETING",
    headers: null,
    attachments: null,
  };
  const plan = (emailId: string): BuildPlan => ({
    emailId,
    contentId: "c1",
    system: false,
    messageId: `${emailId}@mailsvc.test`,
    toEmail: "ann@rcpt.test",
    toName: "Ann",
    varsJson: JSON.stringify({ name: "Ann" }),
    extraVars: { unsubscribeUrl: "https://x.test/unsubscribe/t" },
    decoration: { projectId: "p1", footer: "<div>footer</div>", pixelUrl: "https://x.test/t/o/px", clickBase: "https://x.test/t/c/tok.", skipPrefixes: [], headers: { "List-Unsubscribe": "<https://x.test/u>" }, linkGeneration: 0 },
    dkim: null,
    now: Date.UTC(2026, 10, 21),
  });

  test("the worker and the in-process builder make the same message and report each link once", async () => {
    const secret = Buffer.alloc(32, 7);
    const inline = new InlineBuilder(secret, new Signer());
    const worker = new WorkerBuilder(secret, new Signer(), { info() {}, warn() {}, error() {}, line() {}, json() {}, flush() {}, close() {} });
    try {
      const a = await inline.build(plan("e1"), content);
      const b = await worker.build(plan("e1"), content);
      expect(worker.mode).toBe("worker");
      const [pa, pb] = await Promise.all([simpleParser(a.raw), simpleParser(b.raw)]);
      expect(pb.html).toBe(pa.html as string);
      expect(pb.text).toBe(pa.text);
      expect(pb.headers.get("list-unsubscribe")).toEqual(pa.headers.get("list-unsubscribe"));
      expect(pa.html).toContain("https://x.test/t/c/tok.");
      expect(pa.html).toContain("<div>footer</div>");
      expect(b.links).toEqual(a.links);
      expect(a.links.map(([url]) => url)).toEqual(["https://example.com/a?x=1&y=2", "https://example.com/b"]);
      // A second message of the same project reports nothing new; a new link generation reports again.
      expect((await worker.build(plan("e2"), content)).links).toEqual([]);
      const p3 = plan("e3");
      p3.decoration!.linkGeneration = 1;
      expect((await worker.build(p3, content)).links).toHaveLength(2);
      worker.release(b.raw);
    } finally {
      await worker.close();
    }
  });

  test("a worker that cannot start: messages are built in-process and the error is logged", async () => {
    const errors: string[] = [];
    const log = { info() {}, warn() {}, error: (m: string) => errors.push(m), line() {}, json() {}, flush() {}, close() {} };
    const broken = new WorkerBuilder(Buffer.alloc(32, 7), new Signer(), log, 30_000, new URL("file:///nonexistent/build-worker.ts"));
    try {
      const built = await broken.build(plan("e9"), content);
      expect(broken.mode).toBe("in-process");
      expect((await simpleParser(built.raw)).html).toContain("Hello Ann");
      expect(errors.join(" ")).toContain("building in-process");
    } finally {
      await broken.close();
    }
  });

  test("mailsvc selfcheck: the worker starts and builds", async () => {
    const r = await checkWorkerBuild({ info() {}, warn() {}, error() {}, line() {}, json() {}, flush() {}, close() {} });
    expect(r.builtIn).toBe("worker");
    expect(r.bytes).toBeGreaterThan(100);
  });
});

describe("per-project send rate (send-rate.ts)", () => {
  const rows = (project: string, n: number) => Array.from({ length: n }, (_, i) => ({ id: `${project}${i}`, project_id: project }));

  test("projects take turns; unlimited by default (no rate holds anyone back)", () => {
    const buckets = new ProjectBuckets(Infinity);
    const got = chooseFairly([...rows("a", 5), ...rows("b", 2)], 4, buckets, 0);
    expect(got).toEqual({ ids: ["a0", "b0", "a1", "b1"], limited: false });
    // Thousands a second, round after round: never limited.
    for (let t = 0; t < 10; t++) expect(chooseFairly(rows("a", 5000), 5000, buckets, t).limited).toBe(false);
  });

  test("a rate holds a project to that many a second, refilled as time passes", () => {
    const buckets = new ProjectBuckets(3);
    expect(chooseFairly(rows("a", 5), 5, buckets, 0)).toEqual({ ids: ["a0", "a1", "a2"], limited: true });
    expect(chooseFairly(rows("a", 5), 5, buckets, 0).ids).toEqual([]);
    expect(chooseFairly(rows("a", 5), 5, buckets, 1000).ids).toHaveLength(3);
  });
});

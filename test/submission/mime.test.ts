// The submission listener's synchronous MIME reader against mailparser (the reference) on messages
// written by nodemailer and by hand: same subject, addresses, text, HTML and attachments.
import { describe, expect, test } from "bun:test";
import { simpleParser, type AddressObject } from "mailparser";
import MailComposer from "nodemailer/lib/mail-composer";
import { literalSource, renderHtml, renderSubject, renderText } from "../../src/mail/message/render";
import { decodeWords, parseMessage } from "../../src/modules/submission/mime";

const build = (mail: ConstructorParameters<typeof MailComposer>[0]) => new MailComposer(mail).compile().build();

const flat = (a: AddressObject | AddressObject[] | undefined) =>
  (a === undefined ? [] : Array.isArray(a) ? a : [a]).flatMap((o) => o.value.flatMap((v) => (v.group ? v.group : [v]))).map((v) => ({ name: v.name, address: v.address }));

/** What both readers must agree on. */
async function reference(raw: Buffer): Promise<unknown> {
  const m = await simpleParser(raw, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, keepCidLinks: true });
  return {
    subject: m.subject ?? null,
    from: flat(m.from),
    to: flat(m.to),
    cc: flat(m.cc),
    replyTo: flat(m.replyTo),
    text: m.text ? m.text.replace(/\r\n/g, "\n") : null,
    html: typeof m.html === "string" ? m.html.replace(/\r\n/g, "\n") : null,
    attachments: m.attachments.map((a) => ({ filename: a.filename ?? null, contentType: a.contentType, cid: a.cid ?? null, disposition: a.contentDisposition, content: a.content.toString("base64") })),
  };
}

function ours(raw: Buffer) {
  const m = parseMessage(raw);
  return {
    subject: m.subject,
    from: m.from,
    to: m.to,
    cc: m.cc,
    replyTo: m.replyTo,
    text: m.text,
    html: m.html,
    attachments: m.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, cid: a.cid, disposition: a.disposition, content: a.content.toString("base64") })),
  };
}

const png = Buffer.from("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4c40000000049454e44ae426082", "hex");

describe("parseMessage agrees with mailparser", () => {
  const cases: [string, () => Buffer | Promise<Buffer>][] = [
    [
      "text, HTML, a PDF, an inline image, unicode everywhere, a long subject in several encoded words",
      () =>
        build({
          from: '"Zoë Ünicode" <zoe@sender.test>',
          to: ["Ann <ann@rcpt.test>", '"Böb, Jr." <bob@rcpt.test>'],
          cc: "cc@rcpt.test",
          replyTo: "help@sender.test",
          subject: "Ünïcödé ".repeat(12) + "日本語のテキスト {{x}}",
          text: "Héllo\nline two with a trailing space \n.leading dot\n",
          html: '<p>Héllo <img src="cid:logo@sender.test"></p>',
          attachments: [
            { filename: "rechnung-März.pdf", content: Buffer.from("%PDF-1.4\x00\xff binary", "latin1"), contentType: "application/pdf" },
            { filename: "logo.png", content: png, cid: "logo@sender.test", contentType: "image/png" },
          ],
        }),
    ],
    ["HTML only, base64", () => build({ from: "a@sender.test", to: "b@rcpt.test", subject: "B64", html: "<p>" + "x".repeat(200) + " é</p>", textEncoding: "base64" })],
    ["text only, quoted-printable with long lines", () => build({ from: "a@sender.test", to: "b@rcpt.test", subject: "QP", text: "é ".repeat(100) + "\n= equals =3D\n", textEncoding: "quoted-printable" })],
    [
      "ISO-8859-1 quoted-printable by hand, bare LF line ends, a group address",
      () =>
        Buffer.from(
          "From: =?ISO-8859-1?Q?Caf=E9?= <cafe@sender.test>\nTo: undisclosed-recipients:;\nSubject: =?iso-8859-1?q?cr=E8me_br=FBl=E9e?=\nContent-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n\nCaf=E9 cr=E8me =\nbr=FBl=E9e\n",
          "latin1",
        ),
    ],
    [
      "format=flowed with DelSp",
      () =>
        Buffer.from(
          "From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: flowed\r\nContent-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\r\n\r\nThis is a long line that was \r\nwrapped by the client.\r\n>quoted",
        ),
    ],
    [
      "nested mixed > related > alternative, a text attachment",
      () =>
        build({
          from: "a@sender.test",
          to: "b@rcpt.test",
          subject: "Nested",
          text: "plain",
          html: '<p>html <img src="cid:i1@x"></p>',
          attachments: [
            { filename: "i1.png", content: png, cid: "i1@x" },
            { filename: "notes.txt", content: "some notes\r\n", contentType: "text/plain" },
          ],
        }),
    ],
  ];
  for (const [name, make] of cases) {
    test(name, async () => {
      const raw = await make();
      expect(ours(raw) as unknown).toEqual(await reference(raw));
    });
  }
});

test("a forwarded message (message/rfc822) stays an attachment (mailparser folds it into the bodies)", async () => {
  const inner = "From: x@y.test\r\nSubject: inner\r\n\r\nInner body\r\n";
  const m = parseMessage(await build({ from: "a@sender.test", to: "b@rcpt.test", subject: "Fwd", text: "see attached", attachments: [{ filename: "fwd.eml", content: inner, contentType: "message/rfc822" }] }));
  expect(m.text).toBe("see attached");
  expect(m.attachments.map((a) => [a.filename, a.contentType, a.content.toString()])).toEqual([["fwd.eml", "message/rfc822", inner]]);
});

test("decodeWords: adjacent words joined (a character split between them), whitespace between words dropped, plain text kept", () => {
  const e = Buffer.from("é", "utf8");
  const split = `=?UTF-8?B?${Buffer.from([0x61, e[0]!]).toString("base64")}?= =?UTF-8?B?${Buffer.from([e[1]!, 0x62]).toString("base64")}?=`;
  expect(decodeWords(split)).toBe("aéb");
  expect(decodeWords("Re: =?UTF-8?Q?caf=C3=A9?= and =?ISO-8859-1?Q?cr=E8me?= ok")).toBe("Re: café and crème ok");
  expect(decodeWords("=?utf-8?q?a_b?=  =?iso-8859-1?q?=E9?=")).toBe("a bé");
  expect(decodeWords("no words here")).toBe("no words here");
});

test("a multipart without its closing boundary keeps the last part; a boundary that merely starts a longer one is no delimiter", () => {
  const raw = Buffer.from(
    [
      "From: a@sender.test",
      'Content-Type: multipart/mixed; boundary="b"',
      "",
      "--b",
      'Content-Type: multipart/alternative; boundary="b-inner"',
      "",
      "--b-inner",
      "Content-Type: text/plain",
      "",
      "inner text",
      "--b-inner--",
      "--b",
      'Content-Type: application/octet-stream; name="cut.bin"',
      "Content-Transfer-Encoding: base64",
      "",
      Buffer.from("partial").toString("base64"),
    ].join("\r\n"),
  );
  const m = parseMessage(raw);
  expect(m.text).toBe("inner text");
  expect(m.attachments.map((a) => [a.filename, a.content.toString()])).toEqual([["cut.bin", "partial"]]);
});

test("literalSource: submitted content renders exactly as written, whatever braces and backslashes it holds", () => {
  for (const text of ["{{name}}", "{{{raw}}}", "{{{{", "a \\{{b}} c", "\\\\{{x", "}} {{ unclosed", "{{ bad syntax ?? }}", "no braces", "{", "{{#each}}"]) {
    const src = literalSource(text);
    expect([text, renderText(src, { name: "X", raw: "<b>" })]).toEqual([text, text]);
    expect([text, renderHtml(src, { name: "X" })]).toEqual([text, text]);
    expect([text, renderSubject(src, {})]).toEqual([text, text]);
  }
});

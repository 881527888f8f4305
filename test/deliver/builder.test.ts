// One builder path for every message shape: with and without attachments the header block is written
// by the same code (same order, same boundary style), and what mailparser reads back is intact.
import { describe, expect, test } from "bun:test";
import { simpleParser } from "mailparser";
import { composeMessage, toWire, type MessageInput } from "../../src/mail/message/compose";

const base: MessageInput = {
  messageId: "0193a1b2-0000-7000-8000-000000000001@mta.example",
  date: new Date("2026-11-24T04:00:00Z"),
  from: { name: "Shop", email: "shop@brand.example" },
  to: { name: "Ann", email: "ann@inbox.example" },
  replyTo: "help@brand.example",
  subject: "Your receipt",
  html: '<p>Thanks! <img src="cid:logo@brand"></p>',
  text: "Thanks!",
  headers: { "X-Entity-Ref-ID": "r1" },
};
const headerNames = (raw: Buffer) =>
  raw
    .toString("latin1")
    .split("\r\n\r\n")[0]!
    .split("\r\n")
    .filter((l) => !/^[ \t]/.test(l))
    .map((l) => l.slice(0, l.indexOf(":")));

describe("one builder for every shape", () => {
  test("attachments: the same header order and boundary style as a plain message; parts, inline image and a non-ASCII filename survive", async () => {
    const plain = toWire(composeMessage(base));
    const withFiles = toWire(
      composeMessage({
        ...base,
        attachments: [
          { filename: "Rechnung März.pdf", content: Buffer.from("%PDF-1.4 fake").toString("base64"), contentType: "application/pdf" },
          { filename: "logo.png", content: Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]).toString("base64"), contentType: "image/png", contentId: "logo@brand" },
        ],
      }),
    );
    expect(headerNames(withFiles)).toEqual(headerNames(plain));
    expect(plain.toString()).toMatch(/Content-Type: multipart\/alternative; boundary="=_mailsvc_[0-9a-f]{24}"/);
    expect(withFiles.toString()).toMatch(/Content-Type: multipart\/mixed; boundary="=_mailsvc_m_[0-9a-f]{24}"/);
    expect(withFiles.toString()).toContain('multipart/related; type="multipart/alternative"');

    const parsed = await simpleParser(withFiles, { keepCidLinks: true } as Parameters<typeof simpleParser>[1] & {});
    expect(parsed.text?.trim()).toBe("Thanks!");
    expect(parsed.html).toContain("cid:logo@brand");
    const pdf = parsed.attachments.find((a) => a.contentType === "application/pdf")!;
    expect(pdf.filename).toBe("Rechnung März.pdf");
    expect(pdf.content.toString()).toBe("%PDF-1.4 fake");
    expect(pdf.contentDisposition).toBe("attachment");
    const logo = parsed.attachments.find((a) => a.contentType === "image/png")!;
    expect(logo.contentId).toBe("<logo@brand>");
    expect(logo.contentDisposition).toBe("inline");
    expect([...logo.content]).toEqual([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
    // Every line within SMTP's limit.
    for (const line of withFiles.toString("latin1").split("\r\n")) expect(line.length).toBeLessThanOrEqual(998);
  });
});

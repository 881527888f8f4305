// A content's skeleton (src/mail/message/skeleton.ts) must give every recipient the message the one-at-a-time
// path gives (render, decorate, MIME): same decoded HTML and text, same links reported, and a body
// that stays valid quoted-printable whose DKIM relaxed form is itself.
import { describe, expect, test } from "bun:test";
import { simpleParser } from "mailparser";
import { buildPlanned, type BuildPlan } from "../../src/mail/message/build";
import type { DecorationPlan } from "../../src/mail/tracking/decorate";
import type { ContentRow } from "../../src/mail/outbox/outbox-store";
import { Signer } from "../../src/mail/dkim/signer";
import { prepareSkeleton } from "../../src/mail/message/skeleton";
import { LinkKeys } from "../../src/mail/tracking/tracked-links";

const BASE = "https://mail.example.test";
const SKIP = ["/t/o/", "/t/c/", "/unsubscribe/", "/subscribe/", "/manage/"].map((p) => BASE + p);
const signer = new Signer();

const decoration = (over: Partial<DecorationPlan> = {}): DecorationPlan => ({
  projectId: "p1",
  footer: `<div class="footer"><a href="${BASE}/unsubscribe/tok">Unsubscribe</a></div>`,
  pixelUrl: `${BASE}/t/o/px1`,
  clickBase: `${BASE}/t/c/ctok.`,
  skipPrefixes: SKIP,
  headers: { "List-Unsubscribe": `<${BASE}/unsubscribe/tok>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" },
  linkGeneration: 0,
  ...over,
});

function contentOf(html: string, text: string | null = null): ContentRow {
  return { id: "c1", project_id: "p1", subject: "Hi {{firstName}}", html, text, from_email: "news@sender.test", from_name: "News", reply_to: null, type: "MARKETING", headers: null, attachments: null };
}

function planOf(vars: Record<string, unknown>, d: DecorationPlan | null = decoration()): BuildPlan {
  return {
    emailId: "e1",
    contentId: "c1",
    system: false,
    messageId: "e1@mailsvc.test",
    toEmail: "ann@rcpt.test",
    toName: "Ann",
    varsJson: JSON.stringify(vars),
    extraVars: { unsubscribeUrl: `${BASE}/unsubscribe/tok`, subscribeUrl: `${BASE}/subscribe/tok`, manageUrl: `${BASE}/manage/tok` },
    decoration: d,
    dkim: null,
    now: Date.UTC(2026, 10, 25),
  };
}

/** The message built one at a time (a content's first message) and from its skeleton (the next ones). */
async function bothWays(html: string, text: string | null, plan: BuildPlan) {
  const single = await buildPlanned(plan, contentOf(html, text), new LinkKeys(Buffer.alloc(32, 1)), signer);
  const shared = contentOf(html, text);
  await buildPlanned({ ...plan, emailId: "warm" }, shared, new LinkKeys(Buffer.alloc(32, 1)), signer);
  const fromSkeleton = await buildPlanned(plan, shared, new LinkKeys(Buffer.alloc(32, 1)), signer);
  return { single, fromSkeleton };
}

function bodyOf(raw: Buffer): string {
  const s = raw.toString("latin1");
  return s.slice(s.indexOf("\r\n\r\n") + 4);
}

const LONG_LINE = Array.from({ length: 120 }, (_, i) => `<span>word ${i} {{firstName}} é</span>`).join("");
const NEWSLETTER =
  `<!doctype html><html><body><table>` +
  Array.from({ length: 12 }, (_, i) => `<tr><td><h3>Section ${i} for {{ company ?? "you" }}</h3><p>Hello {{firstName ?? "there"}}, <a href="https://example.com/a/${i}?u=mail&amp;c=x">article ${i}</a>.</p></td></tr>\n`).join("") +
  `</table><p>{{email}}</p></body></html>`;

const CASES: { name: string; html: string; text?: string; vars?: Record<string, unknown>; d?: DecorationPlan | null }[] = [
  { name: "a newsletter: slots, links with entities, footer and pixel before </body>", html: NEWSLETTER },
  { name: "no </body>: the tail goes last", html: `<p>Hi {{firstName}} <a href="https://example.com/x">x</a></p>` },
  { name: "</BODY> in capitals", html: `<HTML><BODY><A HREF='https://example.com/y'>y</A> {{firstName}}</BODY></HTML>` },
  {
    name: "comments, script and style are stepped over; no-track, relative, mailto and our own links stay",
    html:
      `<!-- <a href="https://example.com/in-comment">c</a> {{firstName}} --><style>a{color:red}</style>` +
      `<script>var s = '<a href="https://example.com/in-script">';</script>` +
      `<a href="https://example.com/no" data-no-track>n</a><a href="/relative">r</a><a href="mailto:a@b.test">m</a>` +
      `<a href="${BASE}/manage/tok">manage</a><area href="https://example.com/area"> {{firstName}}</body>`,
  },
  {
    name: "hrefs with slots: tracked when they render to an http(s) URL, not when they render to our own pages",
    html: `<a href="https://example.com/p/{{ id }}?a=1&amp;b=2">p</a> <a href="{{unsubscribeUrl}}">u</a> <a href="{{ link ?? "https://fallback.test/f" }}">f</a> <a href='{{ missing }}'>m</a></body>`,
    vars: { id: "42", firstName: "Ann" },
  },
  { name: "one long line folds at 76 columns around the slots", html: LONG_LINE, vars: { firstName: "Zoë ".repeat(30) } },
  {
    name: "values with markup, non-ASCII, spaces and dots are escaped and encoded",
    html: `<p>{{firstName}} {{company}}  .dot</p>\n.<p>café 😀{{firstName}} </p>{{company}}`,
    text: `Hello {{firstName}} \n.{{company}}\n\t{{firstName}}.`,
    vars: { firstName: `<script>alert("x")</script> & 'q' `, company: "Ünïcode\r\nnew line  two spaces." },
  },
  { name: "no decoration (tracking off, transactional)", html: NEWSLETTER, d: null },
  { name: "a footer but no click tracking", html: NEWSLETTER, d: decoration({ clickBase: undefined, pixelUrl: undefined }) },
  { name: "a click base that must be escaped in an attribute", html: NEWSLETTER, d: decoration({ clickBase: `${BASE}/t/c/?a=1&b="x"` }) },
  { name: "a plain-text template of its own", html: NEWSLETTER, text: "Hi {{firstName}}, read https://example.com/{{ id }}" },
  {
    name: "list mail: a fragment sent as a document, the text part ending with the text footer",
    html: `<h1>News</h1><p>Hi {{firstName}} <a href="https://example.com/x">x</a></p>`,
    d: decoration({ document: true, textFooter: `\n\n---\nThis email was sent to ann@rcpt.test because you subscribed to it.\nUnsubscribe: ${BASE}/unsubscribe/tok\nManage preferences: ${BASE}/manage/tok\n` }),
  },
  { name: "list mail: a body that is a document already gets no second one", html: NEWSLETTER, d: decoration({ document: true, textFooter: "\n\n---\nUnsubscribe: x\n" }) },
  { name: "a long fragment line as a document", html: LONG_LINE, vars: { firstName: "Zoë ".repeat(30) }, d: decoration({ document: true }) },
];

describe("a content's skeleton", () => {
  for (const c of CASES) {
    test(c.name, async () => {
      const plan = planOf(c.vars ?? { firstName: "Ann", company: "Acme", email: "ann@rcpt.test" }, c.d === undefined ? decoration() : c.d);
      expect(prepareSkeleton(c.html, c.text ?? "x")).not.toBeNull();
      const { single, fromSkeleton } = await bothWays(c.html, c.text ?? null, plan);
      const [a, b] = await Promise.all([simpleParser(single.raw), simpleParser(fromSkeleton.raw)]);
      expect(b.html).toBe(a.html);
      expect(b.text).toBe(a.text);
      if (c.d?.document) expect(String(a.html).startsWith("<!DOCTYPE html>")).toBe(!/<html/i.test(c.html));
      if (c.d?.textFooter) expect(String(a.text).trimEnd()).toEndWith(c.d.textFooter.trim());
      expect(b.subject).toBe(a.subject!);
      expect(b.headers.get("list-unsubscribe")).toEqual(a.headers.get("list-unsubscribe"));
      expect(fromSkeleton.links).toEqual(single.links);
      const body = bodyOf(fromSkeleton.raw);
      for (const line of body.split("\r\n")) expect(line.length).toBeLessThanOrEqual(76);
      // DKIM hashes our bodies as they are (dkim.ts): no tab, double space or space before a line end.
      expect(body).not.toMatch(/\t| {2}| \r\n/);
      expect(body.split("\r\n").some((l) => l.startsWith("."))).toBe(false);
    });
  }

  test("is not prepared where a rendered value could change the markup's structure", () => {
    for (const html of [
      `<p>{{{ rawHtml }}}</p>`,
      `<a title="{{t}}" href="https://example.com/">x</a>`,
      `<a href={{url}}>x</a>`,
      `<a title={{t}}>no href, but a value could bring one</a>`,
      `<a data-no-track title={{t}} href="https://example.com/">x</a>`,
      `<{{tag}} href="https://example.com/">x</a>`,
      `<a href="https://example.com/">x</a></{{tag}}>`,
      "<p>\uE000</p>",
    ]) {
      expect(prepareSkeleton(html, "x")).toBeNull();
    }
    expect(prepareSkeleton(`<p title="{{t}}">{{t}}</p><a href="https://example.com/">x</a>`, "x")).not.toBeNull();
  });

  test("a template that falls back still builds the same message every time", async () => {
    const html = `<a title="{{firstName}}" href="https://example.com/z">z</a> {{{ firstName }}}`;
    const { single, fromSkeleton } = await bothWays(html, null, planOf({ firstName: "<b>Ann</b>" }));
    const [a, b] = await Promise.all([simpleParser(single.raw), simpleParser(fromSkeleton.raw)]);
    expect(b.html).toBe(a.html);
    expect(a.html).toContain("<b>Ann</b>");
  });
});

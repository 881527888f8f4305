import { describe, expect, test } from "bun:test";
import { compile, renderHtml, renderJson, renderSubject, renderText, TemplateSyntaxError, usesVariable } from "../../src/mail/message/render";

const contact = {
  email: "ada@example.com",
  id: "c1",
  firstName: "Ada",
  plan: "pro",
  data: { firstName: "Ada", plan: "pro", company: { name: "Analytical Engines", address: { city: "London" } }, tags: ["a", "b"] },
  unsubscribeUrl: "https://mail.example/u?t=1&x=2",
};

describe("variables", () => {
  test("{{name}}, {{ data.x }} with spaces, and dotted paths", () => {
    expect(renderHtml("Hi {{firstName}}, you are on {{ data.plan }}.", contact)).toBe("Hi Ada, you are on pro.");
    expect(renderHtml("{{ data.company.address.city }} / {{data.company.name}}", contact)).toBe("London / Analytical Engines");
    expect(renderHtml("{{email}} {{id}}", contact)).toBe("ada@example.com c1");
  });

  test("{{plan}} and {{data.plan}} both resolve whichever shape the variables have", () => {
    expect(renderHtml("{{plan}}|{{data.plan}}", { data: { plan: "pro" } })).toBe("pro|pro");
    expect(renderHtml("{{plan}}|{{data.plan}}", { plan: "pro" })).toBe("pro|pro");
    // Top level wins over data when both exist.
    expect(renderHtml("{{email}}", { email: "top@x.example", data: { email: "data@x.example" } })).toBe("top@x.example");
  });

  test("array indexes, bracket keys, numbers, booleans, arrays and objects", () => {
    const vars = { data: { "first name": "Ada", items: [{ sku: "A1" }, { sku: "B2" }], n: 0, ok: false, list: [1, 2], obj: { a: 1 } } };
    expect(renderText('{{ data["first name"] }} {{data.items.1.sku}} {{data.items[0].sku}}', vars)).toBe("Ada B2 A1");
    expect(renderText("{{data.n}} {{data.ok}} {{data.list}} {{data.obj}}", vars)).toBe('0 false 1, 2 {"a":1}');
  });

  test("missing values render empty, never 'undefined', and prototype members are not reachable", () => {
    expect(renderHtml("[{{nope}}][{{data.nope.deeper}}][{{firstName.length}}]", contact)).toBe("[][][]");
    expect(renderHtml("[{{constructor}}][{{__proto__}}][{{data.toString}}][{{email.constructor.name}}]", contact)).toBe("[][][][]");
    expect(renderHtml("[{{nullish}}]", { nullish: null })).toBe("[]");
  });
});

describe("fallbacks", () => {
  test('{{x ?? "fallback"}} when missing, null or empty; the value when present', () => {
    expect(renderHtml('Hi {{firstName ?? "there"}}', {})).toBe("Hi there");
    expect(renderHtml('Hi {{ firstName ?? "there" }}', { firstName: null })).toBe("Hi there");
    expect(renderHtml('Hi {{ firstName ?? "there" }}', { firstName: "" })).toBe("Hi there");
    expect(renderHtml('Hi {{ firstName ?? "there" }}', contact)).toBe("Hi Ada");
    expect(renderHtml("{{ n ?? 0 }} {{ n ?? 'single' }}", {})).toBe("0 single");
  });

  test("chains of fallbacks, to other variables and finally a literal", () => {
    expect(renderHtml('{{ nickname ?? firstName ?? "friend" }}', contact)).toBe("Ada");
    expect(renderHtml('{{ nickname ?? data.missing ?? "friend" }}', contact)).toBe("friend");
  });

  test("a fallback literal is escaped in HTML like a value, and may contain braces and quotes", () => {
    expect(renderHtml('{{ x ?? "<b>&\\"}}" }}', {})).toBe("&lt;b&gt;&amp;&quot;}}");
    expect(renderText('{{ x ?? "<b>}}" }}', {})).toBe("<b>}}");
  });
});

describe("escaping", () => {
  test("a <script> in a data value arrives inert in HTML bodies", () => {
    const vars = { data: { name: `<script>alert("x")</script>`, attr: `" onmouseover="alert(1)` } };
    const html = renderHtml(`<p>{{data.name}}</p><a title="{{ data.attr }}">x</a>`, vars);
    expect(html).toBe(`<p>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</p><a title="&quot; onmouseover=&quot;alert(1)">x</a>`);
    expect(html).not.toContain("<script");
    expect(html).not.toContain('" onmouseover');
  });

  test("&, quotes and backticks are escaped too; a URL in an attribute keeps working", () => {
    expect(renderHtml("{{v}}", { v: `a & b 'c' \`d\`` })).toBe("a &amp; b &#39;c&#39; &#96;d&#96;");
    expect(renderHtml('<a href="{{unsubscribeUrl}}">', contact)).toBe('<a href="https://mail.example/u?t=1&amp;x=2">');
  });

  test("{{{raw}}} inserts HTML unescaped; plain text is never escaped", () => {
    expect(renderHtml("{{{html}}}", { html: "<b>bold</b>" })).toBe("<b>bold</b>");
    expect(renderHtml('{{{ html ?? "<i>none</i>" }}}', {})).toBe("<i>none</i>");
    expect(renderText("{{html}} & {{{html}}}", { html: "<b>x</b>" })).toBe("<b>x</b> & <b>x</b>");
  });

  test("values are inserted once: a value that looks like a template is not rendered again", () => {
    expect(renderHtml("{{v}}", { v: "{{secret}}", secret: "leak" })).toBe("{{secret}}");
    expect(renderHtml("{{{v}}}", { v: "{{secret}}", secret: "leak" })).toBe("{{secret}}");
  });

  test("a backslash before {{ prints the braces", () => {
    expect(renderHtml("Use \\{{name}} for names, {{firstName}}", contact)).toBe("Use {{name}} for names, Ada");
  });
});

describe("JSON bodies", () => {
  test("values stay inside their JSON string; raw inserts as is", () => {
    const vars = { name: 'Ada "the first"\\\n', n: 3, obj: { a: [1, 2] } };
    const out = renderJson('{"name":"{{name}}","n":{{{n}}},"obj":{{{obj}}},"missing":"{{nope}}"}', vars);
    expect(JSON.parse(out)).toEqual({ name: vars.name, n: 3, obj: { a: [1, 2] }, missing: "" });
  });
});

describe("subjects", () => {
  test("never HTML-escaped", () => {
    expect(renderSubject("Tom & Jerry <3 {{v}}", { v: `"quoted" & <tag>` })).toBe(`Tom & Jerry <3 "quoted" & <tag>`);
  });

  test("CR/LF from values (header injection attempts) are stripped", () => {
    const evil = { name: "Ada\r\nBcc: victim@example.com", other: "x\nContent-Type: text/html\r\n\r\n<b>body</b>" };
    for (const s of [renderSubject("Hi {{name}}", evil), renderSubject("{{{other}}}", evil), renderSubject("{{ missing ?? other }}", evil)]) {
      expect(s).not.toMatch(/[\r\n]/);
    }
    expect(renderSubject("Hi {{name}}", evil)).toBe("Hi Ada Bcc: victim@example.com");
  });

  test("line breaks in the template itself, Unicode line separators and control characters are stripped too", () => {
    expect(renderSubject("a\r\nb\u2028c\u0000d\te", {})).toBe("a b cd\te");
  });
});

describe("syntax errors", () => {
  const err = (src: string) => {
    try {
      compile(src);
    } catch (e) {
      if (e instanceof TemplateSyntaxError) return e;
      throw e;
    }
    throw new Error(`no syntax error in ${JSON.stringify(src)}`);
  };

  test("unclosed tags give the position, line and column of the opener", () => {
    const e = err("<p>Hello</p>\n<p>{{ firstName </p>");
    expect(e.position).toBe(16);
    expect(e.line).toBe(2);
    expect(e.column).toBe(4);
    expect(e.message).toContain("line 2, column 4");
    expect(e.message).toContain("position 16");
  });

  test("other mistakes are reported where they are", () => {
    expect(err("{{}}").reason).toContain("Empty");
    expect(err("{{ a b }}").position).toBe(5);
    expect(err('{{ a ?? "x }}').reason).toContain("Unterminated string");
    expect(err("{{ a. }}").reason).toContain("name after");
    expect(err("{{{ raw }}").reason).toContain("}}}");
    expect(err("{{#if x}}y{{/if}}").reason).toContain("not supported");
    expect(err("{{ a ?? }}").position).toBe(8);
    expect(err("{{ 'a' ?? }}")).toBeInstanceOf(TemplateSyntaxError);
  });

  test("text without tags, stray closing braces and single braces are fine", () => {
    for (const ok of ["", "plain", "a } b }} c", "{ single }", "<style>p{color:red}</style>", "{{a}}}"]) expect(() => compile(ok)).not.toThrow();
  });
});

describe("compiled templates", () => {
  test("compile is cached by source and lists the variables used", () => {
    const a = compile("Hi {{ firstName ?? name }} {{ data.plan }} {{unsubscribeUrl}}");
    expect(compile("Hi {{ firstName ?? name }} {{ data.plan }} {{unsubscribeUrl}}")).toBe(a);
    expect([...a.variables].sort()).toEqual(["data.plan", "firstName", "name", "unsubscribeUrl"]);
    expect(usesVariable(a, "unsubscribeUrl")).toBe(true);
    expect(usesVariable("<p>no link</p>", "unsubscribeUrl")).toBe(false);
    expect(renderHtml(a, contact)).toBe("Hi Ada pro https://mail.example/u?t=1&amp;x=2");
  });
});

// The server side of the dashboard, without a browser: the page and its assets, the links of account
// emails, the origin check on cookie writes and the template preview endpoint.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

let srv: TestServer;
let acc: Account;

beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
});
afterAll(() => srv.close());

test("GET / is the app shell; assets are hashed, gzipped on request, cached for a year; unknown assets 404", async () => {
  const res = await fetch(srv.url + "/");
  expect(res.status).toBe(200);
  expect(res.headers.get("cache-control")).toBe("no-cache");
  expect(res.headers.get("x-frame-options")).toBe("DENY");
  const html = await res.text();
  expect(html).toContain('<div id="root"></div>');
  const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
  expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
  for (const a of assets) {
    const r = await fetch(srv.url + a, { headers: { "accept-encoding": "gzip" }, decompress: false } as RequestInit);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-encoding")).toBe("gzip");
    expect(r.headers.get("cache-control")).toContain("max-age=31536000");
    const again = await fetch(srv.url + a, { headers: { "if-none-match": r.headers.get("etag")! } });
    expect(again.status).toBe(304);
  }
  expect((await fetch(srv.url + "/assets/nope.js")).status).toBe(404);
});

test("the links of account emails open the app's pages with their token", async () => {
  const r = await fetch(srv.url + "/auth/reset-password?token=abc%2Bdef", { redirect: "manual" });
  expect(r.status).toBe(302);
  expect(r.headers.get("location")).toBe("/?token=abc%2Bdef#/reset-password");
  const v = await fetch(srv.url + "/auth/verify-email?token=t1", { redirect: "manual" });
  expect(v.headers.get("location")).toBe("/?token=t1#/verify-email");
});

test("a cookie write from another origin is refused; the same origin passes", async () => {
  const headers = { "x-project-id": acc.projectId, origin: "https://evil.example" };
  const bad = await srv.api("/contacts", { cookie: acc.cookie, headers, body: { email: "x@y.example" } });
  expect(bad.status).toBe(403);
  expect((await srv.api("/contacts", { key: acc.secretKey })).body.total).toBe(0);
  const noOrigin = { "x-project-id": acc.projectId, "sec-fetch-site": "cross-site" };
  expect((await srv.api("/contacts", { cookie: acc.cookie, headers: noOrigin, body: { email: "x@y.example" } })).status).toBe(403);
  const ok = await srv.api("/contacts", { cookie: acc.cookie, headers: { ...headers, origin: srv.url }, body: { email: "x@y.example" } });
  expect(ok.status).toBe(201);
});

test("POST /templates/preview renders with the sample data like a send (escaped), stores nothing", async () => {
  const r = await srv.api("/templates/preview", {
    key: acc.secretKey,
    body: { subject: "Hi {{firstName}}\r\n", body: '<p>{{ firstName ?? "there" }} {{plan}} {{{raw}}} {{email}}</p>', email: "jane@x.example", data: { firstName: "Jane", plan: "<b>", raw: "<i>ok</i>" } },
  });
  expect(r.status).toBe(200);
  expect(r.body.subject).toBe("Hi Jane ");
  expect(r.body.html).toBe("<p>Jane &lt;b&gt; <i>ok</i> jane@x.example</p>");
  expect(r.body.variables).toContain("firstName");
  expect((await srv.api("/templates", { key: acc.secretKey })).body.total).toBe(0);

  const bad = await srv.api("/templates/preview", { key: acc.secretKey, body: { body: "<p>{{ unclosed </p>" } });
  expect(bad.status).toBe(422);
  expect(bad.body.error.errors[0].field).toBe("body");
  expect((await srv.api("/templates/preview", { body: { body: "x" } })).status).toBe(401);
});

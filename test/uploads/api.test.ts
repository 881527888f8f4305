// Black-box: image uploads over the API (content sniffing, the size limit, the cursor list, DELETE, sessions and
// keys). Written from api-spec.md, decisions.md ("Contacts, data, import") and docs/api.md (the API guide); never
// from the code. Moved here from blackbox/analytics-billing.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { expectCursorPage, expectEnvelope, expectOk, newProject, NO_SUCH_ID } from "../blackbox/support";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";
import { IMAGES } from "./support";

let srv: TestServer;
let acc: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api, "BB uploads");
});
afterAll(() => srv?.close());

const asSession = (a: Account) => ({ cookie: a.cookie, headers: { "x-project-id": a.projectId } });
const [PNG, GIF, WEBP, JPEG] = [IMAGES.png.bytes, IMAGES.gif.bytes, IMAGES.webp.bytes, IMAGES.jpeg.bytes];

describe("uploads", () => {
  let u: Account;
  const upload = (bytes: Uint8Array<ArrayBuffer>, name = "image.bin", type = "application/octet-stream", who: Account = u, viaSession = false) => {
    const form = new FormData();
    form.append("file", new Blob([bytes], { type }), name);
    const auth = viaSession ? asSession(who) : { key: who.secretKey };
    return srv.api("/uploads/image", { method: "POST", raw: form, ...auth });
  };

  beforeAll(async () => {
    u = await newProject(srv.api, acc, "Uploads");
  });

  test("png, jpeg, gif, webp by their bytes: 201 { id, url, contentType, size }; url is public with content type and a long cache", async () => {
    for (const [bytes, type, ext] of [
      [PNG, "image/png", "png"],
      [JPEG, "image/jpeg", "jpg"],
      [GIF, "image/gif", "gif"],
      [WEBP, "image/webp", "webp"],
    ] as const) {
      const res = await upload(bytes, "whatever.dat");
      expect(res.status).toBe(201);
      for (const k of ["id", "url", "contentType", "size"]) expect(res.body).toHaveProperty(k);
      expect(res.body.contentType).toBe(type);
      expect(res.body.size).toBe(bytes.length);
      expect(res.body.url).toBe(`${srv.ctx.config.publicUrl}/uploads/${res.body.id}.${ext}`);
      const pub = await fetch(res.body.url);
      expect(pub.status).toBe(200);
      expect(pub.headers.get("content-type")).toBe(type);
      const cc = pub.headers.get("cache-control") ?? "";
      expect(cc).toContain("public");
      expect(Number(/max-age=(\d+)/.exec(cc)?.[1])).toBeGreaterThanOrEqual(30 * 86400);
      expect(new Uint8Array(await pub.arrayBuffer())).toEqual(bytes);
      expect(pub.headers.get("etag")).toBeTruthy();
    }
  });

  test("not an image by its bytes is 422, whatever its name and declared type; no file is 422", async () => {
    expectEnvelope(await upload(new TextEncoder().encode("<svg xmlns='http://www.w3.org/2000/svg'></svg>"), "x.svg", "image/svg+xml"), 422, "VALIDATION_ERROR");
    expectEnvelope(await upload(new TextEncoder().encode("just text, not a picture"), "fake.png", "image/png"), 422, "VALIDATION_ERROR");
    const form = new FormData();
    form.append("other", "x");
    expectEnvelope(await srv.api("/uploads/image", { method: "POST", raw: form, key: u.secretKey }), 422, "VALIDATION_ERROR");
  });

  test("5 MB is accepted, a byte more is 413 PAYLOAD_TOO_LARGE", async () => {
    const max = new Uint8Array(5 * 1024 * 1024);
    max.set(PNG);
    const ok = await upload(max, "max.png", "image/png");
    expect(ok.status).toBe(201);
    expect(ok.body.size).toBe(max.length);
    expectOk(await srv.api(`/uploads/${ok.body.id}`, { method: "DELETE", key: u.secretKey }));
    const big = new Uint8Array(5 * 1024 * 1024 + 1);
    big.set(PNG);
    expectEnvelope(await upload(big, "big.png", "image/png"), 413, "PAYLOAD_TOO_LARGE");
  });

  test("GET /uploads is a cursor list of this project's uploads; DELETE removes one (its URL stops answering)", async () => {
    const made = await upload(PNG, "list.png", "image/png");
    expect(made.status).toBe(201);
    const list = await srv.api("/uploads", { key: u.secretKey });
    expectCursorPage(list);
    expect(list.body.total).toBe(5);
    expect(list.body.data.find((x: any) => x.id === made.body.id)).toMatchObject({ id: made.body.id, url: made.body.url, contentType: "image/png", size: PNG.length });
    const page = await srv.api("/uploads?limit=2", { key: u.secretKey });
    expectCursorPage(page);
    expect(page.body.data.length).toBe(2);
    expect(page.body.hasMore).toBe(true);
    const next = await srv.api(`/uploads?limit=2&cursor=${encodeURIComponent(page.body.cursor)}`, { key: u.secretKey });
    expectCursorPage(next);
    expect(next.body.total).toBe(0);
    const ids = [...page.body.data, ...next.body.data].map((x: any) => x.id);
    expect(new Set(ids).size).toBe(4);

    // Another project neither lists nor deletes it.
    const other = await newProject(srv.api, acc, "Uploads other");
    expect((await srv.api("/uploads", { key: other.secretKey })).body.data).toEqual([]);
    expectEnvelope(await srv.api(`/uploads/${made.body.id}`, { method: "DELETE", key: other.secretKey }), 404, "NOT_FOUND");

    expectOk(await srv.api(`/uploads/${made.body.id}`, { method: "DELETE", key: u.secretKey }));
    expect((await fetch(made.body.url)).status).toBe(404);
    expectEnvelope(await srv.api(`/uploads/${made.body.id}`, { method: "DELETE", key: u.secretKey }), 404, "NOT_FOUND");
    expect((await srv.api("/uploads", { key: u.secretKey })).body.total).toBe(4);
    expect((await fetch(`${srv.ctx.config.publicUrl}/uploads/${NO_SUCH_ID}.png`)).status).toBe(404);
  });

  test("a member's session with X-Project-Id uploads; the public key is 401 INVALID_API_KEY", async () => {
    const res = await upload(GIF, "s.gif", "image/gif", u, true);
    expect(res.status).toBe(201);
    expect(res.body.id).toBeDefined();
    expectEnvelope(await srv.api("/uploads", { key: u.publicKey }), 401, "INVALID_API_KEY");
    const form = new FormData();
    form.append("file", new Blob([PNG], { type: "image/png" }), "a.png");
    expectEnvelope(await srv.api("/uploads/image", { method: "POST", raw: form, key: u.publicKey }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api(`/uploads/${res.body.id}`, { method: "DELETE", key: u.publicKey }), 401, "INVALID_API_KEY");
  });
});

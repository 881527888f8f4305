// POST /uploads/image, GET /uploads, DELETE /uploads/:id and the public GET /uploads/<id>.<ext>.
import { TEST_ENGINE } from "../support/postgres";
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";

setDefaultTimeout(30_000);
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { expectEnvelope, UUID } from "../blackbox/support";
import { createAccount, startServer, type Account, type TestServer } from "../support/server";

import { IMAGES } from "./support";

let srv: TestServer;
let acc: Account;
let other: Account;
beforeAll(async () => {
  srv = await startServer();
  acc = await createAccount(srv.api);
  other = await createAccount(srv.api);
}, 30_000);
afterAll(() => srv.close());

function form(bytes: Uint8Array<ArrayBuffer>, name: string, type = "application/octet-stream", field = "file") {
  const f = new FormData();
  f.append(field, new File([bytes], name, { type }));
  return f;
}
const upload = (a: Account, body: FormData) => srv.api("/uploads/image", { method: "POST", key: a.secretKey, raw: body });

describe("uploads", () => {
  test("png, jpeg, gif and webp are recognised by their bytes (whatever the name says) and served publicly", async () => {
    for (const [name, img] of Object.entries(IMAGES)) {
      // A misleading name and type on purpose: only the bytes count.
      const r = await upload(acc, form(img.bytes, `${name}.txt`, "text/plain"));
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ contentType: img.type, size: img.bytes.byteLength });
      expect(r.body.id).toMatch(UUID);
      expect(r.body.url).toBe(`${srv.ctx.config.publicUrl}/uploads/${r.body.id}.${img.ext}`);
      const pub = await fetch(r.body.url);
      expect(pub.status).toBe(200);
      expect(pub.headers.get("content-type")).toBe(img.type);
      expect(pub.headers.get("cache-control")).toContain("max-age=31536000");
      expect(new Uint8Array(await pub.arrayBuffer())).toEqual(img.bytes);
      const again = await fetch(r.body.url, { headers: { "if-none-match": pub.headers.get("etag")! } });
      expect(again.status).toBe(304);
    }
  });

  test("a renamed text file is 422; a missing file 422; over 5 MB is 413; nothing is stored", async () => {
    const before = (await srv.api("/uploads", { key: acc.secretKey })).body.total;
    const text = new TextEncoder().encode("just some text, not an image\n".repeat(20));
    expectEnvelope(await upload(acc, form(text, "photo.png", "image/png")), 422, "VALIDATION_ERROR");
    expectEnvelope(await upload(acc, form(IMAGES.png.bytes, "x.png", "image/png", "image")), 422, "VALIDATION_ERROR");
    const svg = new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    expectEnvelope(await upload(acc, form(svg, "x.svg", "image/svg+xml")), 422, "VALIDATION_ERROR");
    const big = new Uint8Array(5 * 1024 * 1024 + 1);
    big.set(IMAGES.png.bytes);
    expectEnvelope(await upload(acc, form(big, "big.png", "image/png")), 413, "PAYLOAD_TOO_LARGE");
    const exact = new Uint8Array(5 * 1024 * 1024);
    exact.set(IMAGES.png.bytes);
    expect((await upload(acc, form(exact, "max.png", "image/png"))).status).toBe(201);
    expect((await srv.api("/uploads", { key: acc.secretKey })).body.total).toBe(before + 1);
  });

  test("the list is a cursor list of the project's uploads; delete removes the public URL; other tenants see nothing", async () => {
    const mine = await srv.api("/uploads?limit=2", { key: acc.secretKey });
    expect(mine.status).toBe(200);
    expect(mine.body.data).toHaveLength(2);
    expect(mine.body.hasMore).toBe(true);
    expect(mine.body.total).toBeGreaterThanOrEqual(5);
    const next = await srv.api(`/uploads?limit=100&cursor=${mine.body.cursor}`, { key: acc.secretKey });
    expect(next.body.total).toBe(0);
    const ids = [...mine.body.data, ...next.body.data].map((u: any) => u.id);
    expect(new Set(ids).size).toBe(mine.body.total);

    const theirs = await srv.api("/uploads", { key: other.secretKey });
    expect(theirs.body).toMatchObject({ data: [], total: 0, hasMore: false });
    const target = mine.body.data[0];
    expectEnvelope(await srv.api(`/uploads/${target.id}`, { method: "DELETE", key: other.secretKey }), 404, "NOT_FOUND");
    expect((await fetch(target.url)).status).toBe(200);

    // A session with X-Project-Id works like the key.
    const viaSession = await srv.api("/uploads", { cookie: acc.cookie, headers: { "x-project-id": acc.projectId } });
    expect(viaSession.body.total).toBe(mine.body.total);

    expect((await srv.api(`/uploads/${target.id}`, { method: "DELETE", key: acc.secretKey })).status).toBe(200);
    expect((await fetch(target.url)).status).toBe(404);
    expectEnvelope(await srv.api(`/uploads/${target.id}`, { method: "DELETE", key: acc.secretKey }), 404, "NOT_FOUND");
    expect((await srv.api("/uploads/not-an-id.png")).status).toBe(404);
    expect((await srv.api(`/uploads/${target.id}.exe`)).status).toBe(404);
  });

  test("uploads need the secret key (public key and no key refused)", async () => {
    expectEnvelope(await srv.api("/uploads/image", { method: "POST", key: acc.publicKey, raw: form(IMAGES.png.bytes, "a.png") }), 401, "INVALID_API_KEY");
    expectEnvelope(await srv.api("/uploads/image", { method: "POST", raw: form(IMAGES.png.bytes, "a.png") }), 401);
    expectEnvelope(await srv.api("/uploads"), 401);
  });

  // `backup` copies the SQLite file; on PostgreSQL uploads move with `mailsvc copy` (test/data-layer/copy-roundtrip).
  test.skipIf(TEST_ENGINE === "postgres")("uploads survive `mailsvc backup`: the copy serves the same bytes", async () => {
    const r = await upload(acc, form(IMAGES.gif.bytes, "keep.gif", "image/gif"));
    const out = join(srv.dir, "backup.db");
    const p = Bun.spawnSync([process.execPath, join(import.meta.dir, "../../src/main.ts"), "backup", out], { env: { ...process.env, MAILSVC_DB: srv.dbPath } });
    expect(p.exitCode).toBe(0);
    const copy = new Database(out, { readonly: true });
    const row = copy.query<{ data: Uint8Array; content_type: string }, [string]>("SELECT data, content_type FROM uploads WHERE id = ?").get(r.body.id);
    copy.close();
    expect(row?.content_type).toBe("image/gif");
    const restored = await startServer({ dbPath: out });
    try {
      const res = await fetch(`${restored.url}/uploads/${r.body.id}.gif`);
      expect(res.status).toBe(200);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(IMAGES.gif.bytes);
    } finally {
      await restored.close();
    }
  });
});

import { succeeded } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { notFound, validationError } from "../../http/errors";
import { parseCursorParams } from "../../http/pagination";
import * as svc from "./service";

const FILE = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.(png|jpg|gif|webp)$/i;

export function uploadRoutes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/uploads/image",
      async ({ auth, body, set }) => {
        const raw = body && typeof body === "object" ? (body as Record<string, unknown>).file : undefined;
        const file = Array.isArray(raw) ? raw[0] : raw;
        if (!(file instanceof Blob)) {
          throw validationError([
            { field: "file", message: "Required: an image in the multipart/form-data field `file`", code: "invalid_type", received: file === undefined ? "undefined" : typeof file },
          ]);
        }
        const up = await svc.createUpload(ctx, auth.projectId, file);
        set.status = 201;
        return up;
      },
      { auth: "secret" },
    )
    .get("/uploads", ({ auth, query }) => svc.listUploads(ctx, auth.projectId, parseCursorParams(query)), { auth: "secret" })
    .delete("/uploads/:id", ({ auth, params }) => succeeded(svc.deleteUpload(ctx, auth.projectId, params.id)), { auth: "secret", params: t.Object({ id: t.String() }) })
    // Public: the URL is the capability (a UUIDv7 with 74 random bits); immutable, cached for a year.
    .get("/uploads/:file", async ({ params, request }) => {
      const m = FILE.exec(params.file);
      if (!m) throw notFound("Upload");
      const ext = m[2]!.toLowerCase();
      const row = await svc.readUpload(ctx, m[1]!.toLowerCase(), ext);
      if (!row) throw notFound("Upload");
      const etag = `"${m[1]!.toLowerCase()}"`;
      const headers = {
        "content-type": row.content_type,
        "cache-control": "public, max-age=31536000, immutable",
        etag,
        "last-modified": new Date(row.created_at).toUTCString(),
        "x-content-type-options": "nosniff",
      };
      if (request.headers.get("if-none-match") === etag) return new Response(null, { status: 304, headers });
      return new Response(row.data as Uint8Array<ArrayBuffer>, { headers: { ...headers, "content-length": String(row.size) } });
    });
}

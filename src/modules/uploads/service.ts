// Image uploads for template bodies: stored in the database (the one-file backup holds them), the
// type recognised from the bytes (file-type), served publicly at <MAILSVC_PUBLIC_URL>/uploads/<id>.<ext>.
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { cursorPage, type CursorParams } from "../../http/pagination";
import { notFound, payloadTooLarge, validationError } from "../../http/errors";

export const MAX_UPLOAD_BYTES = 5 * 1024 * 1024;

/** The image types accepted, by the MIME type file-type reports, with the extension of the URL. */
const ACCEPTED: Record<string, string> = { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp" };

export interface UploadView {
  id: string;
  url: string;
  contentType: string;
  size: number;
  filename: string | null;
  createdAt: string;
}

type Row = { id: string; content_type: string; ext: string; size: number; filename: string | null; created_at: number };

export function viewUpload(ctx: AppContext, r: Row): UploadView {
  return { id: r.id, url: `${ctx.config.publicUrl}/uploads/${r.id}.${r.ext}`, contentType: r.content_type, size: r.size, filename: r.filename, createdAt: iso(r.created_at)! };
}

export async function createUpload(ctx: AppContext, projectId: string, file: Blob): Promise<UploadView> {
  if (file.size > MAX_UPLOAD_BYTES) throw payloadTooLarge(`The image must be at most 5 MB (got ${file.size} bytes)`);
  if (file.size === 0) throw validationError([{ field: "file", message: "The file is empty", code: "too_small" }]);
  const bytes = new Uint8Array(await file.arrayBuffer());
  // Loaded on the first upload (~40 ms of start-up otherwise).
  const { fileTypeFromBuffer } = await import("file-type");
  const type = await fileTypeFromBuffer(bytes);
  const ext = type ? ACCEPTED[type.mime] : undefined;
  if (!type || !ext) {
    throw validationError([
      { field: "file", message: "Not a PNG, JPEG, GIF or WebP image (the type is read from the file's bytes)", code: "invalid_type", received: type?.mime ?? "unknown" },
    ]);
  }
  const row = {
    id: Bun.randomUUIDv7(),
    project_id: projectId,
    filename: file instanceof File && file.name ? file.name.slice(0, 255) : null,
    content_type: type.mime,
    ext,
    size: bytes.byteLength,
    data: bytes,
    created_at: ctx.clock.now(),
  };
  await ctx.db.insertInto("uploads").values(row).execute();
  return viewUpload(ctx, row);
}

export async function listUploads(ctx: AppContext, projectId: string, page: CursorParams) {
  let q = ctx.db
    .selectFrom("uploads")
    .select(["id", "content_type", "ext", "size", "filename", "created_at"])
    .where("project_id", "=", projectId)
    .orderBy("id", "desc")
    .limit(page.limit + 1);
  if (page.after) q = q.where("id", "<", page.after.id);
  const rows = await q.execute();
  const total = page.isFirstPage
    ? Number((await ctx.db.selectFrom("uploads").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow()).n)
    : 0;
  return cursorPage(rows, page, { total: () => total, sortValue: (r) => r.id, id: (r) => r.id, map: (r) => viewUpload(ctx, r) });
}

export async function deleteUpload(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const r = await ctx.db.deleteFrom("uploads").where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
  if (!Number(r.numDeletedRows)) throw notFound("Upload");
}

/** The stored bytes for the public URL (no key): BLOB straight into the response, no base64. */
export async function readUpload(ctx: AppContext, id: string, ext: string) {
  return ctx.db.selectFrom("uploads").select(["data", "content_type", "size", "created_at"]).where("id", "=", id).where("ext", "=", ext).executeTakeFirst();
}

export async function uploadCount(ctx: AppContext, projectId: string) {
  const r = await ctx.db.selectFrom("uploads").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow();
  return { uploads: Number(r.n) };
}

import { accepted, optionalStrings } from "../../http/replies";
import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { BareError, badRequest, payloadTooLarge, validationError } from "../../http/errors";
import { parseCursorParams, parseLimit, pick } from "../../http/pagination";
import { bulkPending, MAX_BULK_IDS, startBulk, type BulkAction } from "./bulk";
import { importResult, MAX_IMPORT_BYTES, startImport } from "./import";
import { JOB_TYPES, jobStatus } from "./jobs";
import * as svc from "./service";

const IdParams = t.Object({ id: t.String() });
/** The options of a route on one id with secret auth (a new object each time: Elysia keeps and changes the options it is given). */
const secretById = () => ({ auth: "secret" as const, params: IdParams });
const FieldParams = t.Object({ field: t.String() });
const JobParams = t.Object({ jobId: t.String() });

const ListQuery = optionalStrings("limit", "cursor", "search", "subscribed", "sort", "dir");

const ContactBody = t.Object({
  email: t.Optional(t.String({ maxLength: 320 })),
  subscribed: t.Optional(t.Boolean()),
  data: t.Optional(t.Unknown()),
});

/** POST /contacts: a null email counts as missing (the bare 400). */
const UpsertBody = t.Object({
  email: t.Optional(t.Union([t.String({ maxLength: 320 }), t.Null()])),
  subscribed: t.Optional(t.Boolean()),
  data: t.Optional(t.Unknown()),
});

const BulkBody = t.Object({
  contactIds: t.Array(t.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: MAX_BULK_IDS }),
});

/** `subscribed` query: true/false (1/0); empty or absent means both. */
function parseBoolQuery(raw: string | undefined, name: string): boolean | undefined {
  if (raw === undefined || raw === "") return undefined;
  const v = raw.toLowerCase();
  if (v === "true" || v === "1") return true;
  if (v === "false" || v === "0") return false;
  throw badRequest(`${name} must be true or false`, { details: { [name]: raw } });
}

/**
 * The `file` field of a multipart upload (Elysia has parsed the body, within the server's global
 * body cap); above 5 MB it is 413 PAYLOAD_TOO_LARGE, a missing file 422.
 */
export async function readCsvUpload(body: unknown): Promise<{ name: string | null; content: string; size: number }> {
  const file = body && typeof body === "object" ? (body as Record<string, unknown>).file : undefined;
  const blob = Array.isArray(file) ? file[0] : file;
  if (!(blob instanceof Blob)) {
    throw validationError([
      { field: "file", message: "Required: a CSV file in the multipart/form-data field `file`", code: "invalid_type", received: blob === undefined ? "undefined" : typeof blob },
    ]);
  }
  if (blob.size > MAX_IMPORT_BYTES) throw payloadTooLarge(`The CSV file must be at most ${MAX_IMPORT_BYTES / 1024 / 1024} MB (got ${blob.size} bytes)`);
  return { name: blob instanceof File ? blob.name || null : null, content: await blob.text(), size: blob.size };
}

export function contactRoutes(ctx: AppContext) {
  const bulk = (action: BulkAction) =>
    async ({ auth, body, set }: { auth: { projectId: string }; body: { contactIds: string[] }; set: { status?: number | string } }) => {
      const jobId = await startBulk(ctx, auth.projectId, action, body.contactIds);
      set.status = 202;
      return { jobId };
    };

  return new Elysia()
    .use(authPlugin(ctx))
    .get(
      "/contacts",
      ({ auth, query }) =>
        svc.listContacts(ctx, auth.projectId, {
          search: query.search,
          subscribed: parseBoolQuery(query.subscribed, "subscribed"),
          sort: pick(query.sort, ["createdAt", "email"] as const, "createdAt"),
          dir: pick(query.dir, ["asc", "desc"] as const, "desc"),
          page: parseCursorParams(query),
        }),
      { auth: "secret", query: ListQuery },
    )
    .post(
      "/contacts",
      async ({ auth, body, set }) => {
        if (!body || body.email === undefined || body.email === null || body.email.trim() === "") throw new BareError(400, "email is required");
        const email = svc.requireValidEmail(body.email);
        const data = svc.requireData(body.data);
        const r = await svc.createOrUpdate(ctx, auth.projectId, { email, subscribed: body.subscribed, data });
        set.status = r.isNew ? 201 : 200;
        return r.contact;
      },
      { auth: "secret", body: t.Optional(UpsertBody) },
    )
    .post(
      "/contacts/lookup",
      ({ auth, body }) => svc.lookup(ctx, auth.projectId, body.emails),
      // Any string: one that cannot be an address (too long included) is simply not found (docs/api.md "Contacts and events").
      { auth: "secret", body: t.Object({ emails: t.Array(t.String(), { maxItems: 500 }) }) },
    )
    .get("/contacts/fields", ({ auth }) => svc.listFields(ctx, auth.projectId), { auth: "secret" })
    .get(
      "/contacts/fields/:field/values",
      ({ auth, params, query }) => svc.fieldValues(ctx, auth.projectId, params.field, parseLimit(query.limit, 100, 1000)),
      { auth: "secret", params: FieldParams, query: t.Object({ limit: t.Optional(t.String()) }) },
    )
    .get("/contacts/fields/:field/usage", ({ auth, params }) => svc.fieldUsage(ctx, auth.projectId, params.field), {
      auth: "secret",
      params: FieldParams,
    })
    .delete("/contacts/fields/:field", ({ auth, params }) => svc.deleteField(ctx, auth.projectId, params.field), {
      auth: "secret",
      params: FieldParams,
    })
    .post("/contacts/import", async ({ auth, body, set }) => accepted(set, startImport(ctx, auth.projectId, await readCsvUpload(body))), { auth: "secret" })
    .get(
      "/contacts/import/:jobId",
      ({ auth, params }) =>
        jobStatus(ctx, auth.projectId, params.jobId, [JOB_TYPES.import], (row) => importResult(row.checkpoint ? JSON.parse(row.checkpoint) : null)),
      { auth: "secret", params: JobParams },
    )
    .post("/contacts/bulk-subscribe", bulk("bulk-subscribe"), { auth: "secret", body: BulkBody })
    .post("/contacts/bulk-unsubscribe", bulk("bulk-unsubscribe"), { auth: "secret", body: BulkBody })
    .post("/contacts/bulk-delete", bulk("bulk-delete"), { auth: "secret", body: BulkBody })
    .get(
      "/contacts/bulk/:jobId",
      ({ auth, params }) =>
        jobStatus(
          ctx,
          auth.projectId,
          params.jobId,
          [JOB_TYPES["bulk-subscribe"], JOB_TYPES["bulk-unsubscribe"], JOB_TYPES["bulk-delete"]],
          (row) => bulkPending(row.payload),
        ),
      { auth: "secret", params: JobParams },
    )
    .get("/contacts/:id", ({ auth, params }) => svc.getContact(ctx, auth.projectId, params.id), secretById())
    .patch(
      "/contacts/:id",
      ({ auth, params, body }) => {
        const email = body.email === undefined ? undefined : svc.requireValidEmail(body.email);
        const data = svc.requireData(body.data);
        return svc.updateContact(ctx, auth.projectId, params.id, { email, subscribed: body.subscribed, data });
      },
      { ...secretById(), body: ContactBody },
    )
    .delete(
      "/contacts/:id",
      async ({ auth, params, set }) => {
        await svc.deleteContact(ctx, auth.projectId, params.id);
        set.status = 204;
        return "";
      },
      secretById(),
    );
}

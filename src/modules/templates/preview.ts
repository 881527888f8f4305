/**
 * POST /templates/preview: renders a subject and body with sample data through the same renderer
 * as real sends (src/mail/message/render.ts), for the dashboard's live preview. Nothing is stored or sent.
 */
import { t } from "elysia";
import { dataErrors } from "../../audience/data-rules";
import type { AppContext } from "../../context";
import { validationError } from "../../http/errors";
import { compile, renderHtml, RenderTooLargeError, renderSubject } from "../../mail/message/render";
import { assertTemplateSyntax } from "./service";

export const PreviewBody = t.Object({
  subject: t.Optional(t.String({ maxLength: 998 })),
  body: t.String({ maxLength: 2_000_000 }),
  /** Sample contact: `email` and `data` as a contact would have them. */
  email: t.Optional(t.String({ maxLength: 320 })),
  data: t.Optional(t.Record(t.String(), t.Unknown())),
});

/**
 * The most a preview renders: twice the longest body. A body repeating a large variable (a 64 KB
 * value 100,000 times) is refused instead of building gigabytes.
 */
export const MAX_PREVIEW_CHARS = 4_000_000;

export function previewTemplate(ctx: AppContext, input: typeof PreviewBody.static) {
  // The same `data` rules as /v1/send: an object (422 for a string, an array, a number), at most
  // 256 keys, 16 levels and 64 KB; never spread as it comes (a string's spread is one key per character).
  const errors = dataErrors(input.data);
  if (errors.length) throw validationError(errors);
  assertTemplateSyntax({ subject: input.subject, body: input.body });
  const data = input.data ?? {};
  const base = ctx.config.publicUrl;
  const vars = {
    ...data,
    data,
    email: input.email ?? "jane@example.com",
    id: "00000000-0000-7000-8000-000000000000",
    unsubscribeUrl: `${base}/#preview-unsubscribe`,
    subscribeUrl: `${base}/#preview-subscribe`,
    manageUrl: `${base}/#preview-manage`,
  };
  const body = compile(input.body);
  try {
    return {
      subject: input.subject === undefined ? "" : renderSubject(input.subject, vars),
      html: renderHtml(body, vars, MAX_PREVIEW_CHARS),
      variables: body.variables,
    };
  } catch (e) {
    if (!(e instanceof RenderTooLargeError)) throw e;
    throw validationError([{ field: "body", message: `The rendered preview would be longer than ${MAX_PREVIEW_CHARS} characters`, code: "too_big" }]);
  }
}

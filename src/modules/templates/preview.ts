/**
 * POST /templates/preview: renders a subject and body with sample data through the same renderer
 * as real sends (src/mail/render.ts), for the dashboard's live preview. Nothing is stored or sent.
 */
import { t } from "elysia";
import type { AppContext } from "../../context";
import { compile, renderHtml, renderSubject } from "../../mail/render";
import { assertTemplateSyntax } from "./service";

export const PreviewBody = t.Object({
  subject: t.Optional(t.String({ maxLength: 998 })),
  body: t.String({ maxLength: 2_000_000 }),
  /** Sample contact: `email` and `data` as a contact would have them. */
  email: t.Optional(t.String({ maxLength: 320 })),
  data: t.Optional(t.Record(t.String(), t.Unknown())),
});

export function previewTemplate(ctx: AppContext, input: typeof PreviewBody.static) {
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
  return {
    subject: input.subject === undefined ? "" : renderSubject(input.subject, vars),
    html: renderHtml(body, vars),
    variables: body.variables,
  };
}

import { optionalStrings } from "../../http/replies";
import { t } from "elysia";

const NoLineBreaks = "^[^\\r\\n]*$";
const Email = t.String({ format: "email", maxLength: 254 });
export const TemplateTypeSchema = t.Union([t.Literal("TRANSACTIONAL"), t.Literal("MARKETING"), t.Literal("HEADLESS")]);

/** The message fields a template and a campaign share (campaigns/schemas.ts spreads them). */
export const messageFields = {
  name: t.String({ minLength: 1, maxLength: 200 }),
  description: t.Nullable(t.String({ maxLength: 2000 })),
  subject: t.String({ minLength: 1, maxLength: 998, pattern: NoLineBreaks }),
  body: t.String({ minLength: 1, maxLength: 2_000_000 }),
  from: Email,
  fromName: t.Nullable(t.String({ maxLength: 200, pattern: NoLineBreaks })),
  replyTo: t.Nullable(Email),
  type: TemplateTypeSchema,
  /** The open pixel: null = the project's tracking mode, false = never, true = unless tracking is DISABLED. */
  trackOpens: t.Nullable(t.Boolean()),
};

/** The message fields of a create body: name, subject, body and from required (campaigns add their audience). */
export const createMessageFields = {
  name: messageFields.name,
  description: t.Optional(messageFields.description),
  subject: messageFields.subject,
  body: messageFields.body,
  // Required, but a missing `from` is the spec's bare 400 for templates (checked before validation in routes.ts).
  from: messageFields.from,
  fromName: t.Optional(messageFields.fromName),
  replyTo: t.Optional(messageFields.replyTo),
  type: t.Optional(messageFields.type),
  trackOpens: t.Optional(messageFields.trackOpens),
};

/** Every message field optional (PUT/PATCH bodies). */
export const updateMessageFields = t.Partial(t.Object(messageFields)).properties;

export const CreateTemplate = t.Object(createMessageFields);

export const UpdateTemplate = t.Object(updateMessageFields);

export const ListQuery = optionalStrings("page", "pageSize", "type", "search", "sort", "dir");

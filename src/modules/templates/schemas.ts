import { t } from "elysia";

const NoLineBreaks = "^[^\\r\\n]*$";
const Email = t.String({ format: "email", maxLength: 254 });
export const TemplateTypeSchema = t.Union([t.Literal("TRANSACTIONAL"), t.Literal("MARKETING"), t.Literal("HEADLESS")]);

const fields = {
  name: t.String({ minLength: 1, maxLength: 200 }),
  description: t.Nullable(t.String({ maxLength: 2000 })),
  subject: t.String({ minLength: 1, maxLength: 998, pattern: NoLineBreaks }),
  body: t.String({ minLength: 1, maxLength: 2_000_000 }),
  from: Email,
  fromName: t.Nullable(t.String({ maxLength: 200, pattern: NoLineBreaks })),
  replyTo: t.Nullable(Email),
  type: TemplateTypeSchema,
};

export const CreateTemplate = t.Object({
  name: fields.name,
  description: t.Optional(fields.description),
  subject: fields.subject,
  body: fields.body,
  // Required, but a missing `from` is the spec's bare 400 (checked before validation in routes.ts).
  from: fields.from,
  fromName: t.Optional(fields.fromName),
  replyTo: t.Optional(fields.replyTo),
  type: t.Optional(fields.type),
});

export const UpdateTemplate = t.Object({
  name: t.Optional(fields.name),
  description: t.Optional(fields.description),
  subject: t.Optional(fields.subject),
  body: t.Optional(fields.body),
  from: t.Optional(fields.from),
  fromName: t.Optional(fields.fromName),
  replyTo: t.Optional(fields.replyTo),
  type: t.Optional(fields.type),
});

export const ListQuery = t.Object({
  page: t.Optional(t.String()),
  pageSize: t.Optional(t.String()),
  type: t.Optional(t.String()),
  search: t.Optional(t.String()),
  sort: t.Optional(t.String()),
  dir: t.Optional(t.String()),
});

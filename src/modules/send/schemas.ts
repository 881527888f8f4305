import { t } from "elysia";

const NoLineBreaks = "^[^\\r\\n]*$";

const Mailbox = t.Object({
  name: t.Optional(t.Nullable(t.String({ maxLength: 200, pattern: NoLineBreaks }))),
  email: t.String({ maxLength: 254 }),
});

const Recipient = t.Union([t.String({ maxLength: 254 }), Mailbox]);

export const Attachment = t.Object({
  filename: t.String({ minLength: 1, maxLength: 255, pattern: NoLineBreaks }),
  /** base64 */
  content: t.String({ minLength: 1 }),
  /** Optional: derived from the filename's extension when absent. */
  contentType: t.Optional(t.Nullable(t.String({ minLength: 3, maxLength: 255, pattern: "^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$" }))),
  contentId: t.Optional(t.Nullable(t.String({ minLength: 1, maxLength: 255, pattern: "^[^\\r\\n<>]*$" }))),
  disposition: t.Optional(t.Nullable(t.Union([t.Literal("attachment"), t.Literal("inline")]))),
});

/** Recipients of one request (each gets its own contact upsert and email). */
export const MAX_RECIPIENTS = 1000;
export const MAX_ATTACHMENTS = 10;

export const SendBody = t.Object({
  to: t.Union([Recipient, t.Array(Recipient, { minItems: 1, maxItems: MAX_RECIPIENTS })]),
  subject: t.Optional(t.String({ minLength: 1, maxLength: 998, pattern: NoLineBreaks })),
  body: t.Optional(t.String({ minLength: 1 })),
  template: t.Optional(t.String({ format: "uuid" })),
  from: t.Optional(t.Union([t.String({ maxLength: 320 }), Mailbox])),
  name: t.Optional(t.Nullable(t.String({ maxLength: 200, pattern: NoLineBreaks }))),
  subscribed: t.Optional(t.Boolean()),
  // t.Unknown, not t.Record: the record type turns a string into an object of its characters; the service checks
  // that `data` is an object (422 otherwise), as /v1/track does.
  data: t.Optional(t.Unknown({ description: "object: contact data (see the contact data rules)" })),
  // Same reason as `data` (a string would become headers named "0", "1", ...): checked by the service.
  headers: t.Optional(t.Unknown({ description: "object: custom header name -> string value" })),
  reply: t.Optional(t.Nullable(t.String({ maxLength: 320 }))),
  attachments: t.Optional(t.Nullable(t.Array(Attachment, { maxItems: MAX_ATTACHMENTS }))),
});

import { optionalStrings } from "../../http/replies";
import { t } from "elysia";
import { messageFields } from "../templates/schemas";

const Audience = t.Union([t.Literal("ALL"), t.Literal("SEGMENT"), t.Literal("FILTERED")]);

const fields = {
  ...messageFields,
  audienceType: Audience,
  segmentId: t.Nullable(t.String({ maxLength: 64 })),
  // The tree's own rules are checked by the condition validator (field paths in errors[]).
  audienceCondition: t.Nullable(t.Any()),
  templateId: t.Nullable(t.String({ maxLength: 64 })),
  // Any value a JavaScript Date parses; checked by the service (400 when unparseable).
  scheduledFor: t.Nullable(t.Any()),
};

export const CreateCampaign = t.Object({
  name: fields.name,
  description: t.Optional(fields.description),
  subject: fields.subject,
  body: fields.body,
  from: fields.from,
  fromName: t.Optional(fields.fromName),
  replyTo: t.Optional(fields.replyTo),
  type: t.Optional(fields.type),
  audienceType: fields.audienceType,
  segmentId: t.Optional(fields.segmentId),
  audienceCondition: t.Optional(fields.audienceCondition),
  templateId: t.Optional(fields.templateId),
  scheduledFor: t.Optional(fields.scheduledFor),
  trackOpens: t.Optional(fields.trackOpens),
});

export const UpdateCampaign = t.Object({
  name: t.Optional(fields.name),
  description: t.Optional(fields.description),
  subject: t.Optional(fields.subject),
  body: t.Optional(fields.body),
  from: t.Optional(fields.from),
  fromName: t.Optional(fields.fromName),
  replyTo: t.Optional(fields.replyTo),
  type: t.Optional(fields.type),
  audienceType: t.Optional(fields.audienceType),
  segmentId: t.Optional(fields.segmentId),
  audienceCondition: t.Optional(fields.audienceCondition),
  templateId: t.Optional(fields.templateId),
  scheduledFor: t.Optional(fields.scheduledFor),
  trackOpens: t.Optional(fields.trackOpens),
});

export const SendBody = t.Optional(t.Nullable(t.Object({ scheduledFor: t.Optional(t.Any()) })));
export const TestBody = t.Object({ email: messageFields.from });

export const ListQuery = optionalStrings("page", "pageSize", "status", "search", "sort", "dir");

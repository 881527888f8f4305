import { optionalStrings } from "../../http/replies";
import { t } from "elysia";
import { createMessageFields, messageFields, updateMessageFields } from "../templates/schemas";

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
  ...createMessageFields,
  audienceType: fields.audienceType,
  segmentId: t.Optional(fields.segmentId),
  audienceCondition: t.Optional(fields.audienceCondition),
  templateId: t.Optional(fields.templateId),
  scheduledFor: t.Optional(fields.scheduledFor),
});

export const UpdateCampaign = t.Object({
  ...updateMessageFields,
  audienceType: t.Optional(fields.audienceType),
  segmentId: t.Optional(fields.segmentId),
  audienceCondition: t.Optional(fields.audienceCondition),
  templateId: t.Optional(fields.templateId),
  scheduledFor: t.Optional(fields.scheduledFor),
});

export const SendBody = t.Optional(t.Nullable(t.Object({ scheduledFor: t.Optional(t.Any()) })));
export const TestBody = t.Object({ email: messageFields.from });

export const ListQuery = optionalStrings("page", "pageSize", "status", "search", "sort", "dir");

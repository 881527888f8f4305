import { t } from "elysia";

const SegmentType = t.Union([t.Literal("DYNAMIC"), t.Literal("STATIC")]);

export const CreateSegment = t.Object({
  name: t.String({ minLength: 1, maxLength: 100 }),
  description: t.Optional(t.Union([t.String({ maxLength: 500 }), t.Null()])),
  type: t.Optional(SegmentType),
  /** Checked by the condition validator (422 paths name the filter). */
  condition: t.Optional(t.Any()),
  trackMembership: t.Optional(t.Boolean()),
});

export const UpdateSegment = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  description: t.Optional(t.Union([t.String({ maxLength: 500 }), t.Null()])),
  type: t.Optional(SegmentType),
  condition: t.Optional(t.Any()),
  trackMembership: t.Optional(t.Boolean()),
});

export const AddMembers = t.Object({
  emails: t.Array(t.String({ maxLength: 320 }), { minItems: 1, maxItems: 1000 }),
  createMissing: t.Optional(t.Boolean()),
  subscribed: t.Optional(t.Boolean()),
});

export const RemoveMembers = t.Object({
  emails: t.Array(t.String({ maxLength: 320 }), { minItems: 1, maxItems: 1000 }),
});

export const MembersQuery = t.Object({
  page: t.Optional(t.String()),
  pageSize: t.Optional(t.String()),
});

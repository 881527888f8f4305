import { optionalStrings } from "../../http/replies";
import { t } from "elysia";

export const StepTypeSchema = t.Union([
  t.Literal("SEND_EMAIL"),
  t.Literal("DELAY"),
  t.Literal("WAIT_FOR_EVENT"),
  t.Literal("CONDITION"),
  t.Literal("WEBHOOK"),
  t.Literal("UPDATE_CONTACT"),
  t.Literal("EXIT"),
]);

const Name = t.String({ minLength: 1, maxLength: 200 });
const Description = t.Nullable(t.String({ maxLength: 2000 }));
const Position = t.Nullable(t.Record(t.String(), t.Unknown()));

export const CreateWorkflow = t.Object({
  name: Name,
  description: t.Optional(Description),
  // triggerType and enabled are accepted and ignored: a new workflow is always EVENT and disabled.
  triggerType: t.Optional(t.Unknown()),
  enabled: t.Optional(t.Unknown()),
  triggerConfig: t.Optional(t.Unknown()),
  allowReentry: t.Optional(t.Boolean()),
});

export const UpdateWorkflow = t.Object({
  name: t.Optional(Name),
  description: t.Optional(Description),
  triggerType: t.Optional(t.Union([t.Literal("EVENT"), t.Literal("MANUAL")])),
  triggerConfig: t.Optional(t.Unknown()),
  enabled: t.Optional(t.Boolean()),
  allowReentry: t.Optional(t.Boolean()),
  entryStepId: t.Optional(t.Nullable(t.String({ minLength: 1, maxLength: 100 }))),
});

export const CreateStep = t.Object({
  type: StepTypeSchema,
  name: t.Optional(t.String({ maxLength: 200 })),
  config: t.Optional(t.Unknown()),
  position: t.Optional(Position),
});

export const UpdateStep = t.Object({
  name: t.Optional(t.String({ maxLength: 200 })),
  config: t.Optional(t.Unknown()),
  position: t.Optional(Position),
});

export const CreateTransition = t.Object({
  fromStepId: t.String({ minLength: 1, maxLength: 100 }),
  toStepId: t.String({ minLength: 1, maxLength: 100 }),
  branch: t.Optional(t.Nullable(t.String({ maxLength: 20 }))),
});

export const StartExecution = t.Object({
  contactId: t.Optional(t.String({ minLength: 1, maxLength: 100 })),
  email: t.Optional(t.String({ format: "email", maxLength: 320 })),
  context: t.Optional(t.Unknown()),
});

export const ListQuery = optionalStrings("page", "pageSize", "search", "enabled");

export const ExecutionsQuery = optionalStrings("page", "pageSize", "status");

export const DeleteStepQuery = t.Object({ splice: t.Optional(t.String()) });

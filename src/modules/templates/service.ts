import { dialect } from "../../db/dialect";
/**
 * Templates: reusable subject/body/sender sets. Saved templates always compile and always name a
 * sender whose domain was verified for the project at save time.
 */
import { sql, type Selectable } from "kysely";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import type { TemplatesTable, TemplateType } from "../../db/tables/senders";
import { AppError, badRequest, invalidState, notFound, type FieldError } from "../../http/errors";
import { offsetPage, pick, type OffsetParams } from "../../http/pagination";
import { checkSyntax } from "../../mail/message/render";
import { assertSenderAllowed } from "../domains/service";

export type TemplateRow = Selectable<TemplatesTable>;
export const TEMPLATE_TYPES: readonly TemplateType[] = ["TRANSACTIONAL", "MARKETING", "HEADLESS"];
export const SORTS = ["createdAt", "updatedAt", "name"] as const;
export const DIRS = ["desc", "asc"] as const;

export interface TemplateInput {
  name: string;
  description?: string | null;
  subject: string;
  body: string;
  from: string;
  fromName?: string | null;
  replyTo?: string | null;
  type?: TemplateType;
  trackOpens?: boolean | null;
}
export type TemplatePatch = Partial<TemplateInput>;

export function viewTemplate(t: TemplateRow) {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    subject: t.subject,
    body: t.body,
    from: t.from_email,
    fromName: t.from_name,
    replyTo: t.reply_to,
    type: t.type,
    trackOpens: trackOpensOf(t.track_opens),
    projectId: t.project_id,
    createdAt: iso(t.created_at),
    updatedAt: iso(t.updated_at),
  };
}
export type TemplateView = ReturnType<typeof viewTemplate>;

/** A stored track_opens (NULL, 0, 1) as the API's trackOpens (null, false, true), and back. */
export const trackOpensOf = (v: number | null | undefined): boolean | null => (v === null || v === undefined ? null : v === 1);
export const trackOpensColumn = (v: boolean | null | undefined): number | null => (v === null || v === undefined ? null : v ? 1 : 0);

/** 422 when subject or body does not compile, with the position of the first error of each. */
export function assertTemplateSyntax(fields: { subject?: string; body?: string }): void {
  const errors: FieldError[] = [];
  const details: Record<string, unknown> = {};
  for (const field of ["subject", "body"] as const) {
    const src = fields[field];
    if (src === undefined) continue;
    const err = checkSyntax(src);
    if (!err) continue;
    errors.push({ field, message: `Template syntax error: ${err.message}`, code: "invalid_template" });
    details[field] = { position: err.position, line: err.line, column: err.column, reason: err.reason };
  }
  if (errors.length) {
    throw new AppError(422, "VALIDATION_ERROR", `Template syntax error in ${errors.map((e) => e.field).join(" and ")}: ${errors[0]!.message.replace(/^Template syntax error: /, "")}`, {
      errors,
      details,
      suggestion: 'Variables look like {{name}}, {{ data.plan }}, {{ firstName ?? "there" }} or {{{rawHtml}}}; write \\{{ to print literal braces.',
    });
  }
}

/** The row, or undefined when the project has no such template. */
export async function findTemplate(ctx: AppContext, projectId: string, id: string): Promise<TemplateRow | undefined> {
  return ctx.db.selectFrom("templates").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
}

/** The row; 404 when the project has no such template (for /v1/send, campaigns, workflows). */
export async function getTemplate(ctx: AppContext, projectId: string, id: string): Promise<TemplateRow> {
  const row = await findTemplate(ctx, projectId, id);
  if (!row) throw notFound("Template");
  return row;
}


/** The columns a new template or campaign starts with from its message fields (`fromEmail` normalized by the caller). */
export function newMessageColumns(projectId: string, input: { name: string; description?: string | null; subject: string; body: string; fromName?: string | null; replyTo?: string | null; type?: TemplateType; trackOpens?: boolean | null }, fromEmail: string) {
  return {
    id: Bun.randomUUIDv7(),
    project_id: projectId,
    name: input.name,
    description: input.description ?? null,
    subject: input.subject,
    body: input.body,
    from_email: fromEmail,
    from_name: input.fromName ?? null,
    reply_to: input.replyTo ?? null,
    type: input.type ?? ("MARKETING" as const),
    track_opens: trackOpensColumn(input.trackOpens),
  };
}
export async function createTemplate(ctx: AppContext, projectId: string, input: TemplateInput): Promise<TemplateRow> {
  assertTemplateSyntax(input);
  await assertSenderAllowed(ctx, projectId, input.from);
  const now = ctx.clock.now();
  const row: TemplateRow = {
    ...newMessageColumns(projectId, input, input.from.trim()),
    created_at: now,
    updated_at: now,
  };
  await ctx.db.insertInto("templates").values(row).execute();
  return row;
}

export async function updateTemplate(ctx: AppContext, projectId: string, id: string, patch: TemplatePatch): Promise<TemplateRow> {
  const current = await getTemplate(ctx, projectId, id);
  assertTemplateSyntax(patch);
  // The sender is checked when it changes: resaving a whole template must not fail on an unchanged from.
  if (patch.from !== undefined && patch.from.trim().toLowerCase() !== current.from_email.toLowerCase()) {
    await assertSenderAllowed(ctx, projectId, patch.from);
  }
  const set: Partial<TemplateRow> = {};
  if (patch.name !== undefined) set.name = patch.name;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.subject !== undefined) set.subject = patch.subject;
  if (patch.body !== undefined) set.body = patch.body;
  if (patch.from !== undefined) set.from_email = patch.from.trim();
  if (patch.fromName !== undefined) set.from_name = patch.fromName;
  if (patch.replyTo !== undefined) set.reply_to = patch.replyTo;
  if (patch.type !== undefined) set.type = patch.type;
  if (patch.trackOpens !== undefined) set.track_opens = trackOpensColumn(patch.trackOpens);
  if (!Object.keys(set).length) return current;
  set.updated_at = ctx.clock.now();
  const row = await ctx.db.updateTable("templates").set(set).where("project_id", "=", projectId).where("id", "=", id).returningAll().executeTakeFirst();
  if (!row) throw notFound("Template");
  return row;
}

/** Where the template is referenced, merged from every module's templateUsage hook. */
export async function templateUsage(ctx: AppContext, projectId: string, id: string) {
  await getTemplate(ctx, projectId, id);
  const usage: { campaigns: unknown[]; workflows: unknown[]; [k: string]: unknown[] } = { campaigns: [], workflows: [] };
  for (const hook of ctx.contributions.templateUsage) {
    const part = await hook(ctx, projectId, id);
    for (const [k, v] of Object.entries(part)) if (Array.isArray(v)) usage[k] = [...(usage[k] ?? []), ...v];
  }
  return usage;
}

/**
 * Deletes a template. Refused (409 INVALID_STATE, like a segment in use) while a workflow step sends it: the workflow would fail at
 * its next execution. Campaigns keep their own copy of subject and body, so they never block.
 */
export async function deleteTemplate(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const usage = await templateUsage(ctx, projectId, id);
  if (usage.workflows.length) {
    throw invalidState(`The template is used by ${usage.workflows.length} workflow step(s); remove it from them first`, { workflows: usage.workflows });
  }
  await ctx.db.deleteFrom("templates").where("project_id", "=", projectId).where("id", "=", id).execute();
}

/** A copy named "<name> (copy)"; the sender was checked when the original was saved. */
export async function duplicateTemplate(ctx: AppContext, projectId: string, id: string): Promise<TemplateRow> {
  const src = await getTemplate(ctx, projectId, id);
  const now = ctx.clock.now();
  const row: TemplateRow = { ...src, id: Bun.randomUUIDv7(), name: `${src.name} (copy)`.slice(0, 200), created_at: now, updated_at: now };
  await ctx.db.insertInto("templates").values(row).execute();
  return row;
}

export interface ListQuery {
  type?: string;
  search?: string;
  sort?: string;
  dir?: string;
}

export function parseType(raw: string | undefined): TemplateType | undefined {
  if (raw === undefined || raw === "") return undefined;
  const t = raw.toUpperCase() as TemplateType;
  if (!TEMPLATE_TYPES.includes(t)) throw badRequest(`type must be one of ${TEMPLATE_TYPES.join(", ")}`, { details: { type: raw } });
  return t;
}

export async function listTemplates(ctx: AppContext, projectId: string, q: ListQuery, page: OffsetParams) {
  const type = parseType(q.type);
  const sort = pick(q.sort, SORTS, "createdAt");
  const dir = pick(q.dir, DIRS, "desc");
  const search = q.search?.trim();
  let base = ctx.db.selectFrom("templates").where("project_id", "=", projectId);
  if (type) base = base.where("type", "=", type);
  if (search) {
    base = base.where(dialect().containsAnyNoCase(["name", "description", "subject"], search));
  }
  const orderCol = sort === "name" ? dialect().orderNoCase("name") : sql.ref(sort === "updatedAt" ? "updated_at" : "created_at");
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy(orderCol, dir).orderBy("id", dir).limit(page.pageSize).offset(page.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirstOrThrow(),
  ]);
  return offsetPage(rows.map(viewTemplate), Number(count.n), page);
}

export async function templateCount(ctx: AppContext, projectId: string) {
  const r = await ctx.db.selectFrom("templates").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).executeTakeFirstOrThrow();
  return { templates: Number(r.n) };
}

export async function deleteProjectTemplates(ctx: AppContext, projectId: string) {
  await ctx.db.deleteFrom("templates").where("project_id", "=", projectId).execute();
}

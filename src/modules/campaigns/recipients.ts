// Who a campaign goes to, as ONE narrow function over contacts aliased `c`: the fan-out, the
// "no recipients" check and the counts all go through audienceWhere.
import { sql, type Expression, type SqlBool } from "kysely";
import type { AppContext } from "../../context";
import { conditionWhereFor, normalizeCondition, segmentReferenceIssues, validateCondition } from "../../audience/conditions";
import { segmentAudienceWhere } from "../../audience/segments/members";
import type { FieldError } from "../../http/errors";
import { audienceHasAny, type CampaignRow } from "./queries";

export type AudienceSpec = Pick<CampaignRow, "project_id" | "type" | "audience_type" | "segment_id" | "audience_condition">;

/**
 * The SQL condition selecting the campaign's recipients. MARKETING and HEADLESS never reach an
 * unsubscribed contact; TRANSACTIONAL reaches every contact of the audience. `now` fixes the time
 * of time-relative filters (the fan-out passes the moment sending started).
 */
export async function audienceWhere(ctx: AppContext, c: AudienceSpec, now: number): Promise<Expression<SqlBool>> {
  const parts: Expression<SqlBool>[] = [];
  if (c.type !== "TRANSACTIONAL") parts.push(sql<SqlBool>`c.subscribed = 1`);
  if (c.audience_type === "SEGMENT") parts.push(await segmentWhere(ctx, c.project_id, c.segment_id!, now));
  else if (c.audience_type === "FILTERED") parts.push(await filterWhere(ctx, JSON.parse(c.audience_condition ?? "null"), c.project_id, now));
  return parts.length ? sql<SqlBool>`(${sql.join(parts, sql` AND `)})` : sql<SqlBool>`1 = 1`;
}


/** Field errors of the audience part of a (merged) campaign: 422 on create/update. */
export async function audienceErrors(ctx: AppContext, c: AudienceSpec): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (c.audience_type === "SEGMENT") {
    if (!c.segment_id) errors.push({ field: "segmentId", message: "Required when audienceType is SEGMENT", code: "invalid_type", received: "undefined" });
    else if (!(await segmentExists(ctx, c.project_id, c.segment_id)))
      errors.push({ field: "segmentId", message: "No such segment in this project", code: "not_found", received: c.segment_id });
  } else if (c.audience_type === "FILTERED") {
    const tree = c.audience_condition ? JSON.parse(c.audience_condition) : null;
    if (!tree || typeof tree !== "object" || Array.isArray(tree))
      errors.push({ field: "audienceCondition", message: "Required when audienceType is FILTERED: a condition tree { logic, groups }", code: "invalid_type", received: tree === null ? "undefined" : typeof tree });
    else {
      const issues = conditionErrors(tree);
      errors.push(...(issues.length ? issues : await segmentReferenceIssues(ctx.db, c.project_id, normalizeCondition(tree), "audienceCondition")));
    }
  }
  return errors;
}

// ---- the condition compiler and segments -----------------------------------------------------------

async function segmentExists(ctx: AppContext, projectId: string, segmentId: string): Promise<boolean> {
  return !!(await ctx.db.selectFrom("segments").select("id").where("project_id", "=", projectId).where("id", "=", segmentId).executeTakeFirst());
}

async function segmentWhere(ctx: AppContext, projectId: string, segmentId: string, now: number): Promise<Expression<SqlBool>> {
  return segmentAudienceWhere(ctx.db, projectId, segmentId, now);
}

function conditionErrors(tree: Record<string, unknown>): FieldError[] {
  return validateCondition(tree, { path: "audienceCondition" });
}

async function filterWhere(ctx: AppContext, tree: unknown, projectId: string, now: number): Promise<Expression<SqlBool>> {
  return conditionWhereFor(ctx.db, normalizeCondition(tree), { projectId, now });
}

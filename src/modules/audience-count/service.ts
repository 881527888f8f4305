/**
 * How many contacts a condition tree matches right now: the dashboard's live recipient count in the
 * segment editor and the campaign audience picker. Same compiler as segments and campaign fan-out.
 */
import type { AppContext } from "../../context";
import { conditionWhereFor, normalizeCondition, validateCondition, type ConditionTree } from "../../audience/conditions";
import { validationError } from "../../http/errors";

export async function countAudience(ctx: AppContext, projectId: string, input: { condition: unknown; subscribedOnly?: boolean }): Promise<{ count: number }> {
  const issues = validateCondition(input.condition, { path: "condition" });
  if (issues.length) throw validationError(issues.map((i) => ({ field: i.field, message: i.message, code: i.code })));
  const tree: ConditionTree = normalizeCondition(input.condition);
  const where = await conditionWhereFor(ctx.db, tree, { projectId, now: ctx.clock.now() });
  let q = ctx.db
    .selectFrom("contacts as c")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("c.project_id", "=", projectId)
    .where(where);
  if (input.subscribedOnly) q = q.where("c.subscribed", "=", 1);
  const row = await q.executeTakeFirst();
  return { count: Number(row?.n ?? 0) };
}

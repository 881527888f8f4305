/** SQL of the events endpoints. Event ids are UUIDv7 of the service clock, so id ranges are time ranges. */
import { sql } from "kysely";
import type { AppContext } from "../../context";

export { idAtTime, timeOfId } from "../../db/ids";
import { idAtTime } from "../../db/ids";

export interface EventFilter {
  projectId: string;
  name?: string;
  /** Already checked to belong to the project. */
  contactId?: string;
}

function filtered(ctx: AppContext, f: EventFilter) {
  // With a contact the (contact_id, id) index serves; project_id is implied by the contact check.
  let q = f.contactId
    ? ctx.db.selectFrom("events").where("contact_id", "=", f.contactId)
    : ctx.db.selectFrom("events").where("project_id", "=", f.projectId);
  if (f.name !== undefined) q = q.where("name", "=", f.name);
  return q;
}

export function selectEventPage(ctx: AppContext, f: EventFilter, limit: number, beforeId: string | null) {
  let q = filtered(ctx, f).select(["id", "name", "contact_id", "data", "created_at"]);
  if (beforeId) q = q.where("id", "<", beforeId);
  return q.orderBy("id", "desc").limit(limit + 1).execute();
}

export async function countEvents(ctx: AppContext, f: EventFilter): Promise<number> {
  const r = await filtered(ctx, f)
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function deleteByName(ctx: AppContext, projectId: string, name: string): Promise<number> {
  const r = await ctx.db.deleteFrom("events").where("project_id", "=", projectId).where("name", "=", name).executeTakeFirst();
  return Number(r.numDeletedRows);
}

export async function contactExists(ctx: AppContext, projectId: string, contactId: string): Promise<boolean> {
  const r = await ctx.db.selectFrom("contacts").select("id").where("project_id", "=", projectId).where("id", "=", contactId).executeTakeFirst();
  return !!r;
}

export async function hasEvents(ctx: AppContext, projectId: string): Promise<boolean> {
  const r = await ctx.db.selectFrom("events").select("id").where("project_id", "=", projectId).limit(1).executeTakeFirst();
  return !!r;
}

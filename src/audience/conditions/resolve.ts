/**
 * The database side of the compiler: loading the segments a tree references (transitively), and
 * "does this one contact match" for workflow CONDITION steps.
 */
import type { Kysely, Transaction } from "kysely";
import type { DB } from "../../db";
import { compileFrag, fragToRaw } from "./compile";
import { q } from "../../db/frag";
import { conditionReferences } from "./references";
import type { CompileContext, ConditionTree, Facts, FieldIssue, SegmentDef } from "./types";

type Db = Kysely<DB> | Transaction<DB>;

export function parseStoredCondition(text: string | null): ConditionTree | null {
  if (!text) return null;
  try {
    return JSON.parse(text) as ConditionTree;
  } catch {
    return null;
  }
}

/** Every segment of the project reachable from the `segment.<id>` references of `trees`. */
export async function resolveSegments(db: Db, projectId: string, trees: ReadonlyArray<ConditionTree | null | undefined>): Promise<Map<string, SegmentDef>> {
  const out = new Map<string, SegmentDef>();
  let pending = [...new Set(trees.flatMap((t) => conditionReferences(t).segments))];
  for (let round = 0; pending.length && round < 20; round++) {
    const rows = await db
      .selectFrom("segments")
      .select(["id", "type", "condition"])
      .where("project_id", "=", projectId)
      .where("id", "in", pending)
      .execute();
    const next = new Set<string>();
    for (const r of rows) {
      const condition = r.type === "DYNAMIC" ? parseStoredCondition(r.condition) : null;
      out.set(r.id, { id: r.id, type: r.type, condition });
      for (const id of conditionReferences(condition).segments) if (!out.has(id)) next.add(id);
    }
    for (const id of pending) if (!out.has(id)) out.set(id, { id, type: "STATIC", condition: null, missing: true } as SegmentDef);
    pending = [...next].filter((id) => !out.has(id));
  }
  // A segment that does not exist (deleted) has no members.
  for (const [id, def] of out) if ((def as SegmentDef & { missing?: boolean }).missing) out.delete(id);
  return out;
}

/**
 * The `segment.<id>` references of a (validated, normalized) tree, checked against the project: each
 * must name one of its segments (`unknown_segment`), and with `selfId` none may lead back to that
 * segment, directly or through others (`circular_reference`). Issues are named under `path`
 * (`condition`, `audienceCondition`, `config`): `<path>.groups[i].filters[j].field`. One check for
 * segments, campaign audiences and workflow CONDITION steps.
 */
export async function segmentReferenceIssues(db: Db, projectId: string, tree: ConditionTree, path: string, selfId: string | null = null): Promise<FieldIssue[]> {
  if (!conditionReferences(tree).segments.length) return [];
  const defs = await resolveSegments(db, projectId, [tree]);
  const reaches = (from: string, seen = new Set<string>()): boolean => {
    if (from === selfId) return true;
    if (seen.has(from)) return false;
    seen.add(from);
    return conditionReferences(defs.get(from)?.condition).segments.some((id) => reaches(id, seen));
  };
  const issues: FieldIssue[] = [];
  const walk = (t: ConditionTree, at: string) =>
    t.groups.forEach((g, i) => {
      g.filters.forEach((f, j) => {
        if (!f.field.startsWith("segment.")) return;
        const id = f.field.slice("segment.".length);
        const field = `${at}.groups[${i}].filters[${j}].field`;
        if (selfId && reaches(id)) issues.push({ field, message: "A segment cannot refer to itself, directly or through other segments", code: "circular_reference" });
        else if (!defs.has(id)) issues.push({ field, message: `No segment ${id} in this project`, code: "unknown_segment" });
      });
      if (g.conditions) walk(g.conditions, `${at}.groups[${i}].conditions`);
    });
  walk(tree, path);
  return issues;
}

/** compileCondition's context with the referenced segments loaded. */
export async function compileContextFor(
  db: Db,
  tree: ConditionTree,
  ctx: Omit<CompileContext, "segments"> & { segments?: CompileContext["segments"] },
): Promise<CompileContext> {
  return { ...ctx, segments: ctx.segments ?? (await resolveSegments(db, ctx.projectId, [tree])) };
}

/** Kysely expression over contacts `c`, segments resolved from the database. */
export async function conditionWhereFor(db: Db, tree: ConditionTree, ctx: Omit<CompileContext, "segments">) {
  return fragToRaw(compileFrag(tree, await compileContextFor(db, tree, ctx)));
}

/** Whether one contact of the project matches (false when it is not in the project). */
export async function contactMatches(
  db: Db,
  tree: ConditionTree,
  opts: { projectId: string; contactId: string; now: number; facts?: Facts; mode?: "segment" | "workflow"; segments?: CompileContext["segments"] },
): Promise<boolean> {
  const cctx = await compileContextFor(db, tree, { projectId: opts.projectId, now: opts.now, facts: opts.facts, mode: opts.mode, segments: opts.segments, shape: "row" });
  const cond = fragToRaw(compileFrag(tree, cctx));
  const row = await db
    .selectFrom("contacts as c")
    .select((eb) => eb.lit(1).as("m"))
    .where("c.id", "=", opts.contactId)
    .where("c.project_id", "=", opts.projectId)
    .where(cond)
    .executeTakeFirst();
  return row !== undefined;
}

/** Which of `contactIds` match (one query; the re-evaluation of tracked segments after contact writes). */
export async function contactsMatching(db: Db, tree: ConditionTree, ctx: CompileContext, contactIds: readonly string[]): Promise<Set<string>> {
  if (!contactIds.length) return new Set();
  const cond = compileFrag(tree, { ...ctx, shape: ctx.shape ?? "row" });
  const rows = await db
    .selectFrom("contacts as c")
    .select("c.id")
    .where("c.project_id", "=", ctx.projectId)
    .where("c.id", "in", contactIds as string[])
    .where(fragToRaw(q`${cond}`))
    .execute();
  return new Set(rows.map((r) => r.id));
}

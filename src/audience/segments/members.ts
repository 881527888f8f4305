/**
 * A segment as an audience: its members as a Kysely expression over contacts `c` (campaigns with
 * audienceType SEGMENT, the members list, counts). STATIC: the stored member list. DYNAMIC: its
 * condition, live (membership at the moment the query runs).
 */
import type { Kysely, RawBuilder, SqlBool, Transaction } from "kysely";
import type { DB } from "../../db";
import { notFound } from "../../http/errors";
import { compileFrag, fragToRaw, parseStoredCondition, resolveSegments } from "../conditions";
import { FALSE, q } from "../../db/frag";
import type { Frag } from "../../db/frag";

type Db = Kysely<DB> | Transaction<DB>;

export interface SegmentAudienceRow {
  id: string;
  type: "DYNAMIC" | "STATIC";
  condition: string | null;
}

/** The member test of a loaded segment row as a fragment (set shape). */
export async function segmentMemberFrag(db: Db, projectId: string, seg: SegmentAudienceRow, now: number): Promise<Frag> {
  if (seg.type === "STATIC") return q`c.id IN (SELECT sm.contact_id FROM segment_members sm WHERE sm.segment_id = ${seg.id})`;
  const tree = parseStoredCondition(seg.condition);
  if (!tree) return FALSE;
  const segments = await resolveSegments(db, projectId, [tree]);
  return compileFrag(tree, { projectId, now, segments: new Map([...segments].filter(([id]) => id !== seg.id)) });
}

/**
 * Members of a segment of the project: `db.selectFrom("contacts as c").where("c.project_id", "=", p)
 * .where(await segmentAudienceWhere(db, p, id))`. 404 NOT_FOUND when the project has no such segment.
 */
export async function segmentAudienceWhere(db: Db, projectId: string, segmentId: string, now: number = Date.now()): Promise<RawBuilder<SqlBool>> {
  const seg = await db
    .selectFrom("segments")
    .select(["id", "type", "condition"])
    .where("project_id", "=", projectId)
    .where("id", "=", segmentId)
    .executeTakeFirst();
  if (!seg) throw notFound("Segment");
  return fragToRaw(await segmentMemberFrag(db, projectId, seg, now));
}

/** How many contacts are members now (a segment's memberCount when not tracked, and the recount). */
export async function liveCount(db: Db, seg: SegmentAudienceRow & { project_id: string }, now: number): Promise<number> {
  const member = await segmentMemberFrag(db, seg.project_id, seg, now);
  const row = await db
    .selectFrom("contacts as c")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("c.project_id", "=", seg.project_id)
    .where(fragToRaw(member))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

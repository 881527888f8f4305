// SQL of the segments module (Kysely). Membership diffs and counts live in src/audience/segments.
import type { Insertable, Kysely, Transaction, Updateable } from "kysely";
import type { DB } from "../../db";
import type { SegmentsTable } from "../../db/tables/segments";

type Db = Kysely<DB> | Transaction<DB>;

export const selectSegment = (db: Db, projectId: string, id: string) =>
  db.selectFrom("segments").selectAll().where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export const listSegments = (db: Db, projectId: string) =>
  db.selectFrom("segments").selectAll().where("project_id", "=", projectId).orderBy("created_at", "desc").orderBy("id", "desc").execute();

/** Slugs of the project equal to `base` or `base-<n>`. */
export const slugsLike = (db: Db, projectId: string, base: string) =>
  db
    .selectFrom("segments")
    .select("slug")
    .where("project_id", "=", projectId)
    .where((eb) => eb.or([eb("slug", "=", base), eb("slug", "like", `${base}-%`)]))
    .execute()
    .then((rows) => new Set(rows.map((r) => r.slug)));

export const insertSegment = (db: Db, row: Insertable<SegmentsTable>) => db.insertInto("segments").values(row).execute();

export const updateSegment = (db: Db, id: string, set: Updateable<SegmentsTable>) => db.updateTable("segments").set(set).where("id", "=", id).execute();

export const deleteSegment = (db: Db, projectId: string, id: string) =>
  db.deleteFrom("segments").where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();

export const clearMembers = (db: Db, segmentId: string) => db.deleteFrom("segment_members").where("segment_id", "=", segmentId).execute();

export const contactsByEmail = (db: Db, projectId: string, emails: string[]) =>
  emails.length
    ? db.selectFrom("contacts").select(["id", "email"]).where("project_id", "=", projectId).where("email", "in", emails).execute()
    : Promise.resolve([] as Array<{ id: string; email: string }>);

export const membersAmong = (db: Db, segmentId: string, contactIds: string[]) =>
  contactIds.length
    ? db
        .selectFrom("segment_members")
        .select("contact_id")
        .where("segment_id", "=", segmentId)
        .where("contact_id", "in", contactIds)
        .execute()
        .then((rows) => new Set(rows.map((r) => r.contact_id)))
    : Promise.resolve(new Set<string>());

export const countMembers = (db: Db, segmentId: string) =>
  db
    .selectFrom("segment_members")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("segment_id", "=", segmentId)
    .executeTakeFirst()
    .then((r) => Number(r?.n ?? 0));

export const deleteProjectSegments = (db: Db, projectId: string) => db.deleteFrom("segments").where("project_id", "=", projectId).execute();

export const projectConditions = (db: Db, projectId: string) =>
  db.selectFrom("segments").select(["id", "name", "slug", "condition"]).where("project_id", "=", projectId).where("condition", "is not", null).execute();

export const bumpMemberCount = (db: Db, id: string, delta: number, now: number) =>
  db.updateTable("segments").set((eb) => ({ member_count: eb("member_count", "+", delta), updated_at: now })).where("id", "=", id).execute();

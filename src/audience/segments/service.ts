/**
 * Segments: DYNAMIC (a condition tree, live) and STATIC (a managed list), with tracked membership
 * (segment.<slug>.entry/exit events). The rules live here; SQL in queries.ts and src/audience/segments.
 */
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { contactsChanged } from "../changes";
import { upsertContact, viewContact } from "../contacts";
import {
  conditionReferences,
  fragToRaw,
  normalizeCondition,
  parseStoredCondition,
  segmentReferenceIssues,
  validateCondition,
  type ConditionTree,
  type FieldIssue,
} from "../conditions";
import { notifyEvents, type RecordedEvent } from "../events";
import { segmentMemberFrag } from "./members";
import { ensureFieldIndexes } from "./field-indexes";
import { computeSegment, forgetTrackedSegments, liveCount, writeMembershipChanges } from "./membership";
import { storedCount } from "./recount";
import type { Transaction } from "kysely";
import type { DB } from "../../db";
import type { SegmentsTable, SegmentType } from "../../db/tables/segments";
import { invalidField, invalidState, notFound, validationError } from "../../http/errors";
import { offsetPage, type OffsetParams } from "../../http/pagination";
import { isValidEmail } from "../../net/email-address";
import * as q from "./queries";

type SegmentRow = SegmentsTable;

export function viewSegment(row: SegmentRow) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    type: row.type,
    condition: row.type === "DYNAMIC" ? parseStoredCondition(row.condition) : null,
    trackMembership: row.track_membership === 1,
    memberCount: row.member_count,
    projectId: row.project_id,
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
  };
}
export type SegmentView = ReturnType<typeof viewSegment>;

/** Lower-case, hyphenated name (accents dropped); "segment" when nothing is left. */
export function slugify(name: string): string {
  const s = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 80)
    .replace(/-+$/g, "");
  return s || "segment";
}

/** The first free of `base`, `base-2`, `base-3`… among `taken`. */
export function uniqueSlug(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) if (!taken.has(`${base}-${n}`)) return `${base}-${n}`;
}

async function getRow(ctx: AppContext, projectId: string, id: string): Promise<SegmentRow> {
  const row = await q.selectSegment(ctx.db, projectId, id);
  if (!row) throw notFound("Segment");
  return row;
}

function trimmedName(name: string): string {
  const n = name.trim();
  if (!n) throw invalidField("name", "Name must not be blank", "too_small", name);
  return n;
}

async function checkedCondition(ctx: AppContext, projectId: string, raw: unknown, selfId: string | null): Promise<ConditionTree> {
  const issues = validateCondition(raw, { path: "condition" });
  if (issues.length) throw validationError(issues);
  const tree = normalizeCondition(raw);
  const refs = await segmentReferenceIssues(ctx.db, projectId, tree, "condition", selfId);
  if (refs.length) throw validationError(refs);
  return tree;
}

export interface CreateInput {
  name: string;
  description?: string | null;
  type?: SegmentType;
  condition?: unknown;
  trackMembership?: boolean;
}

/**
 * members_synced for a memberCount just set to `count` (migration 020, recount.ts): 1 when the segment
 * is tracked DYNAMIC and `count` equals its stored member rows, so entries and exits may add to it.
 */
async function countInSync(trx: Transaction<DB>, row: Pick<SegmentRow, "id" | "type" | "track_membership">, count: number): Promise<number> {
  if (row.type !== "DYNAMIC" || row.track_membership !== 1) return 0;
  return (await storedCount(trx, row.id)) === count ? 1 : 0;
}

export async function createSegment(ctx: AppContext, projectId: string, input: CreateInput): Promise<SegmentView> {
  const name = trimmedName(input.name);
  const type = input.type ?? "DYNAMIC";
  const tree = type === "DYNAMIC" ? await checkedCondition(ctx, projectId, input.condition, null) : null;
  // Before the first count, which then uses it.
  await ensureFieldIndexes(ctx, tree);
  const row = await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock.now();
    const base = slugify(name);
    const row: SegmentRow = {
      id: Bun.randomUUIDv7(undefined, now),
      project_id: projectId,
      name,
      slug: uniqueSlug(base, await q.slugsLike(trx, projectId, base)),
      description: input.description ?? null,
      type,
      condition: tree ? JSON.stringify(tree) : null,
      track_membership: input.trackMembership ? 1 : 0,
      member_count: 0,
      members_synced: 0,
      created_at: now,
      updated_at: now,
    };
    await q.insertSegment(trx, row);
    // The cached count starts right; a STATIC segment starts empty.
    if (type === "DYNAMIC") row.member_count = await liveCount(trx, row, now);
    row.members_synced = await countInSync(trx, row, row.member_count);
    await q.updateSegment(trx, row.id, { member_count: row.member_count, members_synced: row.members_synced });
    return row;
  });
  forgetTrackedSegments(ctx, projectId);
  return viewSegment(row);
}

export async function listSegments(ctx: AppContext, projectId: string): Promise<SegmentView[]> {
  return (await q.listSegments(ctx.db, projectId)).map(viewSegment);
}

export async function getSegment(ctx: AppContext, projectId: string, id: string): Promise<SegmentView> {
  return viewSegment(await getRow(ctx, projectId, id));
}

export async function updateSegment(ctx: AppContext, projectId: string, id: string, input: Partial<CreateInput>): Promise<SegmentView> {
  const row = await getRow(ctx, projectId, id);
  if (input.type !== undefined && input.type !== row.type) throw invalidField("type", "The type of a segment cannot be changed", "invalid_state", input.type);
  let tree: ConditionTree | null = null;
  if (input.condition !== undefined) {
    if (row.type === "STATIC") throw invalidField("condition", "A STATIC segment has no condition; manage its members instead", "invalid_state");
    tree = await checkedCondition(ctx, projectId, input.condition, row.id);
  }
  const name = input.name !== undefined ? trimmedName(input.name) : undefined;
  await ensureFieldIndexes(ctx, tree);
  const updated = await ctx.db.transaction().execute(async (trx) => {
    // The patch applies to the row as it is now (read again in the transaction): a concurrent PATCH of
    // other fields is kept, not overwritten with what `row` held before it.
    const cur = await q.selectSegment(trx, projectId, id);
    if (!cur) throw notFound("Segment");
    const next: SegmentRow = { ...cur };
    if (name !== undefined) next.name = name;
    if (input.description !== undefined) next.description = input.description;
    if (tree) next.condition = JSON.stringify(tree);
    if (input.trackMembership !== undefined) next.track_membership = input.trackMembership ? 1 : 0;
    const untracked = cur.type === "DYNAMIC" && cur.track_membership === 1 && next.track_membership === 0;
    const now = ctx.clock.now();
    next.updated_at = now;
    // An untracked DYNAMIC segment forgets its stored membership: tracking again starts empty.
    if (untracked) await q.clearMembers(trx, row.id);
    if (tree) next.member_count = await liveCount(trx, next, now);
    next.members_synced = await countInSync(trx, next, next.member_count);
    await q.updateSegment(trx, row.id, {
      name: next.name,
      description: next.description,
      condition: next.condition,
      track_membership: next.track_membership,
      member_count: next.member_count,
      members_synced: next.members_synced,
      updated_at: now,
    });
    return next;
  });
  forgetTrackedSegments(ctx, projectId);
  return viewSegment(updated);
}

export async function deleteSegment(ctx: AppContext, projectId: string, id: string): Promise<void> {
  await getRow(ctx, projectId, id);
  // The in-use check and the delete in one transaction: a campaign send committing between them would
  // otherwise start SENDING to a segment that is then deleted.
  await ctx.db.transaction().execute(async (trx) => {
    const inTrx: AppContext = { ...ctx, db: trx };
    for (const hook of ctx.contributions.segmentInUse) {
      const user = await hook(inTrx, projectId, id);
      if (user) throw invalidState(`The segment is used by ${user}`, { segmentId: id });
    }
    await q.deleteSegment(trx, projectId, id);
  });
  forgetTrackedSegments(ctx, projectId);
}

/** GET /segments/:id/contacts: members, newest contact first (live for DYNAMIC). */
export async function listMembers(ctx: AppContext, projectId: string, id: string, p: OffsetParams) {
  const row = await getRow(ctx, projectId, id);
  const member = fragToRaw(await segmentMemberFrag(ctx.db, projectId, row, ctx.clock.now()));
  const base = ctx.db.selectFrom("contacts as c").where("c.project_id", "=", projectId).where(member);
  const [count, rows] = await Promise.all([
    base.select((eb) => eb.fn.countAll<number>().as("n")).executeTakeFirst(),
    base.selectAll("c").orderBy("c.created_at", "desc").orderBy("c.id", "desc").limit(p.pageSize).offset(p.offset).execute(),
  ]);
  return offsetPage(rows.map(viewContact), Number(count?.n ?? 0), p);
}

function normalizedEmails(emails: string[]): string[] {
  const issues: FieldIssue[] = [];
  const out: string[] = [];
  emails.forEach((e, i) => {
    const v = e.trim().toLowerCase();
    if (!isValidEmail(v)) issues.push({ field: `emails.${i}`, message: "Invalid email", code: "invalid_string" });
    else out.push(v);
  });
  if (issues.length) throw validationError(issues.slice(0, 20));
  return [...new Set(out)];
}

function requireStatic(row: SegmentRow) {
  if (row.type !== "STATIC") throw invalidState("Members can only be added to or removed from a STATIC segment; a DYNAMIC segment follows its condition", { type: row.type });
}

/** POST /segments/:id/members: `{ added, created, notFound }`; adding a member twice is a no-op. */
export async function addMembers(ctx: AppContext, projectId: string, id: string, input: { emails: string[]; createMissing?: boolean; subscribed?: boolean }) {
  requireStatic(await getRow(ctx, projectId, id));
  const emails = normalizedEmails(input.emails);
  const events: RecordedEvent[] = [];
  const result = await ctx.db.transaction().execute(async (trx) => {
    // Read again inside the transaction: a DELETE committed since the check above would otherwise make the
    // member insert fail its foreign key (500) after contacts were created; it is a 404 instead.
    const row = await q.selectSegment(trx, projectId, id);
    if (!row) throw notFound("Segment");
    const now = ctx.clock.now();
    const found = new Map((await q.contactsByEmail(trx, projectId, emails)).map((c) => [c.email, c.id]));
    const notFoundList: string[] = [];
    let created = 0;
    for (const email of emails) {
      if (found.has(email)) continue;
      if (!input.createMissing) {
        notFoundList.push(email);
        continue;
      }
      const r = await upsertContact(trx, ctx, { projectId, email, subscribed: input.subscribed ?? true, defaultSubscribed: true, source: "segment" });
      found.set(email, r.contact.id);
      events.push(...r.events);
      created++;
    }
    const ids = [...found.values()];
    const already = await q.membersAmong(trx, row.id, ids);
    const added = ids.filter((cid) => !already.has(cid));
    if (row.track_membership === 1) {
      events.push(...(await writeMembershipChanges(trx, projectId, now, [{ segment: row, added, removed: [] }])));
    } else {
      for (let i = 0; i < added.length; i += 400) {
        await trx
          .insertInto("segment_members")
          .values(added.slice(i, i + 400).map((contact_id) => ({ segment_id: row.id, contact_id, created_at: now })))
          .onConflict((oc) => oc.doNothing())
          .execute();
      }
    }
    await q.bumpMemberCount(trx, row.id, added.length, now);
    return { added, created, notFound: notFoundList };
  });
  await notifyEvents(ctx, events);
  await contactsChanged(ctx, projectId, result.added);
  return { added: result.added.length, created: result.created, notFound: result.notFound };
}

/** DELETE /segments/:id/members: `{ removed }`. */
export async function removeMembers(ctx: AppContext, projectId: string, id: string, input: { emails: string[] }) {
  const row = await getRow(ctx, projectId, id);
  requireStatic(row);
  const emails = normalizedEmails(input.emails);
  const result = await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock.now();
    const ids = (await q.contactsByEmail(trx, projectId, emails)).map((c) => c.id);
    const members = [...(await q.membersAmong(trx, row.id, ids))];
    let events: RecordedEvent[] = [];
    if (row.track_membership === 1) events = await writeMembershipChanges(trx, projectId, now, [{ segment: row, added: [], removed: members }]);
    else if (members.length) await trx.deleteFrom("segment_members").where("segment_id", "=", row.id).where("contact_id", "in", members).execute();
    await q.bumpMemberCount(trx, row.id, -members.length, now);
    return { members, events };
  });
  await notifyEvents(ctx, result.events);
  await contactsChanged(ctx, projectId, result.members);
  return { removed: result.members.length };
}

/** POST /segments/:id/refresh: the live count into memberCount; no events, no membership writes. */
export async function refreshSegment(ctx: AppContext, projectId: string, id: string) {
  const row = await getRow(ctx, projectId, id);
  const memberCount = await ctx.db.transaction().execute(async (trx) => {
    const live = await liveCount(trx, row, ctx.clock.now());
    await q.updateSegment(trx, row.id, { member_count: live, members_synced: await countInSync(trx, row, live) });
    return live;
  });
  return { memberCount };
}

/** POST /segments/:id/compute: `{ added, removed, total }`. */
export async function computeSegmentById(ctx: AppContext, projectId: string, id: string) {
  return computeSegment(ctx, await getRow(ctx, projectId, id));
}

// ---- usage (hooks) ---------------------------------------------------------------------------------

async function segmentsReferencing(ctx: AppContext, projectId: string, pick: (refs: ReturnType<typeof conditionReferences>) => boolean) {
  const rows = await q.projectConditions(ctx.db, projectId);
  return rows.filter((r) => pick(conditionReferences(parseStoredCondition(r.condition)))).map((r) => ({ id: r.id, name: r.name, slug: r.slug }));
}

export const fieldUsage = async (ctx: AppContext, projectId: string, field: string) => ({
  segments: await segmentsReferencing(ctx, projectId, (refs) => refs.fields.includes(field.startsWith("data.") ? field.slice(5) : field)),
});

export const eventUsage = async (ctx: AppContext, projectId: string, name: string) => ({
  segments: await segmentsReferencing(ctx, projectId, (refs) => refs.events.includes(name)),
});

export async function resetProjectSegments(ctx: AppContext, projectId: string) {
  await q.deleteProjectSegments(ctx.db, projectId);
  forgetTrackedSegments(ctx, projectId);
}

/**
 * Raw bun:sqlite sibling of reevaluateContacts (membership.ts) for the hot paths
 * (scripts/bench/segments.ts): the same query and diff as prepared statements with constant SQL
 * text (id lists go in as one JSON array through json_each), run in ONE
 * transaction. matchColumns, writeMoveRaw and addToCountsRaw are shared with /v1/track's follower
 * (follow.ts).
 */
import type { Q } from "../../db/raw";
import { compileFrag, type SegmentDef } from "../conditions";
import type { RecordedEvent } from "../events";
import { insertEventRaw } from "../raw";
import type { TrackedSegment } from "./tracked";

const STORED =
  "SELECT segment_id, contact_id FROM segment_members WHERE contact_id IN (SELECT value FROM json_each(?)) AND segment_id IN (SELECT value FROM json_each(?))";
const ADD = "INSERT INTO segment_members (segment_id, contact_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";
const REMOVE = "DELETE FROM segment_members WHERE segment_id = ? AND contact_id = ?";
// Only while the count is in sync with the stored rows (migration 020); otherwise the caller schedules a recount (recount.ts).
const COUNT = "UPDATE segments SET member_count = member_count + ? WHERE id = ? AND members_synced = 1";

/** One contact's match columns (matchColumns' SQL), the contact id as the last parameter. */
export const matchOneSql = (columns: string) => `SELECT ${columns} FROM contacts c WHERE c.id = ?`;

export const entryEvent = (slug: string) => `segment.${slug}.entry`;
export const exitEvent = (slug: string) => `segment.${slug}.exit`;

/** Select columns over contacts `c`: `m<k>` is 1 when the contact matches segs[k], else 0. */
export function matchColumns(segs: readonly TrackedSegment[], ctx: { projectId: string; now: number; segments: ReadonlyMap<string, SegmentDef> }): { sql: string; params: unknown[] } {
  const cols: string[] = [];
  const params: unknown[] = [];
  segs.forEach((s, k) => {
    const f = compileFrag(s.tree, { ...ctx, shape: "row" });
    cols.push(`CASE WHEN ${f.sql} THEN 1 ELSE 0 END AS m${k}`);
    params.push(...f.params);
  });
  return { sql: cols.join(", "), params };
}

/** One move of a contact: its member row added (`match`) or removed, and its entry/exit event. */
export async function writeMoveRaw(q: Q, projectId: string, now: number, seg: TrackedSegment, contactId: string, match: boolean): Promise<RecordedEvent> {
  if (match) await q.run(ADD, [seg.id, contactId, now]);
  else await q.run(REMOVE, [seg.id, contactId]);
  const name = match ? entryEvent(seg.slug) : exitEvent(seg.slug);
  const data = { segmentId: seg.id, segmentName: seg.name };
  const eventId = await insertEventRaw(q, now, { projectId, contactId, name, data });
  return { projectId, contactId, eventId, name, data };
}

/**
 * memberCount += delta for each segment id in sync (zero deltas skipped). Returns the ids of the
 * segments that moved while out of sync: hand them to scheduleRecount (recount.ts) after the commit.
 */
export async function addToCountsRaw(q: Q, deltas: Iterable<[string, number]>): Promise<string[]> {
  const recount: string[] = [];
  for (const [id, d] of deltas) if (d && (await q.run(COUNT, [d, id])) === 0) recount.push(id);
  return recount;
}

/**
 * Diffs `ids` against every tracked segment and writes membership rows and entry/exit events. Call
 * inside a transaction. `recount`: segments to recount after the commit (addToCountsRaw).
 */
export async function reevaluateRaw(
  q: Q,
  projectId: string,
  now: number,
  segs: readonly TrackedSegment[],
  segments: ReadonlyMap<string, SegmentDef>,
  ids: readonly string[],
): Promise<{ events: RecordedEvent[]; recount: string[] }> {
  const cols = matchColumns(segs, { projectId, now, segments });
  const select = `SELECT c.id AS id, ${cols.sql} FROM contacts c WHERE c.project_id = ? AND c.id IN (SELECT value FROM json_each(?))`;
  const rows = await q.all<Record<string, number | string>>(select, [...cols.params, projectId, JSON.stringify(ids)]);
  const stored = await q.all<{ segment_id: string; contact_id: string }>(STORED, [JSON.stringify(ids), JSON.stringify(segs.map((s) => s.id))]);
  const storedSet = new Set(stored.map((r) => `${r.segment_id} ${r.contact_id}`));
  const events: RecordedEvent[] = [];
  const deltas = new Map<string, number>();
  for (const row of rows) {
    const cid = row.id as string;
    for (let k = 0; k < segs.length; k++) {
      const s = segs[k]!;
      const match = Number(row[`m${k}`]) === 1;
      if (match === storedSet.has(`${s.id} ${cid}`)) continue;
      events.push(await writeMoveRaw(q, projectId, now, s, cid, match));
      deltas.set(s.id, (deltas.get(s.id) ?? 0) + (match ? 1 : -1));
    }
  }
  return { events, recount: await addToCountsRaw(q, deltas) };
}

/**
 * Raw bun:sqlite sibling of reevaluateContacts (membership.ts) for the /v1/track hot path
 * (scripts/bench/segments.ts): the same query and diff as prepared statements with constant SQL
 * text (id lists go in as one JSON array through json_each), run inside ctx.store.exclusive in ONE
 * transaction, like the track batcher itself.
 */
import type { Database } from "bun:sqlite";
import { compileFrag, type SegmentDef } from "../conditions";
import type { RecordedEvent } from "../events";
import { insertEventRaw } from "../raw";
import type { TrackedSegment } from "./membership";

const STORED =
  "SELECT segment_id, contact_id FROM segment_members WHERE contact_id IN (SELECT value FROM json_each(?)) AND segment_id IN (SELECT value FROM json_each(?))";
const ADD = "INSERT INTO segment_members (segment_id, contact_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING";
const REMOVE = "DELETE FROM segment_members WHERE segment_id = ? AND contact_id = ?";
const COUNT = "UPDATE segments SET member_count = member_count + ? WHERE id = ?";

/** Diffs `ids` against every tracked segment and writes membership rows and entry/exit events. Call inside a transaction. */
export function reevaluateRaw(
  sqlite: Database,
  projectId: string,
  now: number,
  segs: readonly TrackedSegment[],
  segments: ReadonlyMap<string, SegmentDef>,
  ids: readonly string[],
): RecordedEvent[] {
  const cols: string[] = [];
  const params: unknown[] = [];
  segs.forEach((s, k) => {
    const f = compileFrag(s.tree, { projectId, now, segments, shape: "row" });
    cols.push(`CASE WHEN ${f.sql} THEN 1 ELSE 0 END AS m${k}`);
    params.push(...f.params);
  });
  const select = `SELECT c.id AS id, ${cols.join(", ")} FROM contacts c WHERE c.project_id = ? AND c.id IN (SELECT value FROM json_each(?))`;
  const rows = sqlite.query<Record<string, number | string>, any[]>(select).all(...(params as any[]), projectId, JSON.stringify(ids));
  const stored = sqlite
    .query<{ segment_id: string; contact_id: string }, [string, string]>(STORED)
    .all(JSON.stringify(ids), JSON.stringify(segs.map((s) => s.id)));
  const storedSet = new Set(stored.map((r) => `${r.segment_id} ${r.contact_id}`));
  const events: RecordedEvent[] = [];
  const deltas = new Array<number>(segs.length).fill(0);
  for (const row of rows) {
    const cid = row.id as string;
    segs.forEach((s, k) => {
      const match = Number(row[`m${k}`]) === 1;
      const was = storedSet.has(`${s.id} ${cid}`);
      if (match === was) return;
      if (match) sqlite.query(ADD).run(s.id, cid, now);
      else sqlite.query(REMOVE).run(s.id, cid);
      deltas[k]! += match ? 1 : -1;
      const name = `segment.${s.slug}.${match ? "entry" : "exit"}`;
      const data = { segmentId: s.id, segmentName: s.name };
      const eventId = insertEventRaw(sqlite, now, { projectId, contactId: cid, name, data });
      events.push({ projectId, contactId: cid, eventId, name, data });
    });
  }
  deltas.forEach((d, k) => {
    if (d) sqlite.query(COUNT).run(d, segs[k]!.id);
  });
  return events;
}

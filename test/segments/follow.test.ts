// The pure half of segments/follow.ts: what a condition reads (segmentDeps) and whether one contact
// write can move it (touches). /v1/track evaluates only the segments a write touches. Then the
// follower itself on a real database, against the compiled SQL.
import { atomic } from "../../src/db/raw";
import { describe, expect, test } from "bun:test";
import type { ConditionTree, SegmentDef } from "../../src/audience/conditions";
import { followPlan, SegmentFollower, segmentDeps, touches, type ContactChange } from "../../src/audience/segments/follow";
import { Audience, PROJECT, type Seed } from "./support";

const and = (...filters: Array<{ field: string; operator: string; value?: unknown; unit?: string }>): ConditionTree => ({ logic: "AND", groups: [{ filters }] });
const segments = new Map<string, SegmentDef>([
  ["dyn", { id: "dyn", type: "DYNAMIC", condition: and({ field: "data.tier", operator: "equals", value: "gold" }, { field: "email.open", operator: "triggered" }) }],
  ["loop", { id: "loop", type: "DYNAMIC", condition: and({ field: "segment.loop", operator: "memberOfSegment" }, { field: "updatedAt", operator: "within", value: 1, unit: "days" }) }],
  ["static", { id: "static", type: "STATIC", condition: null }],
]);

describe("segmentDeps", () => {
  const cases: Array<[string, ConditionTree, Partial<Record<string, unknown>>]> = [
    ["data keys and events", and({ field: "data.plan", operator: "equals", value: "pro" }, { field: "event.purchase", operator: "triggeredWithin", value: 7, unit: "days" }), { keys: ["plan"], events: ["purchase"] }],
    ["contact columns", and({ field: "email", operator: "endsWith", value: "@x.io" }, { field: "subscribed", operator: "equals", value: true }, { field: "createdAt", operator: "olderThan", value: 1, unit: "days" }), { email: true, subscribed: true, createdAt: true }],
    ["email.* events by their event name", and({ field: "email.click", operator: "notTriggered" }), { events: ["email.click"] }],
    ["a DYNAMIC reference reads what its condition reads", and({ field: "segment.dyn", operator: "memberOfSegment" }), { keys: ["tier"], events: ["email.open"] }],
    ["a STATIC reference reads stored memberships", and({ field: "segment.static", operator: "notMemberOfSegment" }), { memberships: true }],
    ["a self-reference ends", and({ field: "segment.loop", operator: "memberOfSegment" }), { updatedAt: true }],
    ["a missing segment reads nothing", and({ field: "segment.gone", operator: "memberOfSegment" }), {}],
    ["nested groups", { logic: "OR", groups: [{ filters: [], conditions: and({ field: "data.a", operator: "exists" }) }, { filters: [{ field: "data.b", operator: "notExists" }] }] }, { keys: ["a", "b"] }],
  ];
  for (const [name, tree, want] of cases) {
    test(name, () => {
      const d = segmentDeps(tree, segments);
      expect({ keys: [...d.keys].sort(), events: [...d.events].sort(), email: d.email, subscribed: d.subscribed, createdAt: d.createdAt, updatedAt: d.updatedAt, memberships: d.memberships }).toEqual({
        keys: [],
        events: [],
        email: false,
        subscribed: false,
        createdAt: false,
        updatedAt: false,
        memberships: false,
        ...want,
      });
    });
  }
});

describe("touches", () => {
  const deps = segmentDeps(and({ field: "data.plan", operator: "equals", value: "pro" }, { field: "event.purchase", operator: "triggered" }), segments);
  const change = (c: Partial<ContactChange>): ContactChange => ({ isNew: false, keys: [], events: [], subscribed: false, updated: false, ...c });
  const cases: Array<[string, ContactChange, boolean, ReturnType<typeof segmentDeps>?]> = [
    ["a new contact touches every segment", change({ isNew: true }), true],
    ["a read data key changed", change({ keys: ["visits", "plan"], updated: true }), true],
    ["only other keys changed", change({ keys: ["visits"], updated: true }), false],
    ["a read event recorded", change({ events: ["purchase"] }), true],
    ["another event recorded", change({ events: ["login"] }), false],
    ["a subscription flip, condition ignores it", change({ subscribed: true, events: ["contact.unsubscribed"], updated: true }), false],
    ["a subscription flip, condition reads it", change({ subscribed: true, updated: true }), true, segmentDeps(and({ field: "subscribed", operator: "equals", value: true }), segments)],
    ["a written row moves updatedAt", change({ updated: true }), true, segmentDeps(and({ field: "updatedAt", operator: "within", value: 1, unit: "hours" }), segments)],
    ["an unwritten row does not", change({ events: ["x"] }), false, segmentDeps(and({ field: "updatedAt", operator: "within", value: 1, unit: "hours" }), segments)],
    ["email and createdAt never change on a track", change({ keys: ["a"], events: ["b"], updated: true, subscribed: true }), false, segmentDeps(and({ field: "email", operator: "contains", value: "x" }, { field: "createdAt", operator: "within", value: 1, unit: "days" }), segments)],
  ];
  for (const [name, ch, want, d] of cases) test(name, () => expect(touches(d ?? deps, ch)).toBe(want));
});

describe("SegmentFollower on a real database", () => {
  test("existing contacts with old and recent events: the stored membership is what the compiled SQL selects", async () => {
    const DAY = 86_400_000;
    const now = Date.UTC(2024, 5, 15, 12);
    const ages = [null, 1, 3, 6.9, 7.1, 20, 400];
    const contacts: Seed["contacts"] = [];
    const events: Seed["events"] = [];
    ages.forEach((purchase, i) =>
      ages.forEach((login, j) => {
        const id = `c${i}${j}`;
        contacts.push({ id, email: `${id}@x.io`, subscribed: (i + j) % 2 === 0, data: { plan: i % 2 ? "pro" : "free" }, createdAt: now - 500 * DAY, updatedAt: now - DAY });
        // Several events per name: only the newest may decide.
        if (purchase !== null) for (const k of [0, 30, 90]) events.push({ contactId: id, name: "purchase", createdAt: now - (purchase + k) * DAY });
        if (login !== null) for (const k of [0, 2]) events.push({ contactId: id, name: "email.open", createdAt: now - (login + k) * DAY });
      }),
    );
    const aud = await Audience.open({ contacts, events, segments: [], members: [] });
    try {
      const within = (op: string) => ({ field: "event.purchase", operator: op, value: 7, unit: "days" });
      const trees: ConditionTree[] = [
        and({ field: "event.purchase", operator: "triggered" }),
        and({ field: "email.open", operator: "notTriggered" }),
        and(within("triggeredWithin")),
        and(within("triggeredOlderThan")),
        and(within("notTriggeredWithin")),
        { logic: "OR", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }, { field: "email.open", operator: "triggeredWithin", value: 2, unit: "days" }] }, { filters: [within("triggeredOlderThan"), { field: "subscribed", operator: "equals", value: true }] }] },
      ];
      const tracked = trees.map((tree, i) => ({ id: `T${i}`, slug: `t${i}`, name: `T${i}`, tree }));
      for (const t of tracked) await aud.all("INSERT INTO segments (id, project_id, name, slug, type, condition, track_membership, created_at, updated_at) VALUES (?, ?, ?, ?, 'DYNAMIC', ?, 1, 0, 0)", [t.id, PROJECT, t.name, t.slug, JSON.stringify(t.tree)]);
      const plan = followPlan(PROJECT, tracked, new Map());
      let follower!: SegmentFollower;
      await atomic(aud.db, aud.engine, async (q) => {
        follower = new SegmentFollower(q, now, (_, e) => {
          throw e;
        });
        // No stored memberships yet (the Audience seeds none): every match is an entry.
        for (const c of contacts) await follower.follow(plan, c, { isNew: false, keys: ["plan"], events: ["purchase", "email.open"], subscribed: true, updated: true }, new Set());
        await follower.finish();
      });
      for (const t of tracked) {
        const stored = (await aud.all<{ contact_id: string }>("SELECT contact_id FROM segment_members WHERE segment_id = ? ORDER BY contact_id", [t.id])).map((r) => r.contact_id);
        const sql = await aud.sqlIds(t.tree, { now });
        expect({ segment: t.id, stored }).toEqual({ segment: t.id, stored: sql });
        expect(sql.length).toBeGreaterThan(0);
        expect(sql.length).toBeLessThan(contacts.length);
        expect(follower.events.filter((e) => e.name === `segment.${t.slug}.entry`).length).toBe(sql.length);
      }
    } finally {
      await aud.close();
    }
  });
});

// The condition compiler, table-tested: each case runs the compiled SQL on a real SQLite file (set
// and row shapes) and the in-memory evaluator, and both must select exactly the expected contacts.
import { afterAll, describe, expect, test } from "bun:test";
import { conditionReferences, validateCondition, type ConditionTree } from "../../src/audience/conditions";
import { Audience, OTHER } from "./support";

const DAY = 86_400_000;
const now = Date.UTC(2025, 0, 15, 12);
const iso = (ms: number) => new Date(ms).toISOString();

const aud = await Audience.open({
  contacts: [
    { id: "c1", email: "a@x.com", subscribed: true, createdAt: now - 20 * DAY, updatedAt: now - DAY,
      data: { plan: "pro", age: 30, score: "10", vip: true, signup: iso(now - 5 * DAY), city: "Berlin" } },
    { id: "c2", email: "b@y.org", subscribed: false, createdAt: now - 2 * DAY, updatedAt: now - 2 * DAY,
      data: { plan: "free", age: 9, score: "9.5", vip: false, signup: "2024-06-01" } },
    { id: "c3", email: "c@x.com", subscribed: true, createdAt: now - 100 * DAY, updatedAt: now - 50 * DAY, data: { founded: "0050-06-01" } },
    { id: "c4", email: "d@z.net", subscribed: true, createdAt: now - 10 * DAY, updatedAt: now - 10 * DAY,
      data: { plan: "Pro", age: "abc", tags: ["a"], nested: { a: 1 } } },
    { id: "c5", projectId: OTHER, email: "e@x.com", subscribed: true, createdAt: now - DAY, updatedAt: now - DAY, data: { plan: "pro" } },
  ],
  events: [
    { contactId: "c1", name: "purchase", createdAt: now - DAY },
    { contactId: "c1", name: "purchase", createdAt: now - 40 * DAY },
    { contactId: "c2", name: "purchase", createdAt: now - 60 * DAY },
    { contactId: "c3", name: "email.open", createdAt: now - 3 * DAY },
    { contactId: "c5", name: "purchase", createdAt: now - DAY, projectId: OTHER },
  ],
  segments: [
    { id: "S", type: "STATIC", condition: null },
    { id: "D", type: "DYNAMIC", condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }] } },
    { id: "L", type: "DYNAMIC", condition: { logic: "OR", groups: [{ filters: [{ field: "segment.L", operator: "memberOfSegment" }] }] } },
  ],
  members: [
    { segmentId: "S", contactId: "c2" },
    { segmentId: "S", contactId: "c3" },
  ],
});
afterAll(() => aud.close());

const one = (field: string, operator: string, value?: unknown, unit?: string): ConditionTree => ({
  logic: "AND",
  groups: [{ filters: [{ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) }] }],
});
const ALL = ["c1", "c2", "c3", "c4"];

const cases: Array<[string, ConditionTree, string[]]> = [
  ["email equals is case-insensitive", one("email", "equals", "A@X.COM"), ["c1"]],
  ["email notEquals", one("email", "notEquals", "a@x.com"), ["c2", "c3", "c4"]],
  ["email contains", one("email", "contains", "@X."), ["c1", "c3"]],
  ["email notContains", one("email", "notContains", "@x."), ["c2", "c4"]],
  ["email startsWith", one("email", "startsWith", "B"), ["c2"]],
  ["email endsWith", one("email", "endsWith", ".net"), ["c4"]],
  ["email LIKE wildcards are literal", one("email", "contains", "%"), []],
  ["subscribed equals true", one("subscribed", "equals", true), ["c1", "c3", "c4"]],
  ["subscribed notEquals true", one("subscribed", "notEquals", true), ["c2"]],
  ["data string equals is case-sensitive", one("data.plan", "equals", "pro"), ["c1"]],
  ["data notEquals matches a missing key", one("data.plan", "notEquals", "pro"), ["c2", "c3", "c4"]],
  ["data contains", one("data.plan", "contains", "r"), ["c1", "c2", "c4"]],
  ["data notContains matches a missing key", one("data.plan", "notContains", "r"), ["c3"]],
  ["data startsWith", one("data.plan", "startsWith", "P"), ["c4"]],
  ["data endsWith", one("data.plan", "endsWith", "ee"), ["c2"]],
  ["data exists", one("data.plan", "exists"), ["c1", "c2", "c4"]],
  ["data notExists", one("data.plan", "notExists"), ["c3"]],
  ["numbers compare numerically", one("data.age", "greaterThan", 10), ["c1"]],
  ["a numeric string value compares numerically", one("data.age", "lessThan", "10"), ["c2"]],
  ["stored numeric strings compare numerically", one("data.score", "greaterThan", 9), ["c1", "c2"]],
  ["numeric equals across number and string", one("data.score", "equals", 10), ["c1"]],
  ["gte / lte", { logic: "AND", groups: [{ filters: [{ field: "data.age", operator: "greaterThanOrEqual", value: 9 }, { field: "data.age", operator: "lessThanOrEqual", value: 30 }] }] }, ["c1", "c2"]],
  ["boolean equals true", one("data.vip", "equals", true), ["c1"]],
  ["boolean equals false", one("data.vip", "equals", false), ["c2"]],
  ["boolean notEquals true", one("data.vip", "notEquals", true), ["c2", "c3", "c4"]],
  ["date strings compare as dates", one("data.signup", "greaterThan", "2024-12-31"), ["c1"]],
  ["date lessThan an ISO date-time", one("data.signup", "lessThan", "2024-06-01T00:00:01Z"), ["c2"]],
  ["date equals", one("data.signup", "equals", "2024-06-01T00:00:00.000Z"), ["c2"]],
  ["data within days", one("data.signup", "within", 7, "days"), ["c1"]],
  ["a date in the years 0-99 is that year (not 1900-1999)", one("data.founded", "lessThan", "1000-01-01"), ["c3"]],
  ["a value in the years 0-99 is that year too", one("data.signup", "greaterThan", "0099-12-31T23:59:59Z"), ["c1", "c2"]],
  ["data olderThan days", one("data.signup", "olderThan", 30, "days"), ["c2"]],
  ["string comparison is lexicographic", one("data.city", "greaterThanOrEqual", "Berlin"), ["c1"]],
  ["arrays and objects only exist", one("data.tags", "exists"), ["c4"]],
  ["an array never equals a string", one("data.tags", "equals", "a"), []],
  ["createdAt within", one("createdAt", "within", 7, "days"), ["c2"]],
  ["createdAt olderThan weeks", one("createdAt", "olderThan", 4, "weeks"), ["c3"]],
  ["createdAt greaterThan a date-time", one("createdAt", "greaterThan", iso(now - 15 * DAY)), ["c2", "c4"]],
  ["updatedAt lessThan", one("updatedAt", "lessThan", iso(now - 5 * DAY)), ["c3", "c4"]],
  ["updatedAt within hours", one("updatedAt", "within", 25, "hours"), ["c1"]],
  ["event triggered", one("event.purchase", "triggered"), ["c1", "c2"]],
  ["event notTriggered", one("event.purchase", "notTriggered"), ["c3", "c4"]],
  ["event triggeredWithin", one("event.purchase", "triggeredWithin", 30, "days"), ["c1"]],
  ["event notTriggeredWithin", one("event.purchase", "notTriggeredWithin", 30, "days"), ["c2", "c3", "c4"]],
  ["event triggeredOlderThan: the last occurrence", one("event.purchase", "triggeredOlderThan", 30, "days"), ["c2"]],
  ["email.open triggered", one("email.open", "triggered"), ["c3"]],
  ["email.open triggeredWithin minutes", one("email.open", "triggeredWithin", 60, "minutes"), []],
  ["static segment membership", one("segment.S", "memberOfSegment"), ["c2", "c3"]],
  ["static segment non-membership", one("segment.S", "notMemberOfSegment"), ["c1", "c4"]],
  ["dynamic segment membership", one("segment.D", "memberOfSegment"), ["c1"]],
  ["a missing segment has no members", one("segment.nope", "memberOfSegment"), []],
  ["everyone is outside a missing segment", one("segment.nope", "notMemberOfSegment"), ALL],
  ["a self-referencing segment has no members", one("segment.L", "memberOfSegment"), []],
  ["OR of groups", { logic: "OR", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }, { filters: [{ field: "subscribed", operator: "equals", value: false }] }] }, ["c1", "c2"]],
  ["AND of groups", { logic: "AND", groups: [{ filters: [{ field: "subscribed", operator: "equals", value: true }] }, { filters: [{ field: "email", operator: "contains", value: "x.com" }] }] }, ["c1", "c3"]],
  ["nested conditions are ANDed with the group's filters", { logic: "AND", groups: [{ filters: [{ field: "subscribed", operator: "equals", value: true }], conditions: { logic: "OR", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "Pro" }] }, { filters: [{ field: "email.open", operator: "triggered" }] }] } }] }, ["c3", "c4"]],
  ["empty groups match everyone", { logic: "AND", groups: [] }, ALL],
  ["an empty group matches everyone", { logic: "AND", groups: [{ filters: [] }] }, ALL],
  ["OR with an empty group matches everyone", { logic: "OR", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }, { filters: [] }] }, ALL],
  ["lower-case logic is accepted", { logic: "or" as any, groups: [{ filters: [{ field: "data.plan", operator: "equals", value: "pro" }] }, { filters: [{ field: "data.plan", operator: "equals", value: "free" }] }] }, ["c1", "c2"]],
];

describe("compiled SQL and in-memory evaluation select the same contacts", () => {
  for (const [name, tree, expected] of cases) {
    test(name, async () => {
      expect(validateCondition(tree)).toEqual([]);
      expect(await aud.sqlIds(tree, { now })).toEqual(expected);
      expect(await aud.sqlIds(tree, { now, shape: "row" })).toEqual(expected);
      expect(aud.memIds(tree, { now })).toEqual(expected);
    });
  }
});

test("workflow mode: event.<key> and workflow.<key> read the facts; triggered operators still read events", async () => {
  const facts = { event: { amount: 150, order: { id: "o1" } }, workflow: { step: "a" } };
  const t1 = one("event.amount", "greaterThan", 100);
  expect(validateCondition(t1, { mode: "workflow" })).toEqual([]);
  expect(await aud.sqlIds(t1, { now, facts })).toEqual(ALL);
  expect(aud.memIds(t1, { now, facts })).toEqual(ALL);
  const t2 = { logic: "AND" as const, groups: [{ filters: [{ field: "event.order.id", operator: "equals", value: "o1" }, { field: "workflow.step", operator: "equals", value: "a" }, { field: "event.purchase", operator: "triggered" }] }] };
  expect(validateCondition(t2, { mode: "workflow" })).toEqual([]);
  expect(await aud.sqlIds(t2, { now, facts })).toEqual(["c1", "c2"]);
  expect(aud.memIds(t2, { now, facts })).toEqual(["c1", "c2"]);
  expect(await aud.sqlIds(one("workflow.step", "equals", "b"), { now, facts })).toEqual([]);
  expect(validateCondition(one("workflow.step", "equals", "a"))[0]?.field).toBe("condition.groups[0].filters[0].field");
});

describe("validation names the bad part of the bad filter", () => {
  const bad: Array<[string, unknown, string, string?]> = [
    ["not an object", "x", "condition"],
    ["unknown logic", { logic: "XOR", groups: [] }, "condition.logic"],
    ["groups missing", { logic: "AND" }, "condition.groups"],
    ["unknown operator", { logic: "AND", groups: [{ filters: [{ field: "email", operator: "equals", value: "a" }, { field: "email", operator: "like", value: "a" }] }] }, "condition.groups[0].filters[1].operator"],
    ["unknown field form", one("plan", "equals", "x"), "condition.groups[0].filters[0].field"],
    ["unknown email event", one("email.opened", "triggered"), "condition.groups[0].filters[0].field"],
    ["operator that does not fit the field", one("event.purchase", "equals", "x"), "condition.groups[0].filters[0].operator"],
    ["greaterThan on email", one("email", "greaterThan", "a"), "condition.groups[0].filters[0].operator"],
    ["triggered on data", one("data.plan", "triggered"), "condition.groups[0].filters[0].operator"],
    ["missing value", one("data.plan", "equals"), "condition.groups[0].filters[0].value"],
    ["missing unit", one("event.purchase", "triggeredWithin", 3), "condition.groups[0].filters[0].unit"],
    ["unknown unit", one("createdAt", "within", 3, "fortnights"), "condition.groups[0].filters[0].unit"],
    ["non-numeric amount", one("createdAt", "within", "soon", "days"), "condition.groups[0].filters[0].value"],
    ["subscribed needs a boolean", one("subscribed", "equals", "yes"), "condition.groups[0].filters[0].value"],
    ["createdAt needs a date", one("createdAt", "greaterThan", "yesterday-ish"), "condition.groups[0].filters[0].value"],
    ["nested path", { logic: "AND", groups: [{ filters: [], conditions: { logic: "OR", groups: [{ filters: [{ field: "data.x", operator: "nope" }] }] } }] }, "condition.groups[0].conditions.groups[0].filters[0].operator"],
    ["filters not an array", { logic: "AND", groups: [{ filters: {} }] }, "condition.groups[0].filters"],
  ];
  for (const [name, tree, field] of bad) {
    test(name, async () => {
      const issues = validateCondition(tree);
      expect(issues.length).toBeGreaterThan(0);
      expect(issues[0]!.field).toBe(field);
    });
  }
  test("the path prefix is the caller's", () => {
    expect(validateCondition(one("x", "equals", 1), { path: "audienceCondition" })[0]!.field).toBe("audienceCondition.groups[0].filters[0].field");
  });
  test("value is optional for operators that take none", () => {
    expect(validateCondition(one("segment.abc", "memberOfSegment"))).toEqual([]);
    expect(validateCondition(one("data.plan", "exists", "ignored"))).toEqual([]);
  });
});

test("conditionReferences lists data fields, events and segments", () => {
  const t: ConditionTree = { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "equals", value: 1 }, { field: "email.open", operator: "triggered" }], conditions: { logic: "OR", groups: [{ filters: [{ field: "event.signup", operator: "triggered" }, { field: "segment.S", operator: "memberOfSegment" }] }] } }] };
  expect(conditionReferences(t)).toEqual({ fields: ["plan"], events: ["email.open", "signup"], segments: ["S"] });
});

test("contactMatches reads one contact of the project; segmentAudienceWhere selects a segment's members", async () => {
  const { contactMatches } = await import("../../src/audience/conditions");
  const { segmentAudienceWhere } = await import("../../src/audience/segments/members");
  const tree = one("segment.D", "memberOfSegment");
  expect(await contactMatches(aud.db, tree, { projectId: "p1", contactId: "c1", now })).toBe(true);
  expect(await contactMatches(aud.db, tree, { projectId: "p1", contactId: "c2", now })).toBe(false);
  expect(await contactMatches(aud.db, one("data.plan", "equals", "pro"), { projectId: "p1", contactId: "c5", now })).toBe(false);
  const ids = async (seg: string) =>
    (await aud.db.selectFrom("contacts as c").select("c.id").where("c.project_id", "=", "p1").where(await segmentAudienceWhere(aud.db, "p1", seg, now)).orderBy("c.id").execute()).map((r) => r.id);
  expect(await ids("S")).toEqual(["c2", "c3"]);
  expect(await ids("D")).toEqual(["c1"]);
  await expect(segmentAudienceWhere(aud.db, "p2", "S", now)).rejects.toThrow("Segment not found");
});

describe("field indexes (src/audience/segments/field-indexes.ts)", () => {
  test("one index per AND group: its text equality data fields, sorted, at most three; a field alone gets its own", async () => {
    const { equalsFieldSets, fieldIndexName } = await import("../../src/audience/segments/field-indexes");
    const eq = (field: string) => ({ field, operator: "equals", value: "x" });
    const tree = {
      logic: "OR",
      groups: [
        {
          filters: [
            eq("data.plan"),
            eq("data.country"),
            { field: "data.visits", operator: "greaterThan", value: 1 },
            eq("email"),
            // Numbers, booleans, dates and JSON-looking text compile to forms no index serves.
            { field: "data.age", operator: "equals", value: 30 },
            { field: "data.zip", operator: "equals", value: "0123" },
            { field: "data.vip", operator: "equals", value: true },
            { field: "data.since", operator: "equals", value: "2024-01-01" },
            { field: "data.tags", operator: "equals", value: "[1]" },
          ],
        },
        { filters: [eq("data.plan")], conditions: { logic: "AND", groups: [{ filters: [eq("data.d"), eq("data.c"), eq("data.b"), eq("data.a")] }] } },
        { filters: [{ field: "data.plan", operator: "notEquals", value: "x" }] },
      ],
    } as unknown as ConditionTree;
    expect(equalsFieldSets(tree)).toEqual([["country", "plan"], ["plan"], ["a", "b", "c"]]);
    expect(fieldIndexName(["country", "plan"])).toBe(`contacts_data_${Buffer.from("country").toString("hex")}_${Buffer.from("plan").toString("hex")}`);
    expect(fieldIndexName("plan")).toBe(fieldIndexName(["plan"]));
  });
});

// Semantic fuzzing of the real HTTP server: structurally valid-looking but edge-case requests against the richer
// endpoints (segments, campaign audiences and schedules, workflow steps/transitions/executions, contact data,
// /v1/track, /v1/send). Every answer is a 2xx or the spec's error (envelope, or the bare 400 `{ error }`), never a
// 5xx; a refused request writes nothing. Deterministic (fixed seed); FUZZ_RUNS multiplies the runs, FUZZ_SEED
// changes the seed, FUZZ_VERBOSE prints status histograms. Complements fuzz.test.ts (syntactic: malformed bodies).
import { rawGet } from "../../src/db/raw";
import { afterAll, beforeAll, beforeEach, expect, setDefaultTimeout, test } from "bun:test";
import fc from "fast-check";
import type { TestDns } from "../support/dns";
import type { SmtpSink } from "../support/smtp-sink";
import type { Account, ApiResponse, TestServer } from "../support/server";
import { deliveryEnv, type DeliveryEnv } from "../support/delivery";

setDefaultTimeout(120_000);

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : 20_240_229;
const SCALE = Number(process.env.FUZZ_RUNS ?? 1);
const runs = (n: number) => Math.max(1, Math.round(n * SCALE));
const SENDER = "semfuzz.test";

let srv: TestServer;
let dns: TestDns;
let sink: SmtpSink;
let acc: Account;
let key: string;
let env: DeliveryEnv;
/** Ids of fixtures the generators may reference. */
const fx = { dynamicSeg: "", staticSeg: "", templateId: "", contactId: "" };

beforeAll(async () => {
  // Recipients at rcpt.test are delivered to a sink: bounces would suppress addresses and, past 10%, disable the project.
  env = await deliveryEnv({ mailDomain: "rcpt.test", senderDomain: SENDER, config: { rateLimit: 1_000_000 } });
  ({ srv, dns, sink, acct: acc } = env);
  key = acc.secretKey;
  // Contacts whose data covers every JSON kind and the date/number-looking strings the compiler special-cases.
  const datas: Record<string, unknown>[] = [
    { plan: "pro", n: 5, s: "10", d: "2024-02-29", dt: "2024-01-01T10:00:00+02:00", b: true, o: { x: 1 }, a: [1, 2], z: null },
    { plan: "free", n: -0.5, s: "abc", d: "0000-01-01", dt: "9999-12-31T23:59:59Z", b: false, "é ü": "ünï", "a.b": 1, "sp ace": "x" },
    { n: 1e300, s: "-1.5", d: "2024-13-45", big: "9".repeat(400) },
    {},
  ];
  for (let i = 0; i < datas.length; i++) {
    const r = await srv.api("/contacts", { key, body: { email: `c${i}@rcpt.test`, subscribed: i % 2 === 0, data: datas[i] } });
    if (r.status !== 201) throw new Error(`contact: ${r.status} ${r.text}`);
    fx.contactId ||= r.body.id;
  }
  for (const [email, event] of [["c0@rcpt.test", "signup"], ["c1@rcpt.test", "purchase"], ["c2@rcpt.test", "signup"]]) {
    const r = await srv.api("/v1/track", { key, body: { email, event, data: { amount: 3 } } });
    if (r.status !== 200) throw new Error(`track: ${r.status} ${r.text}`);
  }
  const dyn = await srv.api("/segments", { key, body: { name: "Fixture dynamic", condition: { logic: "AND", groups: [{ filters: [{ field: "data.plan", operator: "exists" }] }] } } });
  const st = await srv.api("/segments", { key, body: { name: "Fixture static", type: "STATIC" } });
  if (dyn.status !== 201 || st.status !== 201) throw new Error(`fixture segments: ${dyn.text} ${st.text}`);
  fx.dynamicSeg = dyn.body.id;
  fx.staticSeg = st.body.id;
  await srv.api(`/segments/${fx.staticSeg}/members`, { key, body: { emails: ["c0@rcpt.test", "c3@rcpt.test"] } });
  const tpl = await srv.api("/templates", { key, body: { name: "T", subject: "Hi", body: "<p>{{email}}</p>", from: `news@${SENDER}`, type: "MARKETING" } });
  if (tpl.status !== 201) throw new Error(`template: ${tpl.status} ${tpl.text}`);
  fx.templateId = tpl.body.id ?? tpl.body.data?.id;
});
afterAll(async () => {
  if (process.env.FUZZ_VERBOSE) {
    console.log(JSON.stringify(hist));
    for (const [m, n] of Object.entries(samples).sort((a, b) => b[1] - a[1]).slice(0, 60)) console.log(n, m);
    srv.ctx.log?.flush?.();
    const lines = srv.logs.join("").split("\n").filter((l) => /error|warn/i.test(l));
    const kinds: Record<string, number> = {};
    for (const l of lines) kinds[l.replace(/[0-9a-f-]{36}/g, "ID").replace(/\d+/g, "N").slice(0, 300)] = (kinds[l.replace(/[0-9a-f-]{36}/g, "ID").replace(/\d+/g, "N").slice(0, 300)] ?? 0) + 1;
    for (const [k, n] of Object.entries(kinds).sort((a, b) => b[1] - a[1]).slice(0, 40)) console.log("LOG", n, k);
  }
  await env?.close();
});

// ---------------------------------------------------------------------------------------------------------------
// Checks

let failures: string[] = [];
beforeEach(() => {
  failures = [];
});
/** The failures of a test, deduplicated by their first 160 characters, at most 12 (the first of each kind). */
function report(): string[] {
  const seen = new Set<string>();
  return failures.filter((f) => !seen.has(f.slice(0, 160)) && seen.add(f.slice(0, 160))).slice(0, 12);
}
const samples: Record<string, number> = {};
const hist: Record<string, Record<string | number, number>> = {};

/** Known bugs outside the files this suite may fix: `skip(where)` names them (see the comments at each use). */
function fail(where: string, res: ApiResponse, why: string) {
  failures.push(`${why}: ${where} -> ${res.status} ${res.text.slice(0, 400)}`);
}

/** 2xx, or a 4xx in the envelope (the bare `{ error }` only for 400). Returns whether it was a 2xx. */
function check(label: string, where: string, res: ApiResponse): boolean {
  (hist[label] ??= {})[res.status] = (hist[label]![res.status] ?? 0) + 1;
  if (res.status >= 500) {
    fail(where, res, "5xx");
    return false;
  }
  if (res.status < 300) return true;
  const b = res.body;
  if (process.env.FUZZ_VERBOSE) {
    const m = `${label} ${res.status} ${JSON.stringify(b?.error?.errors?.[0] ?? b?.error?.message ?? b?.error)}`.replace(/\d+/g, "N").slice(0, 200);
    samples[m] = (samples[m] ?? 0) + 1;
  }
  const bare = res.status === 400 && b && typeof b === "object" && typeof b.error === "string" && Object.keys(b).length === 1;
  if (bare) return false;
  // The fixture project must stay usable, or every later answer is a 403 that proves nothing.
  if (b?.error?.code === "PROJECT_DISABLED" || b?.error?.code === "RATE_LIMIT_EXCEEDED") fail(where, res, "fixture project unusable");
  const ok =
    b &&
    typeof b === "object" &&
    b.success === false &&
    b.error?.statusCode === res.status &&
    typeof b.error.code === "string" &&
    typeof b.error.message === "string" &&
    typeof b.error.requestId === "string" &&
    typeof b.timestamp === "string" &&
    (b.error.errors === undefined || Array.isArray(b.error.errors));
  if (!ok) fail(where, res, "not the envelope");
  if (/\bat .*\.(ts|js):\d+/.test(res.text)) fail(where, res, "stack trace");
  return false;
}

/**
 * A 422 is VALIDATION_ERROR whose every `errors[].field` starts with one of `prefixes` (the condition, or the other
 * fields the generator may get wrong), or is `body` with code too_deep: the global JSON depth cap (32 levels),
 * which a condition nested past the 8-level limit can reach before the condition validator does.
 */
function checkPaths(where: string, res: ApiResponse, prefixes: string[]) {
  if (res.status !== 422) return;
  if (res.body?.error?.code !== "VALIDATION_ERROR") return fail(where, res, "422 not VALIDATION_ERROR");
  const errs = (res.body?.error?.errors ?? []) as { field: string; code: string }[];
  if (!errs.length) return fail(where, res, "422 without errors[]");
  for (const e of errs) {
    if (typeof e.field !== "string") return fail(where, res, "errors[].field not a string");
    if (e.field === "body" && e.code === "too_deep") continue;
    if (!prefixes.some((p) => e.field === p || e.field.startsWith(p + ".") || e.field.startsWith(p + "["))) return fail(where, res, `errors[].field ${e.field} outside ${prefixes}`);
  }
}

async function count(table: string, where = "project_id = ?"): Promise<number> {
  return (await rawGet<{ n: number }>(srv.ctx.db, srv.ctx.store.engine, `SELECT count(*) AS n FROM "${table}" WHERE ${where}`, [acc.projectId]))!.n;
}

const short = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 600 ? s.slice(0, 600) + `…(${s.length})` : s;
};

// ---------------------------------------------------------------------------------------------------------------
// Generators: the vocabulary of decisions.md "Segments and conditions", valid and not.

const OPERATORS = [
  "equals", "notEquals", "contains", "notContains", "startsWith", "endsWith", "greaterThan", "lessThan", "greaterThanOrEqual",
  "lessThanOrEqual", "exists", "notExists", "within", "olderThan", "triggered", "notTriggered", "triggeredWithin",
  "triggeredOlderThan", "notTriggeredWithin", "memberOfSegment", "notMemberOfSegment",
];
const oddKey = fc.oneof(
  fc.constantFrom("plan", "n", "s", "d", "dt", "b", "o", "a", "z", "big", "é ü", "a.b", "sp ace", "missing", "x".repeat(128), "x".repeat(129),
    "", " ", "'", "it's", '"q"', "back\\slash", "tab\there", "nul\u0000", "日本", "🙂", "$", "$.a", "a[0]", "*", "%", "_", "--", "a'--"),
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 6 }),
);
const fieldArb = (workflow: boolean) =>
  fc.oneof(
    fc.constantFrom("email", "subscribed", "createdAt", "updatedAt", "Email", "data", "data.", ".x", "event.", "segment.", "email.", "email.opened", "unknown.x", ""),
    oddKey.map((k) => `data.${k}`),
    fc.oneof(fc.constantFrom("signup", "purchase", "contact.subscribed", "email.sent", "segment.x.entry", "e".repeat(255), "e".repeat(256)), oddKey).map((k) => `event.${k}`),
    fc.constantFrom("sent", "delivery", "open", "click", "bounce", "complaint", "Open", "opened").map((k) => `email.${k}`),
    fc.constantFrom(() => fx.dynamicSeg, () => fx.staticSeg, () => "00000000-0000-4000-8000-000000000000", () => "x".repeat(101), () => "'; DROP TABLE contacts; --").map((f) => `segment.${f()}`),
    ...(workflow ? [oddKey.map((k) => `workflow.${k}`), fc.constantFrom("workflow.a.b", "event.amount", "event.a.b.c")] : []),
  );
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    0, -0, 1, -1, 0.5, 365, 1e9, 1e15, 8.64e15, 8.64e15 + 1, 2 ** 53, 2 ** 63, 2 ** 64, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER,
    "1", "-1", "0", "-0", "1.5", "1.", ".5", "-.5", ".", "-", "--1", "1e5", "1e400", "NaN", "Infinity", "-Infinity", "0x10", "9".repeat(400), "-" + "9".repeat(400),
    "", " ", "true", "null", "pro", "PRO", "%", "_", "'", '"', "\\", "\u0000", "é", "🙂", "x".repeat(10_000),
    "2024-02-29", "2024-02-30", "2023-02-29", "0000-01-01", "0001-01-01", "9999-12-31", "2024-13-01", "2024-00-10", "2024-01-32",
    "2024-01-01T24:00:00", "2024-01-01T23:59:60", "2024-01-01T10:00:00+02:00", "2024-01-01T10:00:00-14:00", "2024-01-01T10:00:00+15:00",
    "2024-01-01T10:00:00.123456789Z", "2024-01-01 10:00", "2024-01-01t10:00z", "+275760-09-13T00:00:00.000Z", "+275760-09-14T00:00:00.000Z",
    "-271821-04-20T00:00:00.000Z", "-000001-01-01T00:00:00Z", "Tue, 01 Jan 2024 00:00:00 GMT", "now", "2024",
    true, false, null, [], [1, "a"], {}, { a: 1 }, { value: 1, persistent: false },
  ),
  fc.string({ maxLength: 20 }),
  fc.double(),
  fc.integer(),
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
);
const unitArb = fc.oneof(
  fc.constantFrom<unknown>(undefined, undefined, "minutes", "hours", "days", "weeks", "months", "Days", "", null, 1, ["days"], "seconds", "__proto__", "constructor", "toString"),
);
const STRING_OPS = ["equals", "notEquals", "contains", "notContains", "startsWith", "endsWith"];
const COMPARE_OPS = ["greaterThan", "lessThan", "greaterThanOrEqual", "lessThanOrEqual"];
const EVENT_OPS = ["triggered", "notTriggered", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"];
const TIMED = new Set(["within", "olderThan", "triggeredWithin", "triggeredOlderThan", "notTriggeredWithin"]);
const VALUE_OPS = [...STRING_OPS, ...COMPARE_OPS, "exists", "notExists", "within", "olderThan"];
const amountArb = fc.oneof(
  fc.constantFrom<unknown>(0, -0, 1, 0.5, 1e-300, 5e-324, 365, 2 ** 31, 2 ** 53, 2 ** 64, 1e15, 1e300, 1e308, "0", "1", "1.5", "00", "9".repeat(20), "9".repeat(400), ".5", "1."),
  fc.double({ min: 0, noNaN: true }),
);
const validUnit = fc.constantFrom("minutes", "hours", "days", "weeks");
/** A filter whose operator fits its field (so the tree usually validates and the edge values reach the SQL). */
const fittingFilterArb = (workflow: boolean): fc.Arbitrary<unknown> =>
  fc.oneof(
    fc.record({ field: fc.constant("email"), operator: fc.constantFrom(...STRING_OPS), value: fc.oneof(valueArb, fc.string()) }),
    fc.record({ field: fc.constant("subscribed"), operator: fc.constantFrom("equals", "notEquals"), value: fc.boolean() }),
    fc.record({ field: fc.constantFrom("createdAt", "updatedAt"), operator: fc.constantFrom("equals", "notEquals", ...COMPARE_OPS), value: valueArb }),
    fc.record({ field: fc.constantFrom("createdAt", "updatedAt"), operator: fc.constantFrom("within", "olderThan"), value: amountArb, unit: validUnit }),
    fc.record({ field: oddKey.map((k) => `data.${k}`), operator: fc.constantFrom(...VALUE_OPS.filter((o) => !TIMED.has(o))), value: valueArb }),
    fc.record({ field: oddKey.map((k) => `data.${k}`), operator: fc.constantFrom("within", "olderThan"), value: amountArb, unit: validUnit }),
    fc.record({
      field: fc.oneof(fc.constantFrom("signup", "purchase", "email.sent", "e".repeat(255), "Signup", "a.b.c", "🙂", "'", "%").map((n) => `event.${n}`), fc.constantFrom("sent", "open", "click", "bounce").map((k) => `email.${k}`)),
      operator: fc.constantFrom(...EVENT_OPS),
      value: amountArb,
      unit: validUnit,
    }),
    fc.record({ field: fc.constantFrom(() => fx.dynamicSeg, () => fx.staticSeg).map((f) => `segment.${f()}`), operator: fc.constantFrom("memberOfSegment", "notMemberOfSegment"), value: valueArb }, { requiredKeys: ["field", "operator"] }),
    ...(workflow
      ? [
          fc.record({ field: fc.oneof(oddKey, fc.constantFrom("a.b", "amount", "a.b.c", "__proto__", "constructor", "toString")).chain((k) => fc.constantFrom(`workflow.${k}`, `event.${k}`)), operator: fc.constantFrom(...VALUE_OPS.filter((o) => !TIMED.has(o))), value: valueArb }),
          fc.record({ field: fc.constantFrom("workflow.d", "event.d", "workflow.a.b"), operator: fc.constantFrom("within", "olderThan"), value: amountArb, unit: validUnit }),
        ]
      : []),
  );
const filterArb = (workflow: boolean) =>
  fc.oneof(
    { weight: 30, arbitrary: fittingFilterArb(workflow) },
    { weight: 10, arbitrary: fc.record({ field: fieldArb(workflow), operator: fc.constantFrom(...OPERATORS), value: valueArb, unit: unitArb }, { requiredKeys: ["field", "operator"] }) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(null, 1, "x", [], {}, { field: "email" }, { field: "email", operator: "EQUALS", value: "a" }, { field: 1, operator: "equals", value: 1 }) },
  );

type Tree = { logic: unknown; groups: unknown };
/** A condition tree up to `depth` levels (past 8 on purpose sometimes), with up to `maxFilters` filters per group. */
function treeArb(workflow: boolean, depth: number, maxFilters = 4): fc.Arbitrary<Tree> {
  const logic = fc.oneof({ weight: 5, arbitrary: fc.constantFrom<unknown>("AND", "OR", "and", "Or") }, { weight: 1, arbitrary: fc.constantFrom<unknown>("XOR", "", undefined, null, 1) });
  const group: fc.Arbitrary<unknown> =
    depth <= 1
      ? fc.record({ filters: fc.array(filterArb(workflow), { maxLength: maxFilters }) }, { requiredKeys: [] })
      : fc.record(
          { filters: fc.oneof(fc.array(filterArb(workflow), { maxLength: maxFilters }), fc.constantFrom<unknown>(null, "x", {})), conditions: fc.oneof(treeArb(workflow, depth - 1, maxFilters), fc.constant(null)) },
          { requiredKeys: [] },
        );
  return fc.record({ logic, groups: fc.oneof({ weight: 10, arbitrary: fc.array(group, { maxLength: 2 }) }, { weight: 1, arbitrary: fc.constantFrom<unknown>(null, {}, "x", []) }) }) as fc.Arbitrary<Tree>;
}
/** A straight chain of `levels` nested trees (to probe the 8-level limit exactly). */
function chain(levels: number, leaf: unknown): Tree {
  let t: Tree = { logic: "AND", groups: [{ filters: [leaf] }] };
  for (let i = 1; i < levels; i++) t = { logic: "OR", groups: [{ filters: [], conditions: t }] };
  return t;
}
/** One group with `n` copies of a filter (the 200-filter limit). */
const wide = (n: number, leaf: unknown): Tree => ({ logic: "AND", groups: [{ filters: Array.from({ length: n }, () => leaf) }] });
const conditionArb = (workflow: boolean) =>
  fc.oneof(
    { weight: 12, arbitrary: treeArb(workflow, 3, 3) },
    { weight: 2, arbitrary: fc.tuple(fc.integer({ min: 7, max: 10 }), filterArb(workflow)).map(([n, f]) => chain(n, f)) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom(199, 200, 201, 400), filterArb(workflow)).map(([n, f]) => wide(n, f)) },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(null, "x", [], {}, 1, { logic: "AND" }, { groups: [] }) },
  );

// ---------------------------------------------------------------------------------------------------------------
// Segments

test("segments: random condition trees create/patch, then refresh, compute and members never 5xx; members total = refresh count", async () => {
  await fc.assert(
    fc.asyncProperty(
      conditionArb(false),
      fc.constantFrom<unknown>(undefined, "DYNAMIC", "STATIC"),
      fc.boolean(),
      conditionArb(false),
      fc.constantFrom("", "?pageSize=0", "?pageSize=1000", "?page=0", "?page=-1", "?page=1e3", "?pageSize=1.5", "?pageSize=abc", "?page=99999999999999999999"),
      async (condition, type, track, patchCondition, query) => {
        const body: Record<string, unknown> = { name: "Fuzz", condition, trackMembership: track };
        if (type !== undefined) body.type = type;
        const where = `POST /segments ${short(body)}`;
        const before = await count("segments");
        const res = await srv.api("/segments", { key, body });
        if (!check("POST /segments", where, res)) {
          checkPaths(where, res, ["condition"]);
          if (await count("segments") !== before) fail(where, res, "segment written on refusal");
          return;
        }
        if (res.status !== 201) fail(where, res, "create not 201");
        const id = res.body.id as string;
        try {
          const refresh = await srv.api(`/segments/${id}/refresh`, { key, method: "POST" });
          check("refresh", `refresh ${where}`, refresh);
          const compute = await srv.api(`/segments/${id}/compute`, { key, method: "POST" });
          check("compute", `compute ${where}`, compute);
          const members = await srv.api(`/segments/${id}/contacts${query}`, { key });
          check("members", `members${query} ${where}`, members);
          if (refresh.status === 200 && members.status === 200 && !track && res.body.type === "DYNAMIC" && members.body.total !== refresh.body.memberCount) {
            fail(where, members, `members total ${members.body.total} != refresh memberCount ${refresh.body.memberCount}`);
          }
          if (refresh.status === 200 && res.body.memberCount !== refresh.body.memberCount && res.body.type === "DYNAMIC") {
            fail(where, refresh, `create memberCount ${res.body.memberCount} != refresh ${refresh.body.memberCount}`);
          }
          const pw = `PATCH /segments/${id} (${res.body.type}) ${short({ condition: patchCondition })}`;
          const stored = JSON.stringify((await srv.api(`/segments/${id}`, { key })).body);
          const patch = await srv.api(`/segments/${id}`, { key, method: "PATCH", body: { condition: patchCondition } });
          if (!check("PATCH /segments", pw, patch)) {
            checkPaths(pw, patch, ["condition"]);
            const after = JSON.stringify((await srv.api(`/segments/${id}`, { key })).body);
            if (after !== stored) fail(pw, patch, "segment changed by a refused PATCH");
          } else {
            const r2 = await srv.api(`/segments/${id}/refresh`, { key, method: "POST" });
            check("refresh", `refresh after ${pw}`, r2);
            const m2 = await srv.api(`/segments/${id}/contacts`, { key });
            check("members", `members after ${pw}`, m2);
            if (r2.status === 200 && m2.status === 200 && !track && res.body.type === "DYNAMIC" && m2.body.total !== r2.body.memberCount) {
              fail(pw, m2, `members total ${m2.body.total} != refresh memberCount ${r2.body.memberCount}`);
            }
          }
        } finally {
          const del = await srv.api(`/segments/${id}`, { key, method: "DELETE" });
          check("DELETE /segments", `delete ${id}`, del);
        }
      },
    ),
    { numRuns: runs(200), seed: SEED },
  );
  expect(report()).toEqual([]);
});

// Tracked segments follow contact writes (/v1/track in memory or per-contact SQL, PATCH/POST /contacts through
// contactsChanged): after a compute, random writes, and nothing else, a second compute has nothing to add or remove,
// and the stored memberCount equals the live count. Conditions read the keys and events the writes touch.
const K = ["plan", "n", "s", "d"];
const trackedFilterArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.record({ field: fc.constantFrom(...K).map((k) => `data.${k}`), operator: fc.constantFrom(...VALUE_OPS.filter((o) => !TIMED.has(o))), value: valueArb.filter((v) => v !== null && (typeof v !== "object")) }),
  fc.record({ field: fc.constantFrom(...K).map((k) => `data.${k}`), operator: fc.constantFrom("within", "olderThan"), value: amountArb, unit: validUnit }),
  fc.record({ field: fc.constant("email"), operator: fc.constantFrom(...STRING_OPS), value: fc.constantFrom("w", "W1", "@rcpt.test", "", "c0@rcpt.test") }),
  fc.record({ field: fc.constant("subscribed"), operator: fc.constantFrom("equals", "notEquals"), value: fc.boolean() }),
  fc.record({ field: fc.constantFrom("createdAt", "updatedAt"), operator: fc.constantFrom("within", "olderThan"), value: amountArb, unit: validUnit }),
  fc.record({ field: fc.constantFrom("createdAt", "updatedAt"), operator: fc.constantFrom(...COMPARE_OPS, "equals", "notEquals"), value: fc.constantFrom<unknown>(0, "2024-01-01", "0000-01-01", 8.64e15, () => srv.clock.now()).map((v) => (typeof v === "function" ? v() : v)) }),
  fc.record({ field: fc.constantFrom("event.signup", "event.purchase", "event.other"), operator: fc.constantFrom(...EVENT_OPS), value: amountArb, unit: validUnit }),
  fc.record({ field: fc.constantFrom(() => fx.dynamicSeg, () => fx.staticSeg).map((f) => `segment.${f()}`), operator: fc.constantFrom("memberOfSegment", "notMemberOfSegment") }),
);
const trackedTreeArb = (depth: number): fc.Arbitrary<unknown> =>
  fc.record({
    logic: fc.constantFrom("AND", "OR"),
    groups: fc.array(
      depth <= 1
        ? fc.record({ filters: fc.array(trackedFilterArb, { maxLength: 3 }) })
        : fc.record({ filters: fc.array(trackedFilterArb, { maxLength: 3 }), conditions: trackedTreeArb(depth - 1) }, { requiredKeys: ["filters"] }),
      { minLength: 1, maxLength: 2 },
    ),
  });
const writeArb = fc.record({
  kind: fc.constantFrom("track", "track", "patch", "post"),
  who: fc.constantFrom("new", "c0", "c1", "c2", "c3", "w1"),
  data: fc.dictionary(fc.constantFrom(...K), fc.oneof(valueArb, fc.record({ value: valueArb, persistent: fc.boolean() })), { maxKeys: 3 }),
  event: fc.constantFrom("signup", "purchase", "other"),
  subscribed: fc.constantFrom<unknown>(undefined, true, false),
});
let fresh = 0;

test("segments: tracked memberships follow random contact writes exactly (compute finds nothing to fix)", async () => {
  // Frozen clock: time-relative filters (within 0 units, triggeredWithin) must not move between the write and the check.
  srv.clock.set(srv.clock.now());
  try {
  await fc.assert(
    fc.asyncProperty(trackedTreeArb(2), fc.array(writeArb, { minLength: 1, maxLength: 4 }), async (condition, writes) => {
      const res = await srv.api("/segments", { key, body: { name: "Tracked fuzz", condition, trackMembership: true } });
      const where = `tracked ${short(condition)}`;
      if (!check("POST tracked", where, res)) return;
      const id = res.body.id as string;
      try {
        check("compute", `first compute ${where}`, await srv.api(`/segments/${id}/compute`, { key, method: "POST" }));
        const done: string[] = [];
        for (const w of writes) {
          const email = w.who === "new" ? `new${++fresh}@rcpt.test` : `${w.who}@rcpt.test`;
          const body: Record<string, unknown> = { data: w.data };
          if (w.subscribed !== undefined) body.subscribed = w.subscribed;
          let r: ApiResponse;
          if (w.kind === "track") r = await srv.api("/v1/track", { key, body: { ...body, email, event: w.event } });
          else if (w.kind === "post") r = await srv.api("/contacts", { key, body: { ...body, email } });
          else {
            const c = await srv.api(`/contacts?search=${encodeURIComponent(email)}`, { key });
            const cid = c.body?.data?.find((x: { email: string }) => x.email === email)?.id;
            if (!cid) continue;
            r = await srv.api(`/contacts/${cid}`, { key, method: "PATCH", body });
          }
          done.push(`${w.kind} ${email} ${short(body)} ${w.kind === "track" ? w.event : ""} -> ${r.status}`);
          check(`tracked ${w.kind}`, `${w.kind} ${email} ${short(body)}`, r);
        }
        await srv.drainJobs();
        const stored = (await srv.api(`/segments/${id}`, { key })).body.memberCount;
        const compute = await srv.api(`/segments/${id}/compute`, { key, method: "POST" });
        if (check("compute", `second compute ${where}`, compute) && (compute.body.added !== 0 || compute.body.removed !== 0)) {
          fail(`${where} writes ${done.join("; ")}`, compute, "tracked membership did not follow the writes");
        }
        const refresh = await srv.api(`/segments/${id}/refresh`, { key, method: "POST" });
        if (check("refresh", `refresh ${where}`, refresh) && refresh.body.memberCount !== stored) {
          fail(`${where} writes ${done.join("; ")}`, refresh, `stored memberCount ${stored} != live ${refresh.body.memberCount}`);
        }
      } finally {
        await srv.api(`/segments/${id}`, { key, method: "DELETE" });
      }
    }),
    { numRuns: runs(120), seed: SEED },
  );
  } finally {
    (srv.clock as unknown as { frozenAt?: number }).frozenAt = undefined; // the clock runs again
  }
  expect(report()).toEqual([]);
});

test("segments: STATIC members with odd addresses answer 2xx/4xx and write nothing on refusal", async () => {
  const emailArb = fc.oneof(
    fc.emailAddress(),
    fc.constantFrom("", " ", "a", "a@", "@b", "a@b", "A@RCPT.TEST", "c0@rcpt.test", " c1@rcpt.test ", "a@b..c", "a@[127.0.0.1]", "\"q\"@x.test", "é@x.test", "a@é.test", "a".repeat(300) + "@x.test", "a@x.test\r\nBcc: b@x.test", "a\u0000@x.test"),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(emailArb, { minLength: 0, maxLength: 5 }), fc.constantFrom<unknown>(undefined, true, false, "yes", null), fc.constantFrom<unknown>(undefined, true, false, 1), fc.boolean(), async (emails, createMissing, subscribed, remove) => {
      const body: Record<string, unknown> = { emails };
      if (createMissing !== undefined) body.createMissing = createMissing;
      if (subscribed !== undefined) body.subscribed = subscribed;
      const where = `${remove ? "DELETE" : "POST"} /segments/static/members ${short(body)}`;
      const before = [await count("contacts"), await count("segment_members", "segment_id IN (SELECT id FROM segments WHERE project_id = ?)")];
      const res = await srv.api(`/segments/${fx.staticSeg}/members`, { key, method: remove ? "DELETE" : "POST", body });
      if (!check("members write", where, res)) {
        const after = [await count("contacts"), await count("segment_members", "segment_id IN (SELECT id FROM segments WHERE project_id = ?)")];
        if (JSON.stringify(after) !== JSON.stringify(before)) fail(where, res, `write on refusal ${before} -> ${after}`);
      }
    }),
    { numRuns: runs(60), seed: SEED },
  );
  // Restore the fixture membership.
  await srv.api(`/segments/${fx.staticSeg}/members`, { key, body: { emails: ["c0@rcpt.test", "c3@rcpt.test"] } });
  expect(report()).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------------------
// Campaigns

const scheduledArb = fc.oneof(
  fc.constantFrom<unknown>(
    undefined, null, "", " ", "now", "tomorrow", 0, -1, -8.64e15, 8.64e15, 8.64e15 + 1, 1e308, NaN, "NaN", true, [], {}, "2024-02-30T00:00:00Z",
    "+275760-09-13T00:00:00.000Z", "+275760-09-14T00:00:00.000Z", "9999-12-31T23:59:59Z", "2999-01-01", "1970-01-01T00:00:00Z", "2100-01-01T00:00:00+14:00",
    "2100-01-01T00:00:00-99:00", "2100-01-01T25:00:00Z",
  ),
  fc.integer({ min: -1e12, max: 1e13 }),
  fc.constantFrom(60_000, 3_600_000, 365 * 86_400_000, 300 * 365 * 86_400_000).map((d) => () => new Date(srv.clock.now() + d).toISOString()),
);
const resolveSched = (v: unknown) => (typeof v === "function" ? (v as () => string)() : v);

test("campaigns: FILTERED audiences and odd scheduledFor on create, PUT and send never 5xx, refusals write nothing", async () => {
  const base = { name: "Fuzz", subject: "Hi {{email}}", body: "<p>Hello</p>", from: `news@${SENDER}` };
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom<unknown>("FILTERED", "FILTERED", "FILTERED", "ALL", "SEGMENT"),
      conditionArb(false),
      fc.constantFrom<unknown>(undefined, null, () => fx.dynamicSeg, () => fx.staticSeg, "nope", ""),
      scheduledArb,
      conditionArb(false),
      scheduledArb,
      async (audienceType, audienceCondition, seg, sched, putCondition, sendSched) => {
        const body: Record<string, unknown> = { ...base, audienceType, audienceCondition };
        const segmentId = typeof seg === "function" ? seg() : seg;
        if (segmentId !== undefined) body.segmentId = segmentId;
        const s1 = resolveSched(sched);
        if (s1 !== undefined) body.scheduledFor = s1;
        const where = `POST /campaigns ${short(body)}`;
        const before = await count("campaigns");
        const res = await srv.api("/campaigns", { key, body });
        if (!check("POST /campaigns", where, res)) {
          checkPaths(where, res, ["audienceCondition", "segmentId", "audienceType", "scheduledFor"]);
          if (await count("campaigns") !== before) fail(where, res, "campaign written on refusal");
          return;
        }
        const id = res.body.data?.id ?? res.body.id;
        const put = await srv.api(`/campaigns/${id}`, { key, method: "PUT", body: { audienceType: "FILTERED", audienceCondition: putCondition } });
        const pw = `PUT /campaigns/${id} ${short({ audienceCondition: putCondition })} after ${where}`;
        if (!check("PUT /campaigns", pw, put)) checkPaths(pw, put, ["audienceCondition", "segmentId", "audienceType"]);
        const s2 = resolveSched(sendSched);
        const jobs = await count("jobs", "project_id = ?");
        const send = await srv.api(`/campaigns/${id}/send`, { key, body: s2 === undefined ? {} : { scheduledFor: s2 } });
        const sw = `send ${short(s2)} ${pw}`;
        if (!check("send", sw, send)) {
          if (await count("jobs", "project_id = ?") !== jobs) fail(sw, send, "job enqueued by a refused send");
          const st = (await srv.api(`/campaigns/${id}`, { key })).body;
          const status = st.data?.status ?? st.status;
          if (status !== "DRAFT" && status !== "SCHEDULED") fail(sw, send, `status ${status} after a refused send`);
        }
        const stats = await srv.api(`/campaigns/${id}/stats`, { key });
        check("stats", `stats ${sw}`, stats);
        await srv.api(`/campaigns/${id}/cancel`, { key, method: "POST" });
      },
    ),
    { numRuns: runs(150), seed: SEED },
  );
  const list = await srv.api("/campaigns?pageSize=100", { key });
  check("GET /campaigns", "GET /campaigns", list);
  const upcoming = await srv.api("/activity/upcoming?limit=200", { key });
  check("upcoming", "GET /activity/upcoming", upcoming);
  expect(report()).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------------------
// Workflows

const odd = fc.constantFrom<unknown>(undefined, null, 0, -1, 1.5, 1e9, 1e308, "", "x", "1", true, [], {}, NaN);
const stepArb = fc.oneof(
  fc.record({ type: fc.constant("SEND_EMAIL"), config: fc.oneof(fc.constant(() => ({ templateId: fx.templateId })), fc.record({ templateId: fc.constantFrom<unknown>("", " ", "nope", 1, null, "00000000-0000-4000-8000-000000000000") })) }),
  fc.record({
    type: fc.constant("DELAY"),
    config: fc.record({ amount: fc.oneof(fc.constantFrom<unknown>(0, -1, 1, 0.5, 1e-9, 1e9, 365, 365.0000001, 8760, 525600, 525601, "1", null, Infinity, NaN, 2 ** 53), fc.double()), unit: fc.constantFrom<unknown>("minutes", "hours", "days", "weeks", "seconds", "", null, "Days") }, { requiredKeys: [] }),
  }),
  fc.record({
    type: fc.constant("WAIT_FOR_EVENT"),
    config: fc.record({ eventName: fc.constantFrom<unknown>("signup", " signup ", "", "e".repeat(255), "e".repeat(256), "email.open", "segment.x.entry", "🙂", null, 1), timeout: fc.oneof(odd, fc.constantFrom<unknown>(1, 31_536_000, 31_536_001, 2 ** 31, 2 ** 53)) }, { requiredKeys: [] }),
  }),
  fc.record({ type: fc.constant("CONDITION"), config: fc.oneof(conditionArb(true), filterArb(true), fc.record({ logic: fc.constant("AND"), groups: fc.constant([]), field: fc.constant("email") })) }),
  fc.record({
    type: fc.constant("WEBHOOK"),
    config: fc.record(
      {
        url: fc.constantFrom<unknown>("https://hooks.invalid/x", "http://127.0.0.1:1/x", "http://[::1]/", "http://169.254.169.254/latest", "ftp://x.test/", "https://", "https://x.test/{{contact.email}}", "https://{{event.host}}/", "https:// x", "javascript:alert(1)", "", null, "https://" + "a".repeat(3000) + ".test/"),
        method: fc.constantFrom<unknown>(undefined, "POST", "get", "Put", "TRACE", "", null, 1),
        headers: fc.constantFrom<unknown>(undefined, null, {}, { "X-A": "1" }, { "X A": "1" }, { "X-A": 1 }, { "X-A": "a\r\nb: c" }, { "": "x" }, "x", [], { Host: "evil.test" }, { "Content-Length": "0" }),
        body: fc.constantFrom<unknown>(undefined, null, "raw {{email}}", { a: "{{contact.email}}" }, [1, 2], 1, true, "", "x".repeat(100_000)),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({
    type: fc.constant("UPDATE_CONTACT"),
    config: fc.record(
      {
        updates: fc.oneof(
          fc.constantFrom<unknown>(null, {}, [], "x", { plan: null }, { plan: { value: "gold", persistent: false } }, { plan: { value: "gold", persistent: true } }, { "": 1 }, { "a\"b": 1 }, { ["k".repeat(129)]: 1 }, { email: "x@y.test" }, { subscribed: false }, { id: "x" }, { __proto__: { a: 1 } }, { constructor: 1 }, { n: { deep: { deeper: [1, { x: null }] } } }, { big: "x".repeat(70_000) }),
          fc.dictionary(oddKey, valueArb, { maxKeys: 3 }),
        ),
        subscriptionAction: fc.constantFrom<unknown>(undefined, "none", "subscribe", "unsubscribe", "SUBSCRIBE", "", null, 1),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ type: fc.constant("EXIT"), config: fc.oneof(odd.map((r) => ({ reason: r })), fc.constant({ reason: "x".repeat(501) }), fc.constant(undefined)) }),
  fc.record({ type: fc.constantFrom<unknown>("NOPE", "delay", "", null), config: fc.constant({}) }),
);
const resolveConfig = (c: unknown) => (typeof c === "function" ? (c as () => unknown)() : c);
const branchArb = fc.constantFrom<unknown>("fit", "fit", "fit", "fit", undefined, null, "yes", "no", "event", "timeout", "YES", "", "maybe");
/** "fit": the branch the from step's type takes (yes/no out of CONDITION, event/timeout out of WAIT_FOR_EVENT, none otherwise). */
function fitBranch(type: unknown, branch: unknown, n: number): unknown {
  if (branch !== "fit") return branch;
  if (type === "CONDITION") return n % 2 ? "yes" : "no";
  if (type === "WAIT_FOR_EVENT") return n % 2 ? "event" : "timeout";
  return undefined;
}
const contextArb = fc.oneof(fc.constantFrom<unknown>(undefined, null, 1, "x", [], {}, { a: { b: [1, { c: null }] } }, { "a.b": 1, a: { b: 2 } }, { big: "x".repeat(70_000) }), fc.dictionary(oddKey, valueArb, { maxKeys: 4 }));

test("workflows: random steps, transitions and manual starts never 5xx, refusals write nothing, executions settle", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(stepArb, { minLength: 1, maxLength: 5 }),
      // Mostly forward links (a -> a+1..3: no cycle), sometimes any pair (self-links, cycles).
      fc.array(fc.tuple(fc.nat({ max: 5 }), fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: -5, max: 0 }) }), branchArb), { maxLength: 6 }),
      fc.constantFrom<unknown>({ eventName: "signup" }, { eventName: "signup" }, { eventName: "signup" }, {}, { eventName: "" }, { eventName: "e".repeat(300) }, null, "x"),
      fc.constantFrom<unknown>(() => ({ contactId: fx.contactId }), { email: "c1@rcpt.test" }, { email: "new-wf@rcpt.test" }, { contactId: "nope" }, {}, { email: "x" }, { contactId: "00000000-0000-4000-8000-000000000000", email: "c2@rcpt.test" }),
      contextArb,
      fc.boolean(),
      async (steps, links, triggerConfig, who, context, allowReentry) => {
        const wf = await srv.api("/workflows", { key, body: { name: "Fuzz wf", triggerConfig, allowReentry } });
        if (!check("POST /workflows", `POST /workflows ${short(triggerConfig)}`, wf)) return;
        const wid = wf.body.id as string;
        const ids: string[] = [];
        const types: unknown[] = [];
        for (const s of steps) {
          const body = { type: s.type, config: resolveConfig(s.config) };
          const where = `POST steps ${short(body)}`;
          const before = await count("workflow_steps", "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?)");
          const r = await srv.api(`/workflows/${wid}/steps`, { key, body });
          if (check("POST steps", where, r)) {
            ids.push(r.body.id);
            types.push(s.type);
            // PATCH the same step with another config of its type: a refusal keeps the old config.
            const other = await srv.api(`/workflows/${wid}/steps/${r.body.id}`, { key, method: "PATCH", body: { config: resolveConfig(steps[(ids.length) % steps.length]!.config) } });
            check("PATCH step", `PATCH step ${where}`, other);
          } else {
            checkPaths(where, r, ["config", "type"]);
            if (await count("workflow_steps", "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?)") !== before) fail(where, r, "step written on refusal");
          }
        }
        for (const [a, b, branch] of links) {
          if (!ids.length) break;
          const from = a % ids.length;
          const to = (((from + b) % ids.length) + ids.length) % ids.length;
          const br = fitBranch(types[from], branch, a + b);
          const body: Record<string, unknown> = { fromStepId: ids[from], toStepId: ids[to] };
          if (br !== undefined) body.branch = br;
          const where = `POST transitions ${from}:${types[from]}->${to}:${types[to]} ${short(br)}`;
          const before = await count("workflow_transitions", "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?)");
          const r = await srv.api(`/workflows/${wid}/transitions`, { key, body });
          if (!check("POST transitions", where, r) && await count("workflow_transitions", "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?)") !== before) fail(where, r, "transition written on refusal");
        }
        const en = await srv.api(`/workflows/${wid}`, { key, method: "PATCH", body: { enabled: true, triggerType: "MANUAL" } });
        check("enable", `enable ${short(types)}`, en);
        const startBody: Record<string, unknown> = { ...(resolveConfig(who) as object) };
        if (context !== undefined) startBody.context = context;
        const sw = `start ${short(startBody)} steps ${short(steps.map((s) => ({ type: s.type, config: resolveConfig(s.config) })))} links ${short(links)}`;
        const beforeEx = await count("workflow_executions", "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?)");
        const ex = await srv.api(`/workflows/${wid}/executions`, { key, body: startBody });
        if (check("start", sw, ex)) {
          await srv.drainJobs();
          const got = await srv.api(`/workflows/${wid}/executions/${ex.body.id}`, { key });
          if (check("execution", `GET execution ${sw}`, got)) {
            // Settled (WAITING is a delay or a wait; RUNNING after the queue drained is stuck), and no internal
            // exception surfaced as a step error.
            if (got.body.status === "RUNNING") fail(sw, got, "execution still RUNNING after the queue drained");
            const internal = /TypeError|ReferenceError|RangeError|SyntaxError|SQLITE|is not a function|Cannot read|undefined is not|Invalid time value/i;
            if (internal.test(JSON.stringify(got.body.steps ?? []) + String(got.body.exitReason ?? ""))) fail(sw, got, "internal error in an execution step");
            (hist.execStatus ??= {})[got.body.status] = (hist.execStatus[got.body.status] ?? 0) + 1;
            if (process.env.FUZZ_VERBOSE && got.body.status === "FAILED") {
              console.log(`FAILED ${JSON.stringify((got.body.steps ?? []).map((x: { type: string; error: unknown }) => [x.type, x.error]))}`.slice(0, 400));
            }
          }
          const lst = await srv.api(`/workflows/${wid}/executions?status=FAILED`, { key });
          check("executions", `list ${sw}`, lst);
        } else if (await count("workflow_executions", "workflow_id IN (SELECT id FROM workflows WHERE project_id = ?)") !== beforeEx) fail(sw, ex, "execution written on refusal");
        const detail = await srv.api(`/workflows/${wid}`, { key });
        check("GET workflow", `GET workflow ${sw}`, detail);
        await srv.api(`/workflows/${wid}/executions/cancel-all`, { key, method: "POST" });
        if (ids.length) {
          const del = await srv.api(`/workflows/${wid}/steps/${ids[0]}?splice=true`, { key, method: "DELETE" });
          check("DELETE step", `DELETE step splice ${sw}`, del);
        }
        const del = await srv.api(`/workflows/${wid}`, { key, method: "DELETE" });
        check("DELETE workflow", `DELETE workflow ${sw}`, del);
      },
    ),
    { numRuns: runs(150), seed: SEED },
  );
  expect(report()).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------------------
// Contacts, /v1/track, /v1/send

const dataArb = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(oddKey, fc.oneof(valueArb, fc.record({ value: valueArb, persistent: fc.constantFrom<unknown>(true, false, "false", null, undefined) }, { requiredKeys: ["value"] })), { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, null, [], "x", 1, { big: "x".repeat(70_000) }, { ["k".repeat(128)]: 1 }, { ["k".repeat(129)]: 1 }, { email: "other@x.test" }, { __proto__: 1 }) },
);
const eventNameArb = fc.oneof(
  fc.constantFrom("signup", " padded ", "", " ", "e".repeat(255), "e".repeat(256), " " + "e".repeat(255), "é".repeat(255), "🙂".repeat(128), "email.sent", "EMAIL.SENT", "email.custom", "contact.subscribed", "Contact.Unsubscribed", "segment.x.entry", "segment.", "email", "email.", "\u0000", "a\nb"),
  fc.string({ maxLength: 10 }),
);
const emailArb = fc.constantFrom("t1@rcpt.test", "T1@RCPT.TEST", "c0@rcpt.test", "", " ", "bad", "a@b", "é@rcpt.test", "a".repeat(320) + "@x.test", "x@rcpt.test\r\n");

test("contacts and /v1/track: odd data and event names never 5xx, a refused write creates nothing", async () => {
  await fc.assert(
    fc.asyncProperty(fc.constantFrom("POST /contacts", "PATCH /contacts/:id", "/v1/track"), emailArb, dataArb, eventNameArb, fc.constantFrom<unknown>(undefined, true, false), async (kind, email, data, event, subscribed) => {
      const body: Record<string, unknown> = {};
      if (kind !== "PATCH /contacts/:id") body.email = email;
      if (data !== undefined) body.data = data;
      if (subscribed !== undefined) body.subscribed = subscribed;
      if (kind === "/v1/track") body.event = event;
      const where = `${kind} ${short(body)}`;
      const before = [await count("contacts"), await count("events")];
      const stored = JSON.stringify((await srv.api(`/contacts/${fx.contactId}`, { key })).body);
      const res =
        kind === "POST /contacts"
          ? await srv.api("/contacts", { key, body })
          : kind === "/v1/track"
            ? await srv.api("/v1/track", { key, body })
            : await srv.api(`/contacts/${fx.contactId}`, { key, method: "PATCH", body });
      if (!check(kind, where, res)) {
        await srv.drainJobs();
        const after = [await count("contacts"), await count("events")];
        if (JSON.stringify(after) !== JSON.stringify(before)) fail(where, res, `write on refusal ${before} -> ${after}`);
        if (kind === "PATCH /contacts/:id" && JSON.stringify((await srv.api(`/contacts/${fx.contactId}`, { key })).body) !== stored) fail(where, res, "contact changed by a refused PATCH");
      }
    }),
    { numRuns: runs(150), seed: SEED },
  );
  expect(report()).toEqual([]);
});

const keepOr = (a: fc.Arbitrary<unknown>) => fc.oneof({ weight: 3, arbitrary: fc.constant<unknown>("keep") }, { weight: 1, arbitrary: a });

test("/v1/send: odd to/from/headers/data combinations never 5xx, a refused send writes nothing", async () => {
  const toArb = fc.oneof(emailArb, fc.constantFrom<unknown>([], ["t1@rcpt.test", "T1@rcpt.test"], { email: "t1@rcpt.test", name: "A\r\nB" }, { email: "t1@rcpt.test", name: null }, { name: "x" }, null, 1, Array.from({ length: 1001 }, (_, i) => `r${i}@rcpt.test`)));
  const fromArb = fc.constantFrom<unknown>(undefined, `a@${SENDER}`, `A@${SENDER.toUpperCase()}`, "a@unverified.test", { email: `a@${SENDER}`, name: "N" }, { email: "" }, "", "Name <a@semfuzz.test>", null, 1);
  const headersArb = fc.constantFrom<unknown>(undefined, null, {}, { "X-A": "1" }, { "X-A": 1 }, { "X A": "1" }, { "X-A": "a\r\nBcc: x@y.test" }, { From: "x@y.test" }, { "Content-Type": "text/plain" }, { "": "x" }, "x", ["X-A"], { ["X-" + "a".repeat(1000)]: "v" });
  await fc.assert(
    fc.asyncProperty(keepOr(toArb), keepOr(fromArb), headersArb, dataArb, keepOr(fc.constantFrom<unknown>(undefined, "Hi", "", "a\nb", "x".repeat(999), "{{plan ?? 'x'}}")), keepOr(fc.constantFrom<unknown>(undefined, "<p>hi</p>", "", "{{#if x}}", "{{ data.plan ?? 'x' }}", "{{unclosed")), async (to, from, headers, data, subject, html) => {
      // A valid send, with each field replaced by an odd value now and then.
      const body: Record<string, unknown> = { to: "s1@rcpt.test", from: `a@${SENDER}`, subject: "Hi", body: "<p>hi {{plan}}</p>" };
      if (to !== "keep") body.to = to;
      if (from !== "keep") body.from = from;
      if (headers !== undefined) body.headers = headers;
      if (data !== undefined) body.data = data;
      if (subject !== "keep") body.subject = subject;
      if (html !== "keep") body.body = html;
      for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
      const where = `/v1/send ${short(body)}`;
      const before = [await count("contacts"), await count("emails")];
      const res = await srv.api("/v1/send", { key, body });
      if (!check("/v1/send", where, res)) {
        const after = [await count("contacts"), await count("emails")];
        if (JSON.stringify(after) !== JSON.stringify(before)) fail(where, res, `write on refusal ${before} -> ${after}`);
      }
    }),
    { numRuns: runs(100), seed: SEED },
  );
  expect(report()).toEqual([]);
});

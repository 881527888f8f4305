import { expect, test } from "bun:test";
import { applyDataRules, dataErrors, RESERVED_DATA_KEYS } from "../../src/audience/data-rules";
import { isReservedEventName } from "../../src/audience/events";
import { planUpsert } from "../../src/audience/contacts";

test("a primitive is stored and is a variable", () => {
  const r = applyDataRules({ a: 1 }, { plan: "pro", n: 2, ok: false });
  expect(r.stored).toEqual({ a: 1, plan: "pro", n: 2, ok: false });
  expect(r.vars).toEqual({ a: 1, plan: "pro", n: 2, ok: false });
  expect(r.changed).toBe(true);
});

test("null deletes the key", () => {
  const r = applyDataRules({ plan: "pro", keep: 1 }, { plan: null });
  expect(r.stored).toEqual({ keep: 1 });
  expect(r.changed).toBe(true);
  expect(applyDataRules({ keep: 1 }, { gone: null }).changed).toBe(false);
});

test("an empty string is ignored: it neither overwrites nor creates", () => {
  const r = applyDataRules({ plan: "pro" }, { plan: "", other: "" });
  expect(r.stored).toEqual({ plan: "pro" });
  expect(r.changed).toBe(false);
});

test("{ value, persistent: false } is a variable of this send/event only", () => {
  const r = applyDataRules({ plan: "pro" }, { coupon: { value: "SAVE10", persistent: false }, plan: { value: "team", persistent: false } });
  expect(r.stored).toEqual({ plan: "pro" });
  expect(r.vars).toEqual({ plan: "team", coupon: "SAVE10" });
  expect(r.provided).toEqual({ plan: "team", coupon: "SAVE10" });
  expect(r.changed).toBe(false);
});

test("{ value, persistent: true } stores the value; other objects and arrays are stored as JSON values", () => {
  const r = applyDataRules({}, { a: { value: 5, persistent: true }, b: { x: 1 }, c: [1, 2] });
  expect(r.stored).toEqual({ a: 5, b: { x: 1 }, c: [1, 2] });
});

test("reserved keys are silently dropped", () => {
  const incoming = Object.fromEntries([...RESERVED_DATA_KEYS].map((k) => [k, "x"]));
  const r = applyDataRules({}, { ...incoming, plan: "pro" });
  expect(r.stored).toEqual({ plan: "pro" });
  expect(r.provided).toEqual({ plan: "pro" });
});

test("no data leaves the contact unchanged", () => {
  const existing = { a: 1 };
  expect(applyDataRules(existing, undefined)).toMatchObject({ stored: existing, changed: false });
  expect(applyDataRules(existing, null)).toMatchObject({ stored: existing, changed: false });
  expect(applyDataRules(existing, { a: 1 }).changed).toBe(false);
});

test("unusable keys and oversized data are reported", () => {
  expect(dataErrors({ 'a"b': 1 })[0]).toMatchObject({ field: 'data.a"b', code: "invalid_key" });
  expect(dataErrors({ ["k".repeat(129)]: 1 })[0]?.code).toBe("invalid_key");
  expect(dataErrors({ big: "x".repeat(70_000) })[0]?.code).toBe("too_big");
  expect(dataErrors({ id: 1, "a.b": 1, "with space": 2 })).toEqual([]);
});

test("reserved event names", () => {
  for (const n of ["email.sent", "email.anything", "Email.Open", "contact.subscribed", "contact.unsubscribed", "segment.vip.entry", "segment.big-spenders.exit"]) {
    expect(isReservedEventName(n)).toBe(true);
  }
  for (const n of ["signup", "email", "emails.sent", "contact.updated", "segment.vip", "segment.entry", "purchase.completed"]) {
    expect(isReservedEventName(n)).toBe(false);
  }
});

test("subscription plan: new contacts take the default and record no flip; existing keep their state unless given", () => {
  expect(planUpsert(null, { projectId: "p", email: "a@b.co", defaultSubscribed: true })).toMatchObject({ isNew: true, subscribed: true, flip: null });
  expect(planUpsert(null, { projectId: "p", email: "a@b.co", defaultSubscribed: false })).toMatchObject({ subscribed: false, flip: null });
  const unsub = { subscribed: 0, data: "{}" };
  expect(planUpsert(unsub, { projectId: "p", email: "a@b.co", defaultSubscribed: true })).toMatchObject({ subscribed: false, flip: null, write: false });
  expect(planUpsert(unsub, { projectId: "p", email: "a@b.co", subscribed: true, defaultSubscribed: true })).toMatchObject({
    subscribed: true,
    flip: "contact.subscribed",
    write: true,
  });
  expect(planUpsert({ subscribed: 1, data: "{}" }, { projectId: "p", email: "a@b.co", subscribed: false, defaultSubscribed: true }).flip).toBe("contact.unsubscribed");
});

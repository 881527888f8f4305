// Pure graph rules: decideNext, transition validation and splice plans (table-tested).
import { describe, expect, test } from "bun:test";
import { decideNext, splicePlan, transitionErrors } from "../../src/modules/workflows/engine/graph";
import { checkStepConfig } from "../../src/modules/workflows/engine/configs";
import { exit, fail, next, wait, waitEvent, type Graph } from "../../src/modules/workflows/engine/types";

const g: Graph = {
  steps: [
    { id: "a", type: "SEND_EMAIL" },
    { id: "c", type: "CONDITION" },
    { id: "y", type: "DELAY" },
    { id: "n", type: "EXIT" },
    { id: "w", type: "WAIT_FOR_EVENT" },
    { id: "e", type: "UPDATE_CONTACT" },
  ],
  transitions: [
    { id: "t1", fromStepId: "a", toStepId: "c", branch: null },
    { id: "t2", fromStepId: "c", toStepId: "y", branch: "yes" },
    { id: "t3", fromStepId: "c", toStepId: "n", branch: "no" },
    { id: "t4", fromStepId: "y", toStepId: "w", branch: null },
    { id: "t5", fromStepId: "w", toStepId: "e", branch: "event" },
  ],
};

describe("decideNext", () => {
  const cases: [string, string, ReturnType<typeof next>, string | null][] = [
    ["plain step follows its transition", "a", next(), "c"],
    ["condition yes", "c", next("yes"), "y"],
    ["condition no", "c", next("no"), "n"],
    ["wait event branch", "w", next("event"), "e"],
    ["missing timeout branch ends", "w", next("timeout"), null],
    ["last step ends", "e", next(), null],
    ["wait does not move", "y", wait(1), null],
    ["waitEvent does not move", "w", waitEvent("x", null), null],
    ["exit does not move", "n", exit("bye"), null],
    ["fail does not move", "a", fail("boom"), null],
  ];
  for (const [name, step, outcome, want] of cases) test(name, () => expect(decideNext(g, step, outcome)).toBe(want));
});

describe("transitionErrors", () => {
  const cases: [string, { fromStepId: string; toStepId: string; branch?: string | null }, string | null][] = [
    ["self link", { fromStepId: "e", toStepId: "e" }, "self_link"],
    ["out of EXIT", { fromStepId: "n", toStepId: "e" }, "exit_step"],
    ["second way out of a plain step", { fromStepId: "a", toStepId: "e" }, "too_many_transitions"],
    ["branch on a plain step", { fromStepId: "e", toStepId: "n", branch: "yes" }, "invalid_branch"],
    ["condition without branch", { fromStepId: "c", toStepId: "e" }, "invalid_branch"],
    ["condition with a wait branch", { fromStepId: "c", toStepId: "e", branch: "event" }, "invalid_branch"],
    ["duplicate yes", { fromStepId: "c", toStepId: "e", branch: "yes" }, "duplicate_branch"],
    ["wait timeout ok", { fromStepId: "w", toStepId: "n", branch: "timeout" }, null],
    ["cycle", { fromStepId: "e", toStepId: "a" }, "cycle"],
    ["unknown step", { fromStepId: "zz", toStepId: "a" }, "not_found"],
    ["plain ok", { fromStepId: "e", toStepId: "n" }, null],
  ];
  for (const [name, t, code] of cases) {
    test(name, () => {
      const errors = transitionErrors(g, t);
      if (code === null) expect(errors).toEqual([]);
      else expect(errors.map((e) => e.code)).toContain(code);
    });
  }
});

describe("splicePlan", () => {
  test("a plain step: predecessor joins successor", () => {
    const p = splicePlan(g, { id: "y", type: "DELAY" }, true, "a")!;
    expect(p.remove.sort()).toEqual(["t2", "t4"]);
    expect(p.add).toEqual([{ fromStepId: "c", toStepId: "w", branch: "yes" }]);
  });
  test("the entry step: its successor becomes the entry", () => {
    expect(splicePlan(g, { id: "a", type: "SEND_EMAIL" }, true, "a")!.entry).toBe("c");
    expect(splicePlan(g, { id: "a", type: "SEND_EMAIL" }, false, "a")!.entry).toBeNull();
  });
  test("two successors cannot be spliced", () => {
    expect(splicePlan(g, { id: "c", type: "CONDITION" }, true, "a")).toBeNull();
  });
});

describe("step configs", () => {
  const bad: [string, unknown, string][] = [
    ["SEND_EMAIL", {}, "config.templateId"],
    ["DELAY", { amount: 0, unit: "days" }, "config.amount"],
    ["DELAY", { amount: 1, unit: "weeks" }, "config.unit"],
    ["DELAY", { amount: 366, unit: "days" }, "config.amount"],
    ["WAIT_FOR_EVENT", {}, "config.eventName"],
    ["WAIT_FOR_EVENT", { eventName: "x", timeout: -1 }, "config.timeout"],
    ["CONDITION", {}, "config.field"],
    ["WEBHOOK", { url: "ftp://x" }, "config.url"],
    ["WEBHOOK", { url: "https://x.test", method: "TRACE" }, "config.method"],
    ["WEBHOOK", { url: "https://x.test", headers: { "X-A": "a\r\nb" } }, "config.headers.X-A"],
    ["UPDATE_CONTACT", { subscriptionAction: "maybe" }, "config.subscriptionAction"],
    ["UPDATE_CONTACT", { updates: [] }, "config.updates"],
    ["EXIT", { reason: 5 }, "config.reason"],
    ["DELAY", "soon", "config"],
  ];
  for (const [type, config, field] of bad) {
    test(`${type} ${JSON.stringify(config)} -> ${field}`, () => {
      expect(checkStepConfig(type as never, config).errors.map((e) => e.field)).toContain(field);
    });
  }
  test("valid configs normalise", () => {
    expect(checkStepConfig("WEBHOOK", { url: "https://x.test/h" }).config).toEqual({ url: "https://x.test/h", method: "POST" });
    expect(checkStepConfig("UPDATE_CONTACT", {}).config).toEqual({ subscriptionAction: "none" });
    expect(checkStepConfig("DELAY", { amount: 2, unit: "hours" }).errors).toEqual([]);
  });
});

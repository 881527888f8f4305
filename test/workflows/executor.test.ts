// The executor's turn-taking: a job run again after its transaction committed (what kill -9 between
// the commit and the job's completion does) is a no-op: no step runs twice, no second email row.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { runStepJob, STEP_JOB, type StepJobPayload } from "../../src/modules/workflows/engine/executor";
import type { DeliveryEnv } from "../support/delivery";
import { RCPT, SENDER, sendEnv } from "../send/support";
import { chain, contact, must, start, waitForExecution, type Ctx } from "./support";

let env: DeliveryEnv;
let c: Ctx;

beforeAll(async () => {
  env = await sendEnv();
  c = { api: env.srv.api, key: env.acct.secretKey };
}, 30_000);
afterAll(() => env?.close());

test("re-running a step job that already committed changes nothing", async () => {
  const tpl = await must(c.api("/templates", { key: c.key, body: { name: "T", subject: "S", body: "<p>B</p>", from: `hi@${SENDER}`, type: "TRANSACTIONAL" } }), 201);
  const wf = await chain(c, [["DELAY", { amount: 1, unit: "minutes" }], ["SEND_EMAIL", { templateId: tpl.id }]]);
  const ct = await contact(c, `again@${RCPT}`);
  const ex = await start(c, wf.id, { contactId: ct.id });
  await waitForExecution(c, wf.id, ex.id, "WAITING");
  const db = env.srv.ctx.db;
  const jobs = await db.selectFrom("jobs").select(["id", "payload"]).where("type", "=", STEP_JOB).execute();
  const mine = jobs.map((j) => JSON.parse(j.payload) as StepJobPayload).filter((p) => p.executionId === ex.id);
  env.srv.clock.advance(61_000);
  const done = await waitForExecution(c, wf.id, ex.id, "COMPLETED");
  // Replay every job this execution ever had (the start and the DELAY's resume).
  for (const payload of mine) {
    const r = await runStepJob(env.srv.ctx, { id: "replay", type: STEP_JOB, projectId: null, payload, checkpoint: null, attempt: 1, save: async () => {}, startCheckpoint: async () => true, saveWithin: async () => true });
    expect(r).toMatchObject({ stale: true });
  }
  const after = await must(c.api(`/workflows/${wf.id}/executions/${ex.id}`, { key: c.key }), 200);
  expect(after.steps).toEqual(done.steps);
  const emails = await db.selectFrom("emails").select("id").where("workflow_execution_id", "=", ex.id).execute();
  expect(emails.length).toBe(1);
});

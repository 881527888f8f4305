// Workflow test helpers: build a graph through the API, start executions, wait for states.
import type { Api } from "../support/server";
import { waitFor } from "../support/wait";

export interface Ctx {
  api: Api;
  key: string;
}

export async function must<T = any>(p: Promise<{ status: number; body: T; text: string }>, status: number): Promise<T> {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}

export async function createWorkflow(c: Ctx, body: Record<string, unknown> = {}) {
  return must(c.api("/workflows", { key: c.key, body: { name: "Welcome", ...body } }), 201);
}

export async function addStep(c: Ctx, wf: string, type: string, config: unknown = {}, name?: string) {
  return must(c.api(`/workflows/${wf}/steps`, { key: c.key, body: { type, config, ...(name ? { name } : {}) } }), 201);
}

export async function link(c: Ctx, wf: string, fromStepId: string, toStepId: string, branch?: string) {
  return must(c.api(`/workflows/${wf}/transitions`, { key: c.key, body: { fromStepId, toStepId, ...(branch ? { branch } : {}) } }), 201);
}

/** A linear workflow of the given steps, optionally enabled with a trigger event. */
export async function chain(c: Ctx, steps: [string, unknown][], opts: { eventName?: string; enable?: boolean; allowReentry?: boolean } = {}) {
  const wf = await createWorkflow(c, { ...(opts.eventName ? { triggerConfig: { eventName: opts.eventName } } : {}), ...(opts.allowReentry ? { allowReentry: true } : {}) });
  const ids: string[] = [];
  for (const [type, config] of steps) ids.push((await addStep(c, wf.id, type, config)).id);
  for (let i = 1; i < ids.length; i++) await link(c, wf.id, ids[i - 1]!, ids[i]!);
  if (opts.enable !== false) {
    if (!opts.eventName) await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { triggerType: "MANUAL" } }), 200);
    await must(c.api(`/workflows/${wf.id}`, { method: "PATCH", key: c.key, body: { enabled: true } }), 200);
  }
  return { id: wf.id as string, steps: ids };
}

export async function contact(c: Ctx, email: string, data: Record<string, unknown> = {}, subscribed = true) {
  const r = await c.api("/contacts", { key: c.key, body: { email, data, subscribed } });
  if (r.status !== 200 && r.status !== 201) throw new Error(`contact upsert: ${r.status} ${r.text}`);
  return r.body;
}

export async function start(c: Ctx, wf: string, body: Record<string, unknown>) {
  return must(c.api(`/workflows/${wf}/executions`, { key: c.key, body }), 201);
}

export async function execution(c: Ctx, wf: string, id: string) {
  return must(c.api(`/workflows/${wf}/executions/${id}`, { key: c.key }), 200);
}

/** Polls until the execution reaches one of the statuses; returns it. */
export function waitForExecution(c: Ctx, wf: string, id: string, statuses: string | string[], timeoutMs = 10_000) {
  const want = [statuses].flat();
  return waitFor(() => execution(c, wf, id), { until: (e) => want.includes(e.status), timeoutMs, what: `execution ${id} ${want.join("|")}` });
}

/** Polls the execution list (optionally of one status) until it has at least `n`; returns the list. */
export function waitForExecutions(c: Ctx, wf: string, n: number, status?: string, timeoutMs = 10_000) {
  return waitFor(() => executions(c, wf, status), { until: (list) => list.total >= n, timeoutMs, what: `${n}${status ? " " + status : ""} executions of workflow ${wf}` });
}

export async function executions(c: Ctx, wf: string, status?: string) {
  return must(c.api(`/workflows/${wf}/executions?pageSize=100${status ? `&status=${status}` : ""}`, { key: c.key }), 200);
}

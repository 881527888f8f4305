// The small answers every route file writes: a created resource (201), a done command ({ success: true }),
// and the query schemas of optional string parameters (parsed and checked by the service, which knows
// their meaning and answers the spec's error).
import type { TOptional, TString } from "@sinclair/typebox";
import { t } from "elysia";
import { BareError } from "./errors";

/** `{ success: true }` once `work` is done (DELETE and other commands with nothing to return). */
export async function succeeded(work: Promise<unknown>): Promise<{ success: true }> {
  await work;
  return { success: true };
}

/** 201 Created with `value`. */
export async function created<T>(set: { status?: unknown }, value: T | Promise<T>): Promise<T> {
  const v = await value;
  set.status = 201;
  return v;
}

/** 202 Accepted with `{ jobId }` (work queued: imports, bulk jobs). */
export async function accepted(set: { status?: unknown }, jobId: Promise<string>): Promise<{ jobId: string }> {
  const id = await jobId;
  set.status = 202;
  return { jobId: id };
}

/** A query object of optional string parameters (`limit`, `cursor`, filters…). */
export function optionalStrings<K extends string>(...keys: K[]) {
  return t.Object(Object.fromEntries(keys.map((k) => [k, t.Optional(t.String())])) as { [P in K]: TOptional<TString> });
}

/**
 * A route macro for the spec's bare 400 `{ error }` cases: with `{ [name]: true }` on a route, a JSON
 * object body for which `problem` names a problem is refused with it, before field validation (a macro
 * runs after the auth macro's check). Bodies that are not objects are left to validation.
 */
export function bareCheck<N extends string>(name: N, problem: (body: Record<string, unknown>) => string | null) {
  return {
    [name]: (on: boolean) => ({
      transform({ body }: { body: unknown }) {
        if (!on || typeof body !== "object" || body === null || Array.isArray(body)) return;
        const message = problem(body as Record<string, unknown>);
        if (message) throw new BareError(400, message);
      },
    }),
  } as Record<N, (on: boolean) => { transform(c: { body: unknown }): void }>;
}

// The small answers every route file writes: a created resource (201), a done command ({ success: true }),
// and the query schemas of optional string parameters (parsed and checked by the service, which knows
// their meaning and answers the spec's error).
import type { TOptional, TString } from "@sinclair/typebox";
import { t } from "elysia";

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

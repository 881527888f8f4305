import type { ContactRow } from "../../audience/contacts";
import type { AppContext } from "../../context";
import type { ExecutionRow, LoadedStep, LoadedWorkflow } from "../store";
import { fail, type StepOutcome } from "../types";

export interface WebhookInput {
  workflow: LoadedWorkflow;
  execution: ExecutionRow;
  step: LoadedStep;
  contact: ContactRow;
  /** The step's open log row (a retry): its output carries the attempts so far. */
  openLog: { id: string; started_at: number } | null;
}

/** WEBHOOK: performed outside any transaction; the outcome is committed by the executor. */
export async function performWebhook(_ctx: AppContext, _input: WebhookInput): Promise<StepOutcome> {
  return fail("WEBHOOK steps are not available yet");
}

import type { Transaction } from "kysely";
import type { RecordedEvent } from "../../../../audience/events";
import type { ContactRow } from "../../../../audience/contacts";
import type { AppContext } from "../../../../context";
import type { DB } from "../../../../db";
import type { ExecutionRow, LoadedStep, LoadedWorkflow } from "../store";
import type { StepOutcome } from "../types";

/** What a step sees: the execution, its contact, and the transaction its writes go into. */
export interface StepEnv {
  ctx: AppContext;
  trx: Transaction<DB>;
  now: number;
  workflow: LoadedWorkflow;
  execution: ExecutionRow;
  step: LoadedStep;
  contact: ContactRow;
  /** The triggering event `{ id, name, data }` (null for manual starts). */
  event: { id: string; name: string; data: Record<string, unknown> } | null;
  /** The execution context (`workflow.*` variables). */
  context: Record<string, unknown>;
  /** Look-ups shared by the turns of one transaction (e.g. a template used by a batch). */
  memo: Map<string, unknown>;
  /** Work to do after the commit. */
  effects: { wakeOutbox: boolean; events: RecordedEvent[]; contacts: { projectId: string; contactId: string }[] };
}

export type StepRunner = (env: StepEnv) => Promise<StepOutcome>;

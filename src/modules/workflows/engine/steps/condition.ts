import { contactMatchesTree } from "../condition-adapter";
import { next } from "../types";
import type { StepRunner } from "./env";

/** CONDITION: the one condition compiler evaluated for this contact; `yes` or `no`. */
export const runCondition: StepRunner = async (env) => {
  const facts = { event: env.event?.data ?? {}, workflow: env.context };
  const matched = await contactMatchesTree(env.trx, env.step.config, { projectId: env.workflow.projectId, contactId: env.contact.id, now: env.now, facts }, env.contact);
  return next(matched ? "yes" : "no", { result: matched });
};

import type { WaitForEventConfig } from "../configs";
import { waitEvent } from "../types";
import type { StepRunner } from "./env";

/** WAIT_FOR_EVENT: wait for an event of that name on the same contact, or the timeout. */
export const runWaitForEvent: StepRunner = async (env) => {
  const c = env.step.config as unknown as WaitForEventConfig;
  const timeoutAt = c.timeout ? env.now + c.timeout * 1000 : null;
  return waitEvent(c.eventName, timeoutAt, { eventName: c.eventName, timeoutAt: timeoutAt === null ? null : new Date(timeoutAt).toISOString() });
};

import { delayMs, type DelayConfig } from "../configs";
import { wait } from "../types";
import type { StepRunner } from "./env";

/** DELAY: wait until now + amount·unit; the executor resumes it with a job at that time. */
export const runDelay: StepRunner = async (env) => {
  const until = env.now + delayMs(env.step.config as unknown as DelayConfig);
  return wait(until, { resumeAt: new Date(until).toISOString() });
};

import type { ExitConfig } from "../configs";
import { exit } from "../types";
import type { StepRunner } from "./env";

/** EXIT: ends the execution as EXITED with the step's reason. */
export const runExit: StepRunner = async (env) => {
  const reason = (env.step.config as ExitConfig).reason || "Exited at step " + env.step.name;
  return exit(reason, { reason });
};

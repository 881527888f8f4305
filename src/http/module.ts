import type { Elysia } from "elysia";
import type { AppContext, Contributions } from "../context";

/**
 * One resource of the spec as server.ts sees it. `provides` declares what it contributes to other
 * modules; `install` registers job handlers, schedules and the outbox's hooks; `start`/`stop` run long-lived loops (delivery, inbound SMTP) after the HTTP server is up.
 */
export interface ModuleDef {
  name: string;
  routes?: (ctx: AppContext) => Elysia<any, any, any, any, any, any, any>;
  /** What this module adds to other modules' answers (usage look-ups, setup state, project reset…). */
  provides?: Partial<Contributions>;
  install?: (ctx: AppContext) => void | Promise<void>;
  start?: (ctx: AppContext) => void | Promise<void>;
  stop?: (ctx: AppContext) => void | Promise<void>;
}

/** Every module's `provides`, in install order (server.ts). */
export function gatherContributions(modules: readonly ModuleDef[], into: Contributions): Contributions {
  for (const m of modules) {
    for (const [key, list] of Object.entries(m.provides ?? {}) as [keyof Contributions, unknown[]][]) (into[key] as unknown[]).push(...list);
  }
  return into;
}

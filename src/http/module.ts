import type { Elysia } from "elysia";
import type { AppContext } from "../context";

/**
 * One resource of the spec as server.ts sees it. `install` registers job handlers, schedules and
 * hooks; `start`/`stop` run long-lived loops (delivery, inbound SMTP) after the HTTP server is up.
 */
export interface ModuleDef {
  name: string;
  routes?: (ctx: AppContext) => Elysia<any, any, any, any, any, any, any>;
  install?: (ctx: AppContext) => void | Promise<void>;
  start?: (ctx: AppContext) => void | Promise<void>;
  stop?: (ctx: AppContext) => void | Promise<void>;
}

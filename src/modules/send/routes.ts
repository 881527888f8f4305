import { Elysia } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";

export function sendRoutes(ctx: AppContext) {
  return new Elysia().use(authPlugin(ctx));
}

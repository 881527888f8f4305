import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import type { ModuleDef } from "../../http/module";
import { countAudience } from "./service";

/** POST /audience/count { condition, subscribedOnly? } -> { count } (beyond the spec; for the dashboard). */
function routes(ctx: AppContext) {
  return new Elysia()
    .use(authPlugin(ctx))
    .post("/audience/count", ({ auth, body }) => countAudience(ctx, auth.projectId, body), {
      auth: "secret",
      body: t.Object({ condition: t.Unknown(), subscribedOnly: t.Optional(t.Boolean()) }),
    });
}

export const audienceCountModule: ModuleDef = { name: "audience-count", routes };

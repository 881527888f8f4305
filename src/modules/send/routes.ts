import { Elysia } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { withIdempotency } from "../../http/idempotency";
import { SendBody } from "./schemas";
import { send } from "./service";

export function sendRoutes(ctx: AppContext) {
  return new Elysia().use(authPlugin(ctx)).post(
    "/v1/send",
    async ({ auth, body, request }) => {
      const data = await withIdempotency(ctx, auth.projectId, request.headers.get("idempotency-key"), { method: "POST", path: "/v1/send" }, () =>
        send(ctx, auth.projectId, body),
      );
      return { success: true, data };
    },
    { auth: "apiOnly", body: SendBody },
  );
}

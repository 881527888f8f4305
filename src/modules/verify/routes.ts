import { Elysia, t } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin } from "../../http/auth";
import { verifyEmail } from "./service";

export function verifyRoutes(ctx: AppContext) {
  return new Elysia().use(authPlugin(ctx)).post(
    "/v1/verify",
    async ({ body }) => ({ success: true, data: await verifyEmail(ctx, body.email) }),
    { auth: "apiOnly", body: t.Object({ email: t.String({ format: "email", maxLength: 254 }) }) },
  );
}

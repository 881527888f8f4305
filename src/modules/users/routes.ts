import { succeeded } from "../../http/replies";
import { Elysia } from "elysia";
import type { AppContext } from "../../context";
import { authPlugin, checkCsrf, revokeSession, SESSION_COOKIE, SESSION_TTL_SECONDS, sessionToken, sessionUserId } from "../../http/auth";
import * as schemas from "./schemas";
import * as svc from "./service";

export function userRoutes(ctx: AppContext) {
  const secure = ctx.config.publicUrl.startsWith("https://");
  const setSession = async (
    jwt: { sign: (p: { sub: string; exp: number; ia: number }) => Promise<string> },
    cookie: Record<string, any>,
    userId: string,
  ) => {
    cookie[SESSION_COOKIE].set({
      // Expires SESSION_TTL_SECONDS after now on the service clock (checked against it in http/auth.ts).
      // `ia`: issued at, service-clock ms (a password reset ends the sessions issued before it, http/auth.ts).
      value: await jwt.sign({ sub: userId, exp: Math.floor(ctx.clock.now() / 1000) + SESSION_TTL_SECONDS, ia: ctx.clock.now() }),
      httpOnly: true,
      sameSite: "lax",
      secure,
      path: "/",
      maxAge: SESSION_TTL_SECONDS,
    });
  };

  return new Elysia()
    .use(authPlugin(ctx))
    .post(
      "/auth/signup",
      async ({ body, jwt, cookie, set, request }) => {
        // Login CSRF: another site must not sign the browser into an account of its choosing.
        checkCsrf(ctx, request);
        const user = await svc.signup(ctx, body);
        await setSession(jwt, cookie, user.id);
        set.status = 201;
        return { success: true, data: { id: user.id, email: user.email } };
      },
      { body: schemas.Credentials },
    )
    .post(
      "/auth/login",
      async ({ body, jwt, cookie, request }) => {
        checkCsrf(ctx, request);
        const user = await svc.login(ctx, body);
        await setSession(jwt, cookie, user.id);
        return { success: true, data: { id: user.id, email: user.email } };
      },
      { body: schemas.LoginBody },
    )
    .get("/auth/logout", async ({ cookie, request, jwt }) => {
      // The session is a signed token: clearing the cookie alone would leave a copy of it valid for days.
      await revokeSession(ctx, sessionToken(request), jwt);
      cookie[SESSION_COOKIE].set({ value: "", httpOnly: true, sameSite: "lax", secure, path: "/", maxAge: 0 });
      return { success: true };
    })
    // "Am I logged in?" without an error: 200 with the user, or 200 with null (GET /users/@me keeps its 401).
    .get("/auth/session", async ({ request, jwt }) => {
      const userId = await sessionUserId(ctx, request, jwt);
      return { user: userId ? svc.viewUser(await svc.getUser(ctx, userId)) : null };
    })
    .get("/auth/oauth-config", () => ({ providers: [] as string[] }))
    .post("/auth/verify-email", async ({ body }) => ({ success: true, data: svc.viewUser(await svc.verifyEmail(ctx, body.token)) }), { body: schemas.TokenBody })
    .post("/auth/request-verification", ({ auth }) => succeeded(svc.requestVerification(ctx, auth.userId!)), { auth: "session" })
    .post("/auth/request-password-reset", ({ body }) => succeeded(svc.requestPasswordReset(ctx, body.email)), { body: schemas.EmailBody })
    .post("/auth/reset-password", ({ body }) => succeeded(svc.resetPassword(ctx, body.token, body.password)), { body: schemas.ResetPasswordBody })
    .get("/users/@me", async ({ auth }) => svc.viewUser(await svc.getUser(ctx, auth.userId!)), { auth: "session" });
}

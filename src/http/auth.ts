import { jwt } from "@elysiajs/jwt";
import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import type { AppContext } from "../context";
import { rejectedBodies } from "./body";
import { malformedBodies } from "./error-plugin";
import { AppError, badRequest, forbidden, invalidApiKey, unauthorized } from "./errors";

/**
 * How a route is authenticated:
 * - `secret`:  the project's secret key, or a session cookie plus `X-Project-Id` of a project the user belongs to.
 * - `track`:   like `secret`, and the public key is accepted too (/v1/track, /events/track).
 * - `apiOnly`: the secret key only (public API paths such as /v1/send, /v1/verify).
 * - `session`: a logged-in user (no project).
 * - `optionalProject`: a secret key, or a session with or without `X-Project-Id` (routes that name the project themselves).
 */
export type AuthMode = "secret" | "track" | "apiOnly" | "session" | "optionalProject";

export interface AuthInfo {
  /** Set for every mode except `session` (and `optionalProject` without a project). */
  projectId: string;
  via: "secret" | "public" | "session";
  userId: string | null;
  role: string | null;
}

export const SESSION_COOKIE = "token";
export const SESSION_TTL_SECONDS = 7 * 24 * 3600;

const authenticated = new WeakMap<Request, AuthInfo>();

declare module "../context" {
  interface Services {
    /** The auth plugin every module router shares (built once by src/services.ts). */
    auth: ReturnType<typeof buildAuthPlugin>;
  }
}

/** The auth plugin of one running instance. */
export const authPlugin = (ctx: AppContext) => ctx.services.auth;

const SESSION_COOKIE_RE = new RegExp(`(?:^|;\\s*)${SESSION_COOKIE}=([^;]*)`);

function sessionToken(request: Request): string | undefined {
  const header = request.headers.get("cookie");
  if (!header) return undefined;
  const m = SESSION_COOKIE_RE.exec(header);
  if (!m || !m[1]) return undefined;
  try {
    return decodeURIComponent(m[1]);
  } catch {
    return undefined;
  }
}

function bearer(h: string | undefined): string | null {
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m ? m[1]! : null;
}

export function buildAuthPlugin(ctx: AppContext) {
  return new Elysia({ name: "mailsvc-auth", seed: ctx.jwtSecret.slice(0, 8) + ctx.config.db })
    .use(jwt({ name: "jwt", secret: ctx.jwtSecret, exp: `${SESSION_TTL_SECONDS}s` }))
    .macro({
      auth: (mode: AuthMode) => ({
        // In transform, i.e. before body validation: a request without a valid key is 401 whatever its body.
        // The session cookie is read from the header by hand: naming `cookie` here would make Elysia parse
        // cookies on every keyed request.
        async transform({ request, jwt, set }: any) {
          const auth = await authenticate(ctx, mode, request, sessionToken(request), jwt);
          authenticated.set(request, auth);
          if (malformedBodies.has(request)) throw badRequest("Malformed request body: expected valid JSON");
          const rejected = rejectedBodies.get(request);
          if (rejected) throw rejected;
          if (auth.projectId) applyRateLimit(ctx, auth.projectId, set.headers as Record<string, string>);
        },
        resolve({ request }) {
          return { auth: authenticated.get(request)! };
        },
      }),
    })
    .as("global");
}

async function authenticate(
  ctx: AppContext,
  mode: AuthMode,
  request: Request,
  token: string | undefined,
  jwt: { verify: (t?: string, options?: { currentDate?: Date }) => Promise<false | Record<string, unknown>> },
): Promise<AuthInfo> {
  const key = bearer(request.headers.get("authorization") ?? undefined);
  if (key) {
    if (mode === "session") throw invalidApiKey("This endpoint needs a dashboard session (log in first); API keys are not accepted");
    const found = await ctx.keys.resolve(key);
    if (!found) throw invalidApiKey("Invalid API key");
    if (found.kind === "public" && mode !== "track") {
      throw invalidApiKey("A public key (pk_…) is accepted only by /v1/track; use the secret key (sk_…)");
    }
    if (found.disabled) throw projectDisabled(found.disabledReason);
    return { projectId: found.projectId, via: found.kind, userId: null, role: null };
  }
  if (request.headers.get("authorization")) throw invalidApiKey("Malformed Authorization header; expected 'Bearer <key>'");

  if (mode === "apiOnly") throw invalidApiKey("Missing API key: send 'Authorization: Bearer <secret key>'");
  if (!token) {
    if (mode === "session") throw unauthorized("Not logged in");
    throw invalidApiKey("Missing API key: send 'Authorization: Bearer <secret key>'");
  }
  // Expiry on the service clock (the one sessions are signed with, users/routes.ts), like every other time.
  const payload = await jwt.verify(token, { currentDate: new Date(ctx.clock.now()) });
  if (!payload || typeof payload.sub !== "string") throw unauthorized("Session expired or invalid; log in again");
  const userId = payload.sub;
  const user = await ctx.db.selectFrom("users").select(["id", "sessions_valid_after"]).where("id", "=", userId).executeTakeFirst();
  if (!user) throw unauthorized("Session user no longer exists");
  if (await sessionEnded(ctx, token, payload, user.sessions_valid_after ?? null)) throw unauthorized("Session ended; log in again");
  checkCsrf(ctx, request);

  if (mode === "session") return { projectId: "", via: "session", userId, role: null };
  const projectId = request.headers.get("x-project-id");
  if (!projectId) {
    if (mode === "optionalProject") return { projectId: "", via: "session", userId, role: null };
    throw new AppError(400, "BAD_REQUEST", "Send the X-Project-Id header to choose the project for this session request");
  }
  const m = await membership(ctx, projectId, userId);
  if (!m) throw forbidden("You are not a member of this project");
  if (m.disabled) throw projectDisabled(m.disabled_reason);
  return { projectId, via: "session", userId, role: m.role };
}

/**
 * The user of the request's session cookie, or null when there is none or it is no longer valid (expired,
 * logged out, user deleted). `GET /auth/session` answers with it: the dashboard asks "am I logged in?" without
 * a 401 in the browser console.
 */
export async function sessionUserId(
  ctx: AppContext,
  request: Request,
  jwt: { verify: (t?: string, options?: { currentDate?: Date }) => Promise<false | Record<string, unknown>> },
): Promise<string | null> {
  const token = sessionToken(request);
  if (!token) return null;
  try {
    return (await authenticate(ctx, "session", request, token, jwt)).userId;
  } catch (e) {
    if (e instanceof AppError && e.status === 401) return null;
    throw e;
  }
}

export const sessionTokenHash = (token: string) => createHash("sha256").update(token).digest("hex");

/**
 * Whether a (validly signed, unexpired) session was ended: logged out (its digest is in revoked_sessions)
 * or issued before the user's sessions_valid_after (a password reset). `ia` is the issue time on the
 * service clock (users/routes.ts); a token without it predates the claim and counts as issued at 0.
 */
async function sessionEnded(ctx: AppContext, token: string, payload: Record<string, unknown>, validAfter: number | null): Promise<boolean> {
  if (validAfter !== null) {
    const issued = typeof payload.ia === "number" ? payload.ia : 0;
    if (issued < validAfter) return true;
  }
  const r = await ctx.db.selectFrom("revoked_sessions").select("token_hash").where("token_hash", "=", sessionTokenHash(token)).executeTakeFirst();
  return !!r;
}

/** Ends one session (GET /auth/logout): its token is refused until it would have expired. */
export async function revokeSession(ctx: AppContext, token: string | undefined, jwt: { verify: (t?: string, options?: { currentDate?: Date }) => Promise<false | Record<string, unknown>> }) {
  if (!token) return;
  const now = ctx.clock.now();
  const payload = await jwt.verify(token, { currentDate: new Date(now) });
  if (!payload) return;
  const expiresAt = typeof payload.exp === "number" ? payload.exp * 1000 : now + SESSION_TTL_SECONDS * 1000;
  await ctx.db.deleteFrom("revoked_sessions").where("expires_at", "<", now).execute();
  await ctx.db
    .insertInto("revoked_sessions")
    .values({ token_hash: sessionTokenHash(token), expires_at: expiresAt })
    .onConflict((oc) => oc.doNothing())
    .execute();
}

export { sessionToken };

export function membership(ctx: AppContext, projectId: string, userId: string) {
  const member = ctx.db.selectFrom("project_members as m").innerJoin("projects as p", "p.id", "m.project_id");
  return member.select(["m.role", "p.disabled", "p.disabled_reason"]).where("m.project_id", "=", projectId).where("m.user_id", "=", userId).executeTakeFirst();
}

function projectDisabled(reason: string | null) {
  return new AppError(403, "PROJECT_DISABLED", `This project is disabled${reason ? ` (${reason})` : ""}`, {
    details: reason ? { reason } : undefined,
  });
}

/**
 * Cookie-authenticated writes must come from our own origin. SameSite=Lax already stops most
 * cross-site posts; this closes the rest (old browsers, same-site subdomains).
 */
export function checkCsrf(ctx: AppContext, request: Request) {
  if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return;
  const origin = request.headers.get("origin");
  if (!origin) {
    // No Origin (old browsers, some same-origin navigations): fall back on Fetch Metadata when sent.
    const site = request.headers.get("sec-fetch-site");
    if (site && site !== "same-origin" && site !== "none") throw forbidden("Cross-site request refused");
    return;
  }
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw forbidden("Cross-origin request refused");
  }
  const host = request.headers.get("host");
  const publicHost = (() => {
    try {
      return new URL(ctx.config.publicUrl).host;
    } catch {
      return "";
    }
  })();
  if (originHost !== host && originHost !== publicHost) throw forbidden("Cross-origin request refused");
}

/**
 * docs/api.md "Conventions", Rate limit: one window per project, shared by all its keys and sessions. The auth plugin counts keyed
 * requests and sessions that send X-Project-Id; a member's session on a path that names the project itself
 * (`/domains…`, `/projects/:id/…`) is counted here, once the caller is known to be a member (a stranger's 404
 * spends nothing). Sets the RateLimit-* headers; over the limit, 429 with Retry-After.
 */
export function countSessionRequest(ctx: AppContext, auth: AuthInfo, projectId: string, headers: Record<string, unknown>): void {
  if (auth.via !== "session" || auth.projectId === projectId) return;
  applyRateLimit(ctx, projectId, headers);
}

/** Counts one request against the project's one-minute window: RateLimit-* headers set, 429 with Retry-After over it. */
export function applyRateLimit(ctx: AppContext, projectId: string, headers: Record<string, unknown>) {
  const d = ctx.rateLimiter.hit(projectId);
  headers["RateLimit-Limit"] = d.limitHeader;
  headers["RateLimit-Remaining"] = String(d.remaining);
  headers["RateLimit-Reset"] = String(d.resetSeconds);
  if (!d.allowed) {
    throw new AppError(429, "RATE_LIMIT_EXCEEDED", `Rate limit of ${d.limit} requests per minute exceeded`, {
      details: { limit: d.limit, retryAfterSeconds: d.resetSeconds },
      suggestion: "Wait for the number of seconds in the Retry-After header before retrying.",
      headers: {
        "RateLimit-Limit": d.limitHeader,
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": String(d.resetSeconds),
        "Retry-After": String(d.resetSeconds),
      },
    });
  }
}

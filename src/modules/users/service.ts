import { isUniqueViolation } from "../../db/errors";
import { createHash, randomBytes } from "node:crypto";
import { iso } from "../../clock";
import type { AppContext } from "../../context";
import { sendAccountEmail } from "../send/account-email";
import { AppError, badRequest, conflict, forbidden, unauthorized, validationError } from "../../http/errors";
import { isValidEmail } from "../../net/email-address";
import { RateLimiter } from "../../http/rate-limit";
import { hashPassword, verifyPassword } from "./passwords";

export interface UserView {
  id: string;
  email: string;
  emailVerified: boolean;
  createdAt: string | null;
  updatedAt: string | null;
}

const VERIFY_TTL_MS = 24 * 3_600_000;
const RESET_TTL_MS = 3_600_000;

const hashToken = (t: string) => createHash("sha256").update(t).digest("hex");
const normalizeEmail = (e: string) => e.trim().toLowerCase();

export function viewUser(u: { id: string; email: string; email_verified_at: number | null; created_at: number; updated_at: number }): UserView {
  return { id: u.id, email: u.email, emailVerified: u.email_verified_at !== null, createdAt: iso(u.created_at), updatedAt: iso(u.updated_at) };
}

export async function createUser(ctx: AppContext, input: { email: string; password: string }) {
  const email = normalizeEmail(input.email);
  // HTTP bodies are checked by the route schema first; `mailsvc user create` reaches here directly, and a user
  // with an address login would refuse (422) could never sign in.
  if (!isValidEmail(email)) {
    throw validationError([{ field: "email", message: "Invalid email", code: "invalid_string", received: input.email.slice(0, 254) }], `Invalid email address "${input.email.slice(0, 254)}"`);
  }
  if (input.password.length < 8) {
    throw validationError([{ field: "password", message: "Expected at least 8 characters", code: "too_small" }], "The password must be at least 8 characters");
  }
  const taken = await ctx.db.selectFrom("users").select("id").where("email", "=", email).executeTakeFirst();
  if (taken) throw conflict("An account with this email already exists");
  const now = ctx.clock.now();
  const user = {
    id: Bun.randomUUIDv7(),
    email,
    password_hash: await hashPassword(input.password),
    email_verified_at: null,
    created_at: now,
    updated_at: now,
  };
  try {
    await ctx.db.insertInto("users").values(user).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict("An account with this email already exists");
    throw e;
  }
  return user;
}

export async function signup(ctx: AppContext, input: { email: string; password: string }) {
  if (ctx.config.disableSignups) throw forbidden("Sign-ups are disabled on this server");
  return createUser(ctx, input);
}

// Password guessing and reset-mail flooding, per address: at most LOGIN_FAILURES failed logins per
// LOGIN_WINDOW_MS (then 429 until the window ends, the right password included), at most RESET_MAILS
// reset emails per RESET_WINDOW_MS (more requests get the same answer and send nothing).
const LOGIN_FAILURES = 10;
const LOGIN_WINDOW_MS = 15 * 60_000;
const RESET_MAILS = 5;
const RESET_WINDOW_MS = 60 * 60_000;
/** The account throttles of one instance: failed logins per key, reset mails per address. */
export class AccountLimiters {
  readonly logins: RateLimiter;
  readonly resets: RateLimiter;
  constructor(clock: AppContext["clock"]) {
    this.logins = new RateLimiter(LOGIN_FAILURES, clock, LOGIN_WINDOW_MS);
    this.resets = new RateLimiter(RESET_MAILS, clock, RESET_WINDOW_MS);
  }
}

declare module "../../context" {
  interface Services {
    accountLimiters: AccountLimiters;
  }
}
const limitersOf = (ctx: AppContext) => ctx.services.accountLimiters;

/**
 * The failed-login throttle (LOGIN_FAILURES per LOGIN_WINDOW_MS per key) for other ways in: SMTP
 * submission counts a wrong key under `smtp:<client IP>` (modules/submission/auth.ts).
 */
export const loginThrottle = (ctx: AppContext): Pick<RateLimiter, "hit" | "blockedFor"> => limitersOf(ctx).logins;

export async function login(ctx: AppContext, input: { email: string; password: string }) {
  const email = normalizeEmail(input.email);
  const { logins } = limitersOf(ctx);
  const wait = logins.blockedFor(email);
  if (wait) {
    throw new AppError(429, "RATE_LIMIT_EXCEEDED", `Too many failed logins for this address; try again in ${wait} s`, {
      details: { retryAfterSeconds: wait },
      headers: { "Retry-After": String(wait) },
    });
  }
  const user = await ctx.db.selectFrom("users").selectAll().where("email", "=", email).executeTakeFirst();
  // Hash something even for unknown users so timing does not reveal which emails exist.
  const ok = user
    ? await verifyPassword(input.password, user.password_hash)
    : (await verifyPassword(input.password, await dummyHash()), false);
  if (!user || !ok) {
    logins.hit(email);
    throw unauthorized("Invalid email or password");
  }
  return user;
}
let dummy: Promise<string> | null = null;
/** Made on first use, not at start-up (hashing costs tens of ms and start-up must stay fast). */
const dummyHash = () => (dummy ??= hashPassword("not-a-real-password-" + randomBytes(8).toString("hex")));

export async function getUser(ctx: AppContext, userId: string) {
  const u = await ctx.db.selectFrom("users").selectAll().where("id", "=", userId).executeTakeFirst();
  if (!u) throw unauthorized("Session user no longer exists");
  return u;
}

function requireAccountMail(ctx: AppContext) {
  if (!ctx.config.systemFrom) {
    throw new AppError(400, "BAD_REQUEST", "Account email is not configured on this server", {
      suggestion: "Set MAILSVC_SYSTEM_FROM to an address on a verified domain to enable verification and password-reset emails.",
    });
  }
  return sendAccountEmail;
}

async function issueToken(ctx: AppContext, userId: string, kind: "verify" | "reset", ttl: number): Promise<string> {
  const token = randomBytes(32).toString("base64url");
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("account_tokens").where("user_id", "=", userId).where("kind", "=", kind).execute();
    await trx
      .insertInto("account_tokens")
      .values({ token_hash: hashToken(token), user_id: userId, kind, expires_at: now + ttl, used_at: null, created_at: now })
      .execute();
  });
  return token;
}

/** Marks the token used and returns its user, or throws if unknown, used or expired. */
async function consumeToken(ctx: AppContext, token: string, kind: "verify" | "reset"): Promise<string> {
  const now = ctx.clock.now();
  const r = await ctx.db
    .updateTable("account_tokens")
    .set({ used_at: now })
    .where("token_hash", "=", hashToken(token))
    .where("kind", "=", kind)
    .where("used_at", "is", null)
    .where("expires_at", ">", now)
    .returning("user_id")
    .executeTakeFirst();
  if (!r) throw badRequest("This link is invalid or has expired");
  return r.user_id;
}

const link = (ctx: AppContext, path: string, token: string) => `${ctx.config.publicUrl}${path}?token=${encodeURIComponent(token)}`;

export async function requestVerification(ctx: AppContext, userId: string) {
  const send = requireAccountMail(ctx);
  const user = await getUser(ctx, userId);
  if (user.email_verified_at) return;
  const token = await issueToken(ctx, user.id, "verify", VERIFY_TTL_MS);
  const url = link(ctx, "/auth/verify-email", token);
  await send(ctx, {
    to: user.email,
    subject: "Verify your email address",
    html: `<p>Confirm your email address by opening this link:</p><p><a href="${url}">Verify my email</a></p><p>Your token: <code>${token}</code></p>`,
    text: `Confirm your email address: ${url}\nToken: ${token}`,
  });
}

export async function verifyEmail(ctx: AppContext, token: string) {
  const userId = await consumeToken(ctx, token, "verify");
  const now = ctx.clock.now();
  await ctx.db.updateTable("users").set({ email_verified_at: now, updated_at: now }).where("id", "=", userId).execute();
  return getUser(ctx, userId);
}

export async function requestPasswordReset(ctx: AppContext, email: string) {
  const send = requireAccountMail(ctx);
  const user = await ctx.db.selectFrom("users").selectAll().where("email", "=", normalizeEmail(email)).executeTakeFirst();
  if (!user) return; // same answer whether or not the account exists
  if (!limitersOf(ctx).resets.hit(user.email).allowed) return; // same answer too: nothing more is sent this hour
  const token = await issueToken(ctx, user.id, "reset", RESET_TTL_MS);
  const url = link(ctx, "/auth/reset-password", token);
  await send(ctx, {
    to: user.email,
    subject: "Reset your password",
    html: `<p>Someone asked to reset your password. If it was you, open this link within an hour:</p><p><a href="${url}">Reset my password</a></p><p>Your token: <code>${token}</code></p>`,
    text: `Reset your password (valid for one hour): ${url}\nToken: ${token}`,
  });
}

export async function resetPassword(ctx: AppContext, token: string, password: string) {
  const userId = await consumeToken(ctx, token, "reset");
  const now = ctx.clock.now();
  await ctx.db
    .updateTable("users")
    // Every session issued before the reset ends (a stolen session must not outlive the new password).
    .set({ password_hash: await hashPassword(password), updated_at: now, sessions_valid_after: now })
    .where("id", "=", userId)
    .execute();
}

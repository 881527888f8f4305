// Signed tokens for the links we put in mail: open pixel, click redirect, subscription pages and
// the List-Unsubscribe mailto address. HMAC-SHA256 with a secret generated once per installation
// and kept in the `settings` table (so the one-file backup carries it). A token that does not
// verify is treated as "not found" by every caller: never an open redirect, never a guess oracle.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { AppContext } from "../context";

const SETTING_KEY = "tracking_secret";
/** 128-bit truncated HMAC: plenty against forgery, keeps links short. */
const SIG_BYTES = 16;

const secrets = new WeakMap<AppContext, Buffer>();

/** Loads (or creates, once) the installation's token secret. Called by the tracking module's install. */
export async function loadTokenSecret(ctx: AppContext): Promise<Buffer> {
  const cached = secrets.get(ctx);
  if (cached) return cached;
  const value = await ctx.store.exclusive((sqlite) => {
    const row = sqlite.query<{ value: string }, [string]>("SELECT value FROM settings WHERE key = ?").get(SETTING_KEY);
    if (row) return row.value;
    const fresh = randomBytes(32).toString("base64url");
    sqlite.query("INSERT OR IGNORE INTO settings (key, value) VALUES (?, ?)").run(SETTING_KEY, fresh);
    return sqlite.query<{ value: string }, [string]>("SELECT value FROM settings WHERE key = ?").get(SETTING_KEY)!.value;
  });
  const secret = Buffer.from(value, "base64url");
  secrets.set(ctx, secret);
  return secret;
}

function secretOf(ctx: AppContext): Buffer {
  const s = secrets.get(ctx);
  if (!s) throw new Error("token secret not loaded: the tracking module's install() must run first");
  return s;
}

function mac(secret: Buffer, data: string, bytes = SIG_BYTES): Buffer {
  return createHmac("sha256", secret).update(data).digest().subarray(0, bytes);
}

export type TokenKind = "open" | "click" | "sub";
const KIND_CODE: Record<TokenKind, string> = { open: "o", click: "c", sub: "s" };

/** `base64url(JSON [kind, ...fields]) "." base64url(mac)`; the kind is inside the signed part. */
export function signToken(ctx: AppContext, kind: TokenKind, fields: string[]): string {
  const body = Buffer.from(JSON.stringify([KIND_CODE[kind], ...fields])).toString("base64url");
  return `${body}.${mac(secretOf(ctx), body).toString("base64url")}`;
}

/** The fields of a valid token of `kind`, or null (bad shape, bad signature, other kind). */
export function verifyToken(ctx: AppContext, kind: TokenKind, token: string): string[] | null {
  if (typeof token !== "string" || token.length > 8192) return null;
  const dot = token.lastIndexOf(".");
  if (dot <= 0) return null;
  const body = token.slice(0, dot);
  const sig = Buffer.from(token.slice(dot + 1), "base64url");
  const want = mac(secretOf(ctx), body);
  if (sig.length !== want.length || !timingSafeEqual(sig, want)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(body, "base64url").toString("utf8"));
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed[0] !== KIND_CODE[kind] || !parsed.every((x) => typeof x === "string")) return null;
  return parsed.slice(1) as string[];
}

// ---- the token kinds we hand out ---------------------------------------------------------------

export const openToken = (ctx: AppContext, emailId: string) => signToken(ctx, "open", [emailId]);
export function readOpenToken(ctx: AppContext, token: string): { emailId: string } | null {
  const f = verifyToken(ctx, "open", token);
  return f && f.length === 1 ? { emailId: f[0]! } : null;
}

export const clickToken = (ctx: AppContext, emailId: string, url: string) => signToken(ctx, "click", [emailId, url]);
export function readClickToken(ctx: AppContext, token: string): { emailId: string; url: string } | null {
  const f = verifyToken(ctx, "click", token);
  return f && f.length === 2 ? { emailId: f[0]!, url: f[1]! } : null;
}

/** Subscription pages: the contact when known, else the address (mail to someone who is not a contact). */
export interface Subscriber {
  projectId: string;
  contactId: string | null;
  email: string;
}
export function subscriptionToken(ctx: AppContext, s: Subscriber): string {
  return signToken(ctx, "sub", s.contactId ? [s.projectId, s.contactId] : [s.projectId, "", s.email]);
}
export function readSubscriptionToken(ctx: AppContext, token: string): Subscriber | null {
  const f = verifyToken(ctx, "sub", token);
  if (!f || f.length < 2 || !f[0]) return null;
  if (f[1]) return { projectId: f[0], contactId: f[1], email: "" };
  return f[2] ? { projectId: f[0], contactId: null, email: f[2] } : null;
}

// ---- the List-Unsubscribe mailto local part ------------------------------------------------------
// `unsubscribe+<emailId>-<10 hex>`: 59 characters, inside the 64-octet local-part limit, lower-case
// only (some relays fold case), signed so a guessed address unsubscribes nobody.

const MAILTO_SIG_HEX = 10;
const mailtoSig = (ctx: AppContext, emailId: string) =>
  mac(secretOf(ctx), `mailto:${emailId}`, MAILTO_SIG_HEX / 2).toString("hex");

export const unsubscribeLocalPart = (ctx: AppContext, emailId: string) => `unsubscribe+${emailId}-${mailtoSig(ctx, emailId)}`;

export function readUnsubscribeLocalPart(ctx: AppContext, local: string): { emailId: string } | null {
  const m = /^unsubscribe\+([0-9a-f-]{36})-([0-9a-f]{10})$/.exec(local.toLowerCase());
  if (!m) return null;
  const want = Buffer.from(mailtoSig(ctx, m[1]!));
  const got = Buffer.from(m[2]!);
  return timingSafeEqual(want, got) ? { emailId: m[1]! } : null;
}

/** `bounces+<emailId>`: the VERP Return-Path local part the delivery engine uses. */
export function readBounceLocalPart(local: string): { emailId: string } | null {
  const m = /^bounces\+([0-9a-f-]{36})$/.exec(local.toLowerCase());
  return m ? { emailId: m[1]! } : null;
}

// Signed tokens for the links we put in mail: open pixel, click redirect, subscription pages and
// the List-Unsubscribe mailto address. HMAC-SHA256 with a secret generated once per installation
// and kept in the `settings` table (so the one-file backup carries it). A token that does not
// verify is treated as "not found" by every caller: never an open redirect, never a guess oracle.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { AppContext } from "../../context";
import { settingOrCreate } from "../../db/settings";

const SETTING_KEY = "tracking_secret";
/** 96-bit truncated HMAC: plenty against forgery (no offline oracle), keeps links short. */
const SIG_BYTES = 12;

declare module "../../context" {
  interface Caches {
    /** The installation's token secret, once loaded (settings `tracking_secret`). */
    tokenSecret: { value: Buffer | null };
  }
}

/** Loads (or creates, once) the installation's token secret. Called by the feedback module's install. */
export async function loadTokenSecret(ctx: AppContext): Promise<Buffer> {
  const held = ctx.services.caches.tokenSecret;
  if (held.value) return held.value;
  const value = await settingOrCreate(ctx.db, SETTING_KEY, () => randomBytes(32).toString("base64url"));
  held.value = Buffer.from(value, "base64url");
  return held.value;
}

/** The installation's token secret (loaded by the feedback module's install). */
export function secretOf(ctx: AppContext): Buffer {
  const s = ctx.services.caches.tokenSecret.value;
  if (!s) throw new Error("token secret not loaded: the feedback module's install() must run first");
  return s;
}

function mac(secret: Buffer, data: string, bytes = SIG_BYTES): Buffer {
  return createHmac("sha256", secret).update(data).digest().subarray(0, bytes);
}

/** A keyed digest for other signed names (link keys): `bytes` of HMAC-SHA256, base64url. Takes the secret, not the context: the build worker has no AppContext. */
export const keyedDigest = (secret: Buffer, data: string, bytes: number) => mac(secret, data, bytes).toString("base64url");

export type TokenKind = "open" | "click" | "sub" | "confirm";
const KIND_CODE: Record<TokenKind, number> = { open: 0x6f, click: 0x63, sub: 0x73, confirm: 0x66 };

// Compact binary payloads (links are repeated in every tracked message, so every byte counts):
// kind byte, then fields; a UUID field is 0x01 + 16 bytes, any other string 0x02 + length + UTF-8.
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function packFields(kind: TokenKind, fields: string[]): Buffer {
  const parts: Buffer[] = [Buffer.from([KIND_CODE[kind]])];
  for (const f of fields) {
    if (UUID_RE.test(f)) parts.push(Buffer.from([0x01]), Buffer.from(f.replace(/-/g, ""), "hex"));
    else {
      const bytes = Buffer.from(f, "utf8");
      if (bytes.length > 0xffff) throw new Error("token field too long");
      parts.push(Buffer.from([0x02, bytes.length >> 8, bytes.length & 0xff]), bytes);
    }
  }
  return Buffer.concat(parts);
}

function unpackFields(kind: TokenKind, buf: Buffer): string[] | null {
  if (buf.length < 1 || buf[0] !== KIND_CODE[kind]) return null;
  const out: string[] = [];
  let i = 1;
  while (i < buf.length) {
    const tag = buf[i++];
    if (tag === 0x01) {
      if (i + 16 > buf.length) return null;
      const h = buf.toString("hex", i, i + 16);
      out.push(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
      i += 16;
    } else if (tag === 0x02) {
      if (i + 2 > buf.length) return null;
      const len = (buf[i]! << 8) | buf[i + 1]!;
      i += 2;
      if (i + len > buf.length) return null;
      out.push(buf.toString("utf8", i, i + len));
      i += len;
    } else return null;
  }
  return out;
}

/** `base64url(kind + fields) "." base64url(mac)`; the kind is inside the signed part. */
export function signToken(ctx: AppContext, kind: TokenKind, fields: string[]): string {
  const body = packFields(kind, fields).toString("base64url");
  return `${body}.${mac(secretOf(ctx), body).toString("base64url")}`;
}

/** The fields of a valid token of `kind`, or null (bad shape, bad signature, other kind). */
export function verifyToken(ctx: AppContext, kind: TokenKind, token: string): string[] | null {
  if (typeof token !== "string" || token.length > 8192) return null;
  const dot = token.lastIndexOf(".");
  if (dot <= 0) return null;
  const body = token.slice(0, dot);
  // Compare the encoded text: base64 decoders ignore trailing junk, the signature must be exact.
  const sig = Buffer.from(token.slice(dot + 1));
  const want = Buffer.from(mac(secretOf(ctx), body).toString("base64url"));
  if (sig.length !== want.length || !timingSafeEqual(sig, want)) return null;
  return unpackFields(kind, Buffer.from(body, "base64url"));
}

// ---- the token kinds we hand out ---------------------------------------------------------------

export const openToken = (ctx: AppContext, emailId: string) => signToken(ctx, "open", [emailId]);
export function readOpenToken(ctx: AppContext, token: string): { emailId: string } | null {
  const f = verifyToken(ctx, "open", token);
  return f && f.length === 1 ? { emailId: f[0]! } : null;
}

/**
 * A click URL's token: `<signed email token>.<link key>`. The email part is signed once per message;
 * the link key is the keyed digest that names the URL in tracked_links (see tracked-links.ts), so an
 * altered key finds no link (404) and a foreign one names nothing in this project.
 */
export const clickEmailToken = (ctx: AppContext, emailId: string) => signToken(ctx, "click", [emailId]);
export function readClickToken(ctx: AppContext, token: string): { emailId: string; linkKey: string } | null {
  const dot = typeof token === "string" ? token.lastIndexOf(".") : -1;
  if (dot <= 0) return null;
  const linkKey = token.slice(dot + 1);
  if (!/^[A-Za-z0-9_-]{11}$/.test(linkKey)) return null;
  const f = verifyToken(ctx, "click", token.slice(0, dot));
  return f && f.length === 1 ? { emailId: f[0]!, linkKey } : null;
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

/** Double opt-in: the confirmation row (its expiry and single use live in the row). */
export const confirmationToken = (ctx: AppContext, projectId: string, confirmationId: string) => signToken(ctx, "confirm", [projectId, confirmationId]);
export function readConfirmationToken(ctx: AppContext, token: string): { projectId: string; confirmationId: string } | null {
  const f = verifyToken(ctx, "confirm", token);
  return f && f.length === 2 && f[0] && f[1] ? { projectId: f[0], confirmationId: f[1] } : null;
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

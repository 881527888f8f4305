// Shared assertions of the black-box conformance suite (written from api-spec.md, decisions.md and the decisions
// the README lists where both are silent; never from the code).
import { expect } from "bun:test";
import type { Account, Api, ApiResponse } from "../support/server";

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
/** A UUID that no test ever creates. */
export const NO_SUCH_ID = "00000000-0000-4000-8000-000000000000";

export function isIsoDate(v: unknown): boolean {
  return typeof v === "string" && ISO.test(v) && !Number.isNaN(Date.parse(v));
}

/**
 * The spec's error envelope: `{ success: false, error: { code, message, statusCode, requestId (uuid),
 * errors?, details?, suggestion? }, timestamp }`, with `statusCode` equal to the HTTP status.
 */
export function expectEnvelope(res: ApiResponse, status: number, code?: string) {
  if (res.status !== status) throw new Error(`expected ${status}${code ? " " + code : ""}, got ${res.status}: ${res.text}`);
  expect(res.headers.get("content-type") ?? "").toContain("application/json");
  const b = res.body;
  expect(b).toBeObject();
  expect(b.success).toBe(false);
  expect(b.error).toBeObject();
  expect(typeof b.error.code).toBe("string");
  expect(b.error.code.length).toBeGreaterThan(0);
  expect(typeof b.error.message).toBe("string");
  expect(b.error.message.length).toBeGreaterThan(0);
  expect(b.error.statusCode).toBe(status);
  expect(b.error.requestId).toMatch(UUID);
  expect(isIsoDate(b.timestamp)).toBe(true);
  if (b.error.errors !== undefined) expect(Array.isArray(b.error.errors)).toBe(true);
  if (b.error.details !== undefined) expect(b.error.details).toBeObject();
  if (b.error.suggestion !== undefined) expect(typeof b.error.suggestion).toBe("string");
  if (code) expect(b.error.code).toBe(code);
  return b.error as {
    code: string;
    message: string;
    statusCode: number;
    requestId: string;
    errors?: { field: string; message: string; code: string; received?: unknown }[];
    details?: Record<string, unknown>;
    suggestion?: string;
  };
}

/** 422 VALIDATION_ERROR with a non-empty `errors[]` of `{ field, message, code }`; returns the entries. */
export function expectValidation(res: ApiResponse, field?: string) {
  const err = expectEnvelope(res, 422, "VALIDATION_ERROR");
  expect(Array.isArray(err.errors)).toBe(true);
  expect(err.errors!.length).toBeGreaterThan(0);
  for (const e of err.errors!) {
    expect(typeof e.field).toBe("string");
    expect(typeof e.message).toBe("string");
    expect(typeof e.code).toBe("string");
    expect(e.code.length).toBeGreaterThan(0);
  }
  if (field) expect(err.errors!.map((e) => e.field)).toContain(field);
  return err.errors!;
}

/** The spec's bare body for three 400 cases: exactly `{ error: <string> }`, no envelope. */
export function expectBare400(res: ApiResponse) {
  if (res.status !== 400) throw new Error(`expected bare 400, got ${res.status}: ${res.text}`);
  expect(res.body).toBeObject();
  expect(Object.keys(res.body)).toEqual(["error"]);
  expect(typeof res.body.error).toBe("string");
  expect(res.body.error.length).toBeGreaterThan(0);
}

/** Offset list shape: `{ data[], page, pageSize, total, totalPages }`. */
export function expectOffsetPage(res: ApiResponse, page: number, pageSize: number, total: number) {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${res.text}`);
  expect(Object.keys(res.body).sort()).toEqual(["data", "page", "pageSize", "total", "totalPages"]);
  expect(Array.isArray(res.body.data)).toBe(true);
  expect(res.body.page).toBe(page);
  expect(res.body.pageSize).toBe(pageSize);
  expect(res.body.total).toBe(total);
  expect(res.body.totalPages).toBe(Math.ceil(total / pageSize));
}

/** Cursor list shape: `{ data[], cursor, hasMore, total }`. */
export function expectCursorPage(res: ApiResponse) {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${res.text}`);
  expect(Object.keys(res.body).sort()).toEqual(["cursor", "data", "hasMore", "total"]);
  expect(Array.isArray(res.body.data)).toBe(true);
  expect(typeof res.body.hasMore).toBe("boolean");
  expect(typeof res.body.total).toBe("number");
  if (!res.body.hasMore) expect(res.body.cursor === null || res.body.cursor === undefined || res.body.cursor === "").toBe(true);
}

/** Any 2xx (the spec does not name success status codes). */
export function expectOk(res: ApiResponse) {
  if (res.status < 200 || res.status > 299) throw new Error(`expected 2xx, got ${res.status}: ${res.text}`);
}

/** Cookie `name=value` from a response's Set-Cookie header(s), and its attributes. */
export function cookieOf(res: ApiResponse, name: string): { pair: string; value: string; attrs: string } | null {
  const all = res.headers.getSetCookie?.() ?? [res.headers.get("set-cookie") ?? ""];
  for (const c of all) {
    const [pair, ...rest] = c.split(";");
    const eq = pair!.indexOf("=");
    if (pair!.slice(0, eq).trim() === name) return { pair: pair!.trim(), value: pair!.slice(eq + 1), attrs: rest.join(";").toLowerCase() };
  }
  return null;
}

/** Another project of an existing user (cheaper than a new signup): same user and cookie, new project and keys. */
export async function newProject(api: Api, owner: Account, name = "Extra project"): Promise<Account> {
  const res = await api("/users/@me/projects", { cookie: owner.cookie, body: { name } });
  if (res.status < 200 || res.status > 299) throw new Error(`project create failed: ${res.status} ${res.text}`);
  return { ...owner, projectId: res.body.id, publicKey: res.body.public, secretKey: res.body.secret };
}

/** A header of the raw message, unfolded (mailparser folds List-* headers into a "list" object). */
export function rawHeader(m: { raw: Buffer }, name: string): string | undefined {
  const head = m.raw.toString("utf8").split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(name.toLowerCase() + ":"));
  return line?.slice(name.length + 1).trim();
}

/**
 * An ARF (RFC 5965) abuse report, as a mailbox provider's feedback loop sends it: from `fbl@<reporterDomain>` to
 * `rcptTo`, about the message `originalRaw` that was sent to `originalRcpt`.
 */
export function arfReport(reporterDomain: string, originalRcpt: string, rcptTo: string, originalRaw: Buffer | string): string {
  const b = "bb-arf-boundary";
  return [
    `From: fbl@${reporterDomain}`,
    `To: ${rcptTo}`,
    "Subject: Abuse report",
    "MIME-Version: 1.0",
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${b}"`,
    "",
    `--${b}`,
    "Content-Type: text/plain",
    "",
    "This is an email abuse report.",
    `--${b}`,
    "Content-Type: message/feedback-report",
    "",
    "Feedback-Type: abuse",
    "User-Agent: bb-test/1.0",
    "Version: 1",
    `Original-Rcpt-To: ${originalRcpt}`,
    `--${b}`,
    "Content-Type: message/rfc822",
    "",
    originalRaw.toString(),
    `--${b}--`,
    "",
  ].join("\r\n");
}

/** The `href` targets of an HTML body, entities decoded. */
export const hrefs = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"));
/** The `<img src>` targets of an HTML body, entities decoded. */
export const imgs = (html: string) => [...html.matchAll(/<img[^>]+src="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"));

// The sandbox (docs/sandbox.md). A sandbox project's mail takes
// the real path (sender guard without the verified-domain rule, plan, build, DKIM with the domain's
// key whatever its status, tracking) up to the one point where the outbox would hand the bytes to
// an MX (outbox.ts `send`): there it is captured instead. The capture settles through the same
// nextState/recordOutcomes as a real SMTP answer, so bounces, deferrals and deliveries of captured
// mail run the real code (bounces.ts, suppressions, events, webhooks). Simulated recipients choose
// the answer by local part; complaints, opens and clicks that follow a delivery go through the
// feedback loop's own functions (src/modules/sandbox, through ctx.hooks.sandboxDelivered).
import type { Kysely } from "kysely";
import type { AppContext } from "../../context";
import type { DB } from "../../db";
import type { TopicClear } from "../../jobs/peers";
import type { AttemptResult } from "./next-state";

/** lastReply of a captured email. */
export const CAPTURED_REPLY = "250 2.0.0 Captured by the sandbox: nothing left this server (GET /emails/:id/raw shows the message)";

/** `projectId -> sandbox` per running instance (tests run several in one process); PATCH forgets. */
declare module "../../context" {
  interface Caches {
    /** projectId -> whether it is a sandbox (forgetSandbox drops one). */
    sandbox: Map<string, boolean>;
  }
}
const cacheOf = (ctx: AppContext) => ctx.services.caches.sandbox;

/**
 * Whether the project is a sandbox now (MAILSVC_SANDBOX=true: every project is). Inside a
 * transaction pass it as `db`: the store runs one connection, so a read on ctx.db would wait for it.
 */
export async function isSandbox(ctx: AppContext, projectId: string | null, db: Kysely<DB> = ctx.db): Promise<boolean> {
  if (!projectId) return false; // account emails belong to no project: never captured
  if (ctx.config.sandbox) return true;
  const c = cacheOf(ctx);
  const hit = c.get(projectId);
  if (hit !== undefined) return hit;
  const row = await db.selectFrom("projects").select("sandbox").where("id", "=", projectId).executeTakeFirst();
  const v = !!row?.sandbox;
  if (c.size > 10_000) c.clear();
  c.set(projectId, v);
  return v;
}

/** After the project's sandbox setting changed (or it was deleted): the local clear of topic "sandbox". */
export function forgetSandbox(ctx: AppContext, projectId: string): void {
  cacheOf(ctx).delete(projectId);
}

/** The "sandbox" cache topic (src/jobs/peers.ts; changes call `invalidate(ctx, "sandbox", projectId)`). */
export const sandboxTopic: TopicClear = { one: forgetSandbox, all: (ctx) => cacheOf(ctx).clear() };

/** The simulated recipients: what the sandbox answers for a local part (any domain). */
export type Simulation = "bounce" | "softbounce" | "complaint" | "open" | "click" | null;
const SIMULATED = new Set(["bounce", "softbounce", "complaint", "open", "click"]);

export function simulationOf(toEmail: string): Simulation {
  const local = toEmail.slice(0, toEmail.lastIndexOf("@")).toLowerCase();
  return SIMULATED.has(local) ? (local as Simulation) : null;
}

/**
 * The answer the sandbox gives in place of an MX: `bounce@` a 550 5.1.1 (hard bounce),
 * `softbounce@` a 450 on its first attempt and a delivery on the retry, everyone else a delivery.
 */
export function capturedResult(toEmail: string, attemptsBefore: number): AttemptResult {
  const sim = simulationOf(toEmail);
  if (sim === "bounce") {
    return { kind: "bounced", code: 550, stage: "rcpt", host: null, reply: `550 5.1.1 <${toEmail}>: Recipient address rejected: user unknown (sandbox simulation)` };
  }
  if (sim === "softbounce" && attemptsBefore === 0) {
    return { kind: "deferred", code: 450, stage: "rcpt", host: null, reply: `450 4.2.1 <${toEmail}>: Mailbox temporarily unavailable, try again later (sandbox simulation)` };
  }
  return { kind: "delivered", code: 250, stage: "data", host: null, reply: CAPTURED_REPLY };
}

/** The message as the receiving server stores it: SMTP DATA's dot-stuffing (smtp-data.ts) undone; always a copy. */
export function fromSmtpData(data: Buffer): Buffer {
  const out = Buffer.allocUnsafe(data.length);
  let o = 0;
  let lineStart = true;
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    if (lineStart && c === 0x2e) {
      lineStart = false;
      continue; // the doubled dot: the first one goes
    }
    out[o++] = c;
    lineStart = c === 0x0a;
  }
  return Buffer.from(out.subarray(0, o));
}

/** A message kept for GET /emails/:id/raw. */
export interface KeptRaw {
  emailId: string;
  projectId: string | null;
  raw: Buffer;
  sandbox: boolean;
}

/**
 * Stores kept messages (the latest attempt's bytes replace an earlier one) and marks captured
 * emails `sandbox`, in one transaction, before their outcome is recorded: an email is never seen
 * DELIVERED by the sandbox without its message.
 */
export async function keepRaw(ctx: AppContext, items: KeptRaw[], now: number): Promise<void> {
  if (!items.length) return;
  await ctx.db.transaction().execute(async (trx) => {
    for (const it of items) {
      await trx
        .insertInto("email_raw")
        .values({ email_id: it.emailId, project_id: it.projectId, raw: it.raw, created_at: now })
        .onConflict((oc) => oc.column("email_id").doUpdateSet({ raw: it.raw, created_at: now }))
        .execute();
    }
    const captured = items.filter((i) => i.sandbox).map((i) => i.emailId);
    if (captured.length) await trx.updateTable("emails").set({ sandbox: 1 }).where("id", "in", captured).execute();
  });
}

/**
 * The kept message of a project's email, or null: never kept, or (mail that was really sent) kept
 * while MAILSVC_KEEP_RAW was set and it no longer is.
 */
export async function rawMessage(ctx: AppContext, projectId: string, emailId: string): Promise<{ raw: Buffer; sandbox: boolean } | null> {
  const row = await ctx.db
    .selectFrom("email_raw as r")
    .innerJoin("emails as e", "e.id", "r.email_id")
    .select(["r.raw", "e.sandbox"])
    .where("r.email_id", "=", emailId)
    .where("e.project_id", "=", projectId)
    .executeTakeFirst();
  if (!row || (!row.sandbox && !ctx.config.keepRaw)) return null;
  return { raw: Buffer.from(row.raw), sandbox: !!row.sandbox };
}

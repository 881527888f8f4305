import type { Selectable } from "kysely";
import { iso } from "../../clock";
import type { ProjectsTable } from "../../db/tables/foundation";
import type { AppContext } from "../../context";
import { AppError, badRequest, conflict, forbidden, invalidState, notFound } from "../../http/errors";
import { generateKey } from "../../http/keys";
import { newWebhookSecret } from "../../webhooks/sign";
import { doubleOptInPatch, viewDoubleOptIn, type DoubleOptIn } from "../double-opt-in/service";
import { wipeProjectRows } from "./reset-store";
import { invalidate } from "../../jobs/peers";

export type Role = "OWNER" | "ADMIN" | "MEMBER";
export const ROLES: Role[] = ["OWNER", "ADMIN", "MEMBER"];
export const TRACKING_MODES = ["ENABLED", "DISABLED", "MARKETING_ONLY"] as const;
export type TrackingMode = (typeof TRACKING_MODES)[number];

type ProjectRow = Selectable<ProjectsTable>;

/** `sandboxForced`: MAILSVC_SANDBOX makes every project a sandbox, whatever its own setting. */
export function viewProject(p: ProjectRow, role?: string, sandboxForced = false) {
  // A MEMBER only reads: the secret key (which acts as ADMIN on /projects/:id/* and outlives the
  // membership) and the webhook signing secret are not theirs to see.
  const member = role === "MEMBER";
  return {
    id: p.id,
    name: p.name,
    public: p.public_key,
    secret: member ? null : p.secret_key,
    webhookSecret: member ? null : (p.webhook_secret ?? null),
    disabled: !!p.disabled,
    disabledReason: p.disabled_reason,
    tracking: p.tracking,
    sandbox: !!p.sandbox || sandboxForced,
    doubleOptIn: viewDoubleOptIn(p),
    postalAddress: p.postal_address ?? null,
    createdAt: iso(p.created_at),
    updatedAt: iso(p.updated_at),
    ...(role ? { role } : {}),
  };
}

export async function createProject(ctx: AppContext, ownerId: string, name: string, opts: { sandbox?: boolean } = {}) {
  const now = ctx.clock.now();
  const project: ProjectRow = {
    id: Bun.randomUUIDv7(),
    name,
    public_key: generateKey("pk"),
    secret_key: generateKey("sk"),
    webhook_secret: newWebhookSecret(),
    disabled: 0,
    disabled_reason: null,
    tracking: "MARKETING_ONLY", // docs/deliverability.md "what a fresh install must get right": new projects track marketing mail only; existing ones keep their mode
    sandbox: opts.sandbox ? 1 : 0,
    double_opt_in: 0,
    double_opt_in_template_id: null,
    double_opt_in_redirect_url: null,
    postal_address: null,
    created_at: now,
    updated_at: now,
  };
  await ctx.db.transaction().execute(async (trx) => {
    await trx.insertInto("projects").values(project).execute();
    await trx.insertInto("project_members").values({ project_id: project.id, user_id: ownerId, role: "OWNER", created_at: now }).execute();
  });
  return project;
}

/** Whether the project is disabled, and why. */
export async function suspensionState(ctx: AppContext, projectId: string) {
  return ctx.db.selectFrom("projects").select(["disabled", "disabled_reason"]).where("id", "=", projectId).executeTakeFirstOrThrow();
}

/** The projects a user is a member of, each with the user's role. */
const membershipsOf = (ctx: AppContext, userId: string) =>
  ctx.db.selectFrom("projects as p").innerJoin("project_members as m", "m.project_id", "p.id").selectAll("p").select("m.role").where("m.user_id", "=", userId);

export async function listProjects(ctx: AppContext, userId: string) {
  const rows = await membershipsOf(ctx, userId).orderBy("p.created_at", "desc").execute();
  return rows.map((r) => viewProject(r, r.role, ctx.config.sandbox));
}

/** Loads the project and the caller's role; 404 when the user is not a member (no existence leak). */
export async function projectForMember(ctx: AppContext, projectId: string, userId: string) {
  const row = await membershipsOf(ctx, userId).where("p.id", "=", projectId).executeTakeFirst();
  if (!row) throw notFound("Project");
  return row;
}

export function requireRole(role: string, allowed: Role[], action: string) {
  if (!allowed.includes(role as Role)) throw forbidden(`Your role (${role}) cannot ${action}`);
}

/**
 * A dashboard (session) route's guard: the caller is a member of the project (404 otherwise) and,
 * when `need` says so, has one of its roles (403 naming the action); then runs `fn` with the membership.
 */
export async function asMember<T>(ctx: AppContext, userId: string, projectId: string, need: { roles: Role[]; action: string } | null, fn: (m: Awaited<ReturnType<typeof projectForMember>>) => T | Promise<T>): Promise<T> {
  const m = await projectForMember(ctx, projectId, userId);
  if (need) requireRole(m.role, need.roles, need.action);
  return fn(m);
}

export async function updateProject(ctx: AppContext, projectId: string, patch: { name?: string; tracking?: TrackingMode; sandbox?: boolean; doubleOptIn?: Partial<DoubleOptIn>; postalAddress?: string | null }) {
  const now = ctx.clock.now();
  const doi = patch.doubleOptIn ? await doubleOptInPatch(ctx, projectId, patch.doubleOptIn) : {};
  const wasSandbox = patch.sandbox === false && !!(await ctx.db.selectFrom("projects").select("sandbox").where("id", "=", projectId).executeTakeFirst())?.sandbox;
  // An address is one line in footers: line breaks become ", ", blank is none.
  const postal = patch.postalAddress === undefined ? undefined : (patch.postalAddress ?? "").split(/\s*[\r\n]+\s*/).filter(Boolean).join(", ").trim() || null;
  const row = await ctx.db
    .updateTable("projects")
    .set({
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.tracking ? { tracking: patch.tracking } : {}),
      ...(patch.sandbox !== undefined ? { sandbox: patch.sandbox ? 1 : 0 } : {}),
      ...doi,
      ...(postal !== undefined ? { postal_address: postal } : {}),
      updated_at: now,
    })
    .where("id", "=", projectId)
    .returningAll()
    .executeTakeFirstOrThrow();
  invalidate(ctx, "keys", projectId);
  invalidate(ctx, "doubleOptIn", projectId);
  invalidate(ctx, "sandbox", projectId);
  // Mail queued while the project was a sandbox (sender domains unchecked) stays sandbox mail: captured, never sent.
  if (wasSandbox) {
    await ctx.db.updateTable("emails").set({ sandbox: 1 }).where("project_id", "=", projectId).where("status", "in", ["PENDING", "DEFERRED", "SENDING"]).execute();
  }
  return row;
}

export async function rotateKeys(ctx: AppContext, projectId: string) {
  const row = await ctx.db
    .updateTable("projects")
    .set({ public_key: generateKey("pk"), secret_key: generateKey("sk"), webhook_secret: newWebhookSecret(), updated_at: ctx.clock.now() })
    .where("id", "=", projectId)
    .returningAll()
    .executeTakeFirstOrThrow();
  invalidate(ctx, "keys", projectId);
  return row;
}

export async function deleteProject(ctx: AppContext, projectId: string) {
  for (const reset of ctx.contributions.resetProject) await reset(ctx, projectId);
  await ctx.db.deleteFrom("projects").where("id", "=", projectId).execute();
  invalidate(ctx, "keys", projectId);
  invalidate(ctx, "sandbox", projectId);
}

/**
 * Wipes the project's data (contacts, events, emails, templates, uploads, jobs, … every table with a
 * project_id outside KEPT_TABLES) in ONE transaction; keeps the project, its keys, members, domains
 * and billing. The modules' resetProject hooks run afterwards for their caches (and any leftovers).
 */
export async function resetProject(ctx: AppContext, projectId: string) {
  const deleted = await wipeProjectRows(ctx.db, ctx.store.engine, projectId);
  for (const reset of ctx.contributions.resetProject) await reset(ctx, projectId);
  ctx.log.info("project reset", { projectId, deleted });
}

// ---- members ------------------------------------------------------------------------------

export async function listMembers(ctx: AppContext, projectId: string) {
  const rows = await ctx.db
    .selectFrom("project_members as m")
    .innerJoin("users as u", "u.id", "m.user_id")
    .select(["m.user_id", "u.email", "m.role", "m.created_at"])
    .where("m.project_id", "=", projectId)
    .orderBy("m.created_at")
    .execute();
  return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, createdAt: iso(r.created_at) }));
}

export async function inviteMember(ctx: AppContext, projectId: string, actorRole: string, input: { email: string; role: Role }) {
  requireRole(actorRole, ["OWNER", "ADMIN"], "invite members");
  if (input.role === "OWNER" && actorRole !== "OWNER") throw forbidden("Only an owner can add another owner");
  const user = await ctx.db.selectFrom("users").select(["id", "email"]).where("email", "=", input.email.trim().toLowerCase()).executeTakeFirst();
  if (!user) throw new AppError(404, "NOT_FOUND", "No user with this email exists; they must sign up first");
  const now = ctx.clock.now();
  const ins = await ctx.db
    .insertInto("project_members")
    .values({ project_id: projectId, user_id: user.id, role: input.role, created_at: now })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  if (!Number(ins.numInsertedOrUpdatedRows)) throw conflict("This user is already a member of the project");
  return { userId: user.id, email: user.email, role: input.role, createdAt: iso(now) };
}

async function memberRole(db: AppContext["db"], projectId: string, userId: string) {
  const m = await db.selectFrom("project_members").select("role").where("project_id", "=", projectId).where("user_id", "=", userId).executeTakeFirst();
  if (!m) throw notFound("Member");
  return m.role;
}

async function ownerCount(db: AppContext["db"], projectId: string) {
  const r = await db
    .selectFrom("project_members")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("project_id", "=", projectId)
    .where("role", "=", "OWNER")
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function changeRole(ctx: AppContext, projectId: string, actor: { userId: string; role: string }, targetId: string, role: Role) {
  requireRole(actor.role, ["OWNER", "ADMIN"], "change roles");
  // The last-owner check and the write in one transaction: two demotions (or removals) of the last two
  // owners at once must not both see two owners.
  await ctx.db.transaction().execute(async (trx) => {
    const current = await memberRole(trx, projectId, targetId);
    if (actor.role !== "OWNER" && (current === "OWNER" || role === "OWNER")) throw forbidden("Only an owner can change an owner's role or make an owner");
    if (current === "OWNER" && role !== "OWNER" && (await ownerCount(trx, projectId)) <= 1) {
      throw invalidState("The last owner cannot be demoted; make another member owner first");
    }
    await trx
      .updateTable("project_members")
      .set({ role })
      .where("project_id", "=", projectId)
      .where("user_id", "=", targetId)
      .execute();
  });
  const [m] = (await listMembers(ctx, projectId)).filter((x) => x.userId === targetId);
  return m!;
}

export async function removeMember(ctx: AppContext, projectId: string, actor: { userId: string; role: string }, targetId: string) {
  await ctx.db.transaction().execute(async (trx) => {
    const current = await memberRole(trx, projectId, targetId);
    const self = actor.userId === targetId;
    if (!self) {
      requireRole(actor.role, ["OWNER", "ADMIN"], "remove members");
      if (current === "OWNER" && actor.role !== "OWNER") throw forbidden("Only an owner can remove an owner");
    }
    // Checked in the same transaction as the delete: two owners leaving at once cannot both pass it.
    if (current === "OWNER" && (await ownerCount(trx, projectId)) <= 1) {
      throw invalidState("The last owner cannot be removed; make another member owner first");
    }
    await trx.deleteFrom("project_members").where("project_id", "=", projectId).where("user_id", "=", targetId).execute();
  });
}

// ---- state ----------------------------------------------------------------------------------

export async function setupState(ctx: AppContext, projectId: string) {
  const p = await ctx.db.selectFrom("projects").selectAll().where("id", "=", projectId).executeTakeFirst();
  if (!p) throw notFound("Project");
  const members = await listMembers(ctx, projectId);
  const state: Record<string, unknown> = { projectId, hasKeys: true, members: members.length };
  for (const part of ctx.contributions.setupState) Object.assign(state, await part(ctx, projectId));
  // The onboarding checklist in one place: a domain, a verified domain, a first contact, a first send.
  const n = (k: string) => (typeof state[k] === "number" ? (state[k] as number) : 0);
  state.hasDomain = n("domains") > 0;
  state.hasVerifiedDomain = n("verifiedDomains") > 0;
  state.hasContacts = n("contacts") > 0;
  state.hasSentEmail = !!state.hasSentEmail;
  state.completed = !!(state.hasVerifiedDomain && state.hasContacts && state.hasSentEmail);
  return state;
}

export function parseRole(raw: unknown): Role {
  if (typeof raw === "string" && ROLES.includes(raw as Role)) return raw as Role;
  throw badRequest(`role must be one of ${ROLES.join(", ")}`);
}

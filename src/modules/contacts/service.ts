/** The rules of the contacts endpoints; typed inputs, no HTTP. */
import type { AppContext } from "../../context";
import { flipEventName, normalizeContactEmail, upsertContact, viewContact, type ContactView } from "../../audience/contacts";
import { applyDataRules, dataErrors, isValidDataKey, parseData, RESERVED_DATA_KEYS, type Data } from "../../audience/data-rules";
import { notifyEvents, recordEvent, type RecordedEvent } from "../../audience/events";
import { contactsChanged } from "../../audience/changes";
import { trackFollowPlan } from "../../audience/segments/membership";
import { aggregateUsage } from "../../audience/usage";
import { badRequest, conflict, invalidField, notFound, validationError, type FieldError } from "../../http/errors";
import { cursorPage, type CursorPage, type CursorParams } from "../../http/pagination";
import { isValidEmail } from "../../net/email-address";
import { fieldStats } from "../analytics/service";
import * as q from "./queries";

// ---- edge checks shared by routes ---------------------------------------------------------------

/** 422 unless `email` is a valid address (checked after the route's own "missing" rule). */
export function requireValidEmail(email: string, field = "email"): string {
  const e = email.trim();
  if (!isValidEmail(e)) throw invalidField(field, "Invalid email", "invalid_string", email.slice(0, 254));
  return e;
}

/** `data` must be an object or null: arrays and primitives are 422 (and so are unusable keys). */
export function requireData(raw: unknown, field = "data"): Data | null | undefined {
  if (raw === undefined || raw === null) return raw;
  const errors: FieldError[] = dataErrors(raw, field);
  if (errors.length) throw validationError(errors);
  return raw as Data;
}

// ---- list -----------------------------------------------------------------------------------------

export interface ListInput {
  search?: string;
  subscribed?: boolean;
  sort: q.ContactSort;
  dir: q.SortDir;
  page: CursorParams;
}

export async function listContacts(ctx: AppContext, projectId: string, input: ListInput): Promise<CursorPage<ContactView>> {
  const search = input.search?.trim().toLowerCase() || undefined;
  const { after } = input.page;
  if (after) {
    const want = input.sort === "email" ? "string" : "number";
    if (typeof after.v !== want) throw badRequest("cursor does not belong to this sort order", { details: { sort: input.sort } });
  }
  const filter = { projectId, search, subscribed: input.subscribed };
  const page = { ...filter, sort: input.sort, dir: input.dir, limit: input.page.limit, after };
  const found = search ? await searchPage(ctx, { ...page, search }) : null;
  const rows = found ? found.rows : await q.selectContactPage(ctx, page);
  const total = !input.page.isFirstPage ? 0 : found ? found.total : await q.countContacts(ctx, filter);
  return cursorPage(rows, input.page, {
    total: () => total,
    sortValue: (r) => (input.sort === "email" ? r.email : r.created_at),
    id: (r) => r.id,
    map: viewContact,
  });
}

/** Above this many matches a search pages through the sort index and counts separately. */
const SEARCH_CANDIDATES = 5000;

/**
 * A search page from one scan when the term is rare enough: all matches are sorted in memory and
 * the page rows fetched by id. Null when there are too many matches (the sort index then finds a
 * page quickly because matches are dense).
 */
async function searchPage(ctx: AppContext, p: q.ListPageQuery & { search: string }) {
  const matches = await q.searchMatches(ctx, p, SEARCH_CANDIDATES);
  if (matches.length > SEARCH_CANDIDATES) return null;
  const key = (m: { email: string; created_at: number; id: string }) => (p.sort === "email" ? [m.email, ""] : [m.created_at, m.id]) as [string | number, string];
  const cmp = (a: typeof matches[number], b: typeof matches[number]) => {
    const [av, ai] = key(a);
    const [bv, bi] = key(b);
    const c = av < bv ? -1 : av > bv ? 1 : ai < bi ? -1 : ai > bi ? 1 : 0;
    return p.dir === "asc" ? c : -c;
  };
  let list = matches;
  if (p.after) {
    const pivot = { id: p.after.id, email: String(p.after.v), created_at: Number(p.after.v) };
    list = list.filter((m) => cmp(m, pivot) > 0);
  }
  list.sort(cmp);
  const ids = list.slice(0, p.limit + 1).map((m) => m.id);
  const byId = new Map((await q.selectContactsByIds(ctx, p.projectId, ids)).map((r) => [r.id, r]));
  return { rows: ids.map((id) => byId.get(id)!).filter(Boolean), total: matches.length };
}

// ---- single contact -------------------------------------------------------------------------------

export async function createOrUpdate(
  ctx: AppContext,
  projectId: string,
  input: { email: string; subscribed?: boolean; data?: Data | null },
) {
  const r = await ctx.db.transaction().execute((trx) =>
    upsertContact(trx, ctx, { projectId, email: input.email, subscribed: input.subscribed, defaultSubscribed: true, data: input.data, source: "api" }),
  );
  await notifyEvents(ctx, r.events);
  await contactsChanged(ctx, projectId, [r.contact.id]);
  return { contact: { ...viewContact(r.contact), _meta: { isNew: r.isNew, isUpdate: r.isUpdate } }, isNew: r.isNew };
}

export async function getContact(ctx: AppContext, projectId: string, id: string): Promise<ContactView> {
  const row = await q.selectContact(ctx, projectId, id);
  if (!row) throw notFound("Contact");
  return viewContact(row);
}

export async function updateContact(
  ctx: AppContext,
  projectId: string,
  id: string,
  input: { email?: string; subscribed?: boolean; data?: Data | null },
): Promise<ContactView> {
  const events: RecordedEvent[] = [];
  const row = await ctx.db.transaction().execute(async (trx) => {
    // Locked on PostgreSQL: a concurrent write of this contact through another instance waits (no lost data key).
    const row = await trx
      .selectFrom("contacts")
      .selectAll()
      .where("project_id", "=", projectId)
      .where("id", "=", id)
      .$if(ctx.store.engine === "postgres", (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!row) throw notFound("Contact");
    const next = { ...row };
    if (input.email !== undefined) {
      const email = normalizeContactEmail(input.email);
      if (email !== row.email) {
        const other = await trx.selectFrom("contacts").select("id").where("project_id", "=", projectId).where("email", "=", email).executeTakeFirst();
        if (other) throw conflict("Another contact in this project has this email", { email, contactId: other.id });
        next.email = email;
      }
    }
    const rules = applyDataRules(parseData(row.data), input.data);
    if (rules.changed) next.data = JSON.stringify(rules.stored);
    const flip = input.subscribed === undefined ? null : flipEventName(row.subscribed === 1, input.subscribed);
    if (flip) next.subscribed = input.subscribed ? 1 : 0;
    if (next.email === row.email && !rules.changed && !flip) return row;
    next.updated_at = ctx.clock.now();
    await trx
      .updateTable("contacts")
      .set({ email: next.email, data: next.data, subscribed: next.subscribed, ...(next.subscribed === 1 ? { pending_confirmation: 0 } : {}), updated_at: next.updated_at })
      .where("id", "=", row.id)
      .execute();
    if (flip) {
      const data = { source: "api" };
      const eventId = await recordEvent(trx, ctx, { projectId, contactId: row.id, name: flip, data });
      events.push({ projectId, contactId: row.id, eventId, name: flip, data });
    }
    return next;
  });
  await notifyEvents(ctx, events);
  await contactsChanged(ctx, projectId, [row.id]);
  return viewContact(row);
}

/** Permanent delete; the contact's events go with it. */
export async function deleteContact(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const r = await ctx.db.deleteFrom("contacts").where("project_id", "=", projectId).where("id", "=", id).executeTakeFirst();
  if (!Number(r.numDeletedRows)) throw notFound("Contact");
}

export async function lookup(ctx: AppContext, projectId: string, emails: string[]) {
  const wanted = new Map<string, string>(); // normalized -> as given
  for (const raw of emails) {
    const n = normalizeContactEmail(raw);
    if (!wanted.has(n)) wanted.set(n, raw.trim());
  }
  // No stored address is longer than 320 characters: longer strings need no look-up.
  const rows = await q.selectByEmails(ctx, projectId, [...wanted.keys()].filter((e) => e.length <= 320));
  const byEmail = new Map(rows.map((r) => [r.email, r]));
  const found: { id: string; email: string; subscribed: boolean }[] = [];
  const notFound: string[] = [];
  for (const [n, given] of wanted) {
    const r = byEmail.get(n);
    if (r) found.push({ id: r.id, email: r.email, subscribed: r.subscribed === 1 });
    else notFound.push(given);
  }
  return { found, notFound };
}

// ---- fields ---------------------------------------------------------------------------------------

export type FieldType = "string" | "number" | "boolean" | "date" | "object" | "mixed";

const STANDARD_FIELDS: { name: string; type: FieldType }[] = [
  { name: "id", type: "string" },
  { name: "email", type: "string" },
  { name: "subscribed", type: "boolean" },
  { name: "createdAt", type: "date" },
  { name: "updatedAt", type: "date" },
];

const round2 = (n: number) => Math.round(n * 100) / 100;

const KIND_TYPE: Record<string, FieldType> = {
  text: "string",
  date: "date",
  integer: "number",
  real: "number",
  true: "boolean",
  false: "boolean",
  object: "object",
  array: "object",
};

/**
 * Standard fields, and custom fields with the type inferred from the stored values and the share of
 * contacts having them: read from contact_field_stats (kept by triggers, migration 011), not a scan.
 */
export async function listFields(ctx: AppContext, projectId: string) {
  const [stats, total] = await Promise.all([fieldStats(ctx, projectId), q.contactCount(ctx, projectId)]);
  const byKey = new Map<string, { n: number; types: Set<FieldType> }>();
  for (const s of stats) {
    const e = byKey.get(s.key) ?? { n: 0, types: new Set<FieldType>() };
    e.n += Number(s.n);
    const t = KIND_TYPE[s.kind];
    if (t) e.types.add(t);
    byKey.set(s.key, e);
  }
  const custom = [...byKey]
    .map(([name, e]) => {
      // Dates mixed with other strings are strings.
      if (e.types.has("date") && e.types.has("string")) e.types.delete("date");
      const type: FieldType = e.types.size === 1 ? [...e.types][0]! : "mixed";
      return { name, path: `data.${name}`, type, coverage: total ? round2(Math.min(100, (e.n / total) * 100)) : 0 };
    })
    .sort((a, b) => b.coverage - a.coverage || a.name.localeCompare(b.name));
  return { standard: STANDARD_FIELDS, custom };
}

/** `plan` and `data.plan` both name the custom field `plan`. */
export function fieldKey(raw: string): string {
  const key = raw.startsWith("data.") ? raw.slice(5) : raw;
  if (!isValidDataKey(key) || RESERVED_DATA_KEYS.has(key)) throw badRequest(`"${raw.slice(0, 200)}" is not a custom field name`);
  return key;
}

export async function fieldValues(ctx: AppContext, projectId: string, rawField: string, limit: number) {
  const key = fieldKey(rawField);
  const rows = await q.fieldValues(ctx, projectId, key, limit);
  return {
    field: key,
    values: rows.map((r) => ({ value: r.v === null ? null : JSON.parse(r.v), count: Number(r.n) })),
  };
}

export async function fieldUsage(ctx: AppContext, projectId: string, rawField: string) {
  const key = fieldKey(rawField);
  return aggregateUsage(ctx, ctx.contributions.fieldUsage, projectId, key);
}

export async function deleteField(ctx: AppContext, projectId: string, rawField: string) {
  const key = fieldKey(rawField);
  // A contact write like any other: the tracked segments that read the key follow (exit events).
  const plan = await trackFollowPlan(ctx, projectId);
  const follow = !!plan?.tracked.some((t) => t.deps.keys.has(key));
  const r = await q.deleteField(ctx, projectId, key, ctx.clock.now(), { ids: follow });
  await contactsChanged(ctx, projectId, r.ids);
  return { field: key, contactsUpdated: r.changed };
}


/**
 * /v1/track's write path: a micro-batcher. Requests validated at the edge are queued; one flush
 * per event-loop turn commits every pending track in ONE transaction (raw statements through `Q`)
 * and only then resolves each request, so a 200 still means "persisted". On SQLite each track is a
 * few prepared statements; on PostgreSQL a batch whose projects have no tracked segments is
 * set-based (applyTracksPg: four statements for the whole batch). The project's tracked segments
 * follow each written contact in that same transaction (segments/follow.ts: only the segments the
 * write can move). If a batch fails as a whole it is replayed one track per transaction, so a bad
 * item only fails its own request (a lost race with another instance is tried again).
 * Events (segment entries/exits included) wake the event feed after the commit (its consumers take them from the log).
 */
import { isTransientConflict, isUniqueViolation } from "../db/errors";
import { atomic, type Q } from "../db/raw";
import type { AppContext } from "../context";
import type { Data } from "./data-rules";
import type { RecordedEvent } from "./events";
import { contactsByEmailPg, insertContactsPg, insertEventRaw, insertEventsRaw, updateContactsPg, upsertContactRaw } from "./raw";
import { newContactRow, normalizeContactEmail, planUpsert, updatedContactRow, type ContactRow } from "./contacts";
import { SegmentFollower, type FollowPlan } from "./segments/follow";
import { scheduleRecount } from "./segments/recount";
import { trackFollowPlan } from "./segments/membership";

export interface TrackInput {
  projectId: string;
  /** Validated; any case. */
  email: string;
  /** Validated and not reserved. */
  event: string;
  subscribed?: boolean;
  data?: Data | null;
}

export interface TrackResult {
  contactId: string;
  eventId: string;
  createdAt: number;
  /** The tracked event plus a subscription event when the track flipped `subscribed`. */
  events: RecordedEvent[];
}

/**
 * One track inside an open transaction: upsert the contact (new contacts subscribed by default),
 * insert the event, then move the contact in the project's tracked segments when `follow` is given.
 */
export async function applyTrack(q: Q, now: number, input: TrackInput, follow?: { plan: FollowPlan; follower: SegmentFollower }): Promise<TrackResult> {
  const r = await upsertContactRaw(q, now, {
    projectId: input.projectId,
    email: input.email,
    subscribed: input.subscribed,
    defaultSubscribed: true,
    data: input.data,
    source: "track",
  }, { withMemberships: follow !== undefined });
  const eventId = await insertEventRaw(q, now, { projectId: input.projectId, contactId: r.contact.id, name: input.event, data: r.provided });
  const events = r.events;
  events.push({ projectId: input.projectId, contactId: r.contact.id, eventId, name: input.event, data: r.provided });
  if (follow) {
    const c = r.contact;
    const contact = { id: c.id, email: c.email, subscribed: c.subscribed === 1, data: r.stored, createdAt: c.created_at, updatedAt: c.updated_at };
    const recorded = r.flip ? [r.flip, input.event] : [input.event];
    // r.memberships: asked for above (withMemberships), so always set here.
    await follow.follower.follow(follow.plan, contact, { isNew: r.isNew, keys: r.changedKeys, events: recorded, subscribed: r.flip !== null, updated: r.changed }, r.memberships!);
  }
  return { contactId: r.contact.id, eventId, createdAt: now, events };
}

/**
 * PostgreSQL, a batch whose projects have no tracked segments: the same tracks as applyTrack one
 * after the other, in four statements instead of ~3 per track. Every contact of the batch is read at
 * once, each track is planned in queue order by the same planner (a second track of an email sees
 * the first one's result), then the new contacts, the changed contacts (their last state) and every
 * event (in the per-row order: a subscription flip before its track) are written in one statement each.
 */
export async function applyTracksPg(q: Q, now: number, inputs: readonly TrackInput[]): Promise<TrackResult[]> {
  const keyOf = (projectId: string, email: string) => `${projectId}\n${email}`;
  const emails = inputs.map((i) => normalizeContactEmail(i.email));
  const wanted = new Map<string, { projectId: string; email: string }>();
  inputs.forEach((i, n) => wanted.set(keyOf(i.projectId, emails[n]!), { projectId: i.projectId, email: emails[n]! }));
  const state = new Map<string, ContactRow>();
  for (const row of await contactsByEmailPg(q, [...wanted.values()])) state.set(keyOf(row.project_id, row.email), row);

  const inserted = new Map<string, ContactRow>(); // contact id -> its row as inserted (last state)
  const updated = new Map<string, { row: ContactRow; subscribedOnce: boolean }>();
  const events: { projectId: string; contactId: string; name: string; data: Data }[] = [];
  const perTrack: { contactId: string; from: number; to: number }[] = [];
  inputs.forEach((input, n) => {
    const key = keyOf(input.projectId, emails[n]!);
    const existing = state.get(key) ?? null;
    const plan = planUpsert(existing, { projectId: input.projectId, email: input.email, subscribed: input.subscribed, defaultSubscribed: true, data: input.data, source: "track" });
    let contact: ContactRow;
    if (!existing) {
      contact = newContactRow(input.projectId, emails[n]!, plan, now);
      inserted.set(contact.id, contact);
    } else if (plan.write) {
      contact = updatedContactRow(existing, plan, now);
      if (inserted.has(contact.id)) inserted.set(contact.id, contact);
      else updated.set(contact.id, { row: contact, subscribedOnce: updated.get(contact.id)?.subscribedOnce === true || contact.subscribed === 1 });
    } else {
      contact = existing;
    }
    state.set(key, contact);
    const from = events.length;
    if (plan.flip) events.push({ projectId: input.projectId, contactId: contact.id, name: plan.flip, data: { source: "track" } });
    events.push({ projectId: input.projectId, contactId: contact.id, name: input.event, data: plan.provided });
    perTrack.push({ contactId: contact.id, from, to: events.length });
  });

  await insertContactsPg(q, [...inserted.values()]);
  await updateContactsPg(q, [...updated.values()]);
  const ids = await insertEventsRaw(q, now, events);
  return perTrack.map((t) => {
    const recorded = events.slice(t.from, t.to).map((e, i) => ({ ...e, eventId: ids[t.from + i]! }));
    return { contactId: t.contactId, eventId: recorded[recorded.length - 1]!.eventId, createdAt: now, events: recorded };
  });
}

interface Pending {
  input: TrackInput;
  resolve: (r: TrackResult) => void;
  reject: (e: unknown) => void;
}

/** The indexes of `items` by project and address (stable: one contact's tracks keep their order). */
function lockOrder(items: readonly Pending[]): number[] {
  const keys = items.map((p) => `${p.input.projectId}\u0000${normalizeContactEmail(p.input.email)}`);
  return keys.map((_, i) => i).sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : a - b));
}

/** Upper bound of one transaction (keeps the lock short for other writers). */
const MAX_BATCH = 1000;

export class TrackBatcher {
  private queue: Pending[] = [];
  private scheduled = false;
  private flushing: Promise<void> | null = null;

  constructor(private readonly ctx: AppContext) {}

  track(input: TrackInput): Promise<TrackResult> {
    return new Promise<TrackResult>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      if (!this.scheduled && !this.flushing) {
        this.scheduled = true;
        setImmediate(() => this.startFlush());
      }
    });
  }

  /** Waits until everything queued so far is committed (module stop). */
  async drain(): Promise<void> {
    while (this.queue.length || this.flushing || this.scheduled) {
      if (this.flushing) await this.flushing;
      else if (this.queue.length) this.startFlush();
      else await new Promise((r) => setImmediate(r));
    }
  }

  private startFlush() {
    this.scheduled = false;
    if (this.flushing) return;
    this.flushing = this.flushAll().finally(() => {
      this.flushing = null;
    });
  }

  /** The tracked-segment plans of the batch's projects (cached; a project without any has none). */
  private async followPlans(batch: readonly Pending[]): Promise<Map<string, FollowPlan>> {
    const out = new Map<string, FollowPlan>();
    for (const projectId of new Set(batch.map((p) => p.input.projectId))) {
      try {
        const plan = await trackFollowPlan(this.ctx, projectId);
        if (plan) out.set(projectId, plan);
      } catch (e) {
        this.ctx.log.error("tracked segments unavailable", { projectId, error: String((e as Error)?.stack ?? e) });
      }
    }
    return out;
  }

  /** Commits `items` in one transaction; returns each result and the segment entries/exits. */
  private commit(items: readonly Pending[], plans: ReadonlyMap<string, FollowPlan>) {
    return atomic(this.ctx.db, this.ctx.store.engine, async (q) => {
      const now = this.ctx.clock.now();
      const follower = new SegmentFollower(q, now, (segmentId, e) =>
        this.ctx.log.error("tracked segment evaluation failed", { segmentId, error: String((e as Error)?.stack ?? e) }),
      );
      if (q.engine === "postgres" && !items.some((p) => plans.has(p.input.projectId))) {
        return { results: await applyTracksPg(q, now, items.map((p) => p.input)), segmentEvents: [], recount: [] };
      }
      // Contacts are written in one order on every instance (project, then address): two instances'
      // batches touching the same contacts wait for each other instead of deadlocking (PostgreSQL).
      const results: TrackResult[] = new Array(items.length);
      for (const i of lockOrder(items)) {
        const p = items[i]!;
        const plan = plans.get(p.input.projectId);
        results[i] = await applyTrack(q, now, p.input, plan && { plan, follower });
      }
      await follower.finish();
      return { results, segmentEvents: follower.events, recount: follower.recount };
    });
  }

  private async flushAll(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, MAX_BATCH);
      const plans = await this.followPlans(batch);
      const done: Array<[Pending, TrackResult]> = [];
      const segmentEvents: RecordedEvent[] = [];
      try {
        const r = await this.commit(batch, plans);
        batch.forEach((p, i) => done.push([p, r.results[i]!]));
        segmentEvents.push(...r.segmentEvents);
        if (r.recount.length) scheduleRecount(this.ctx, r.recount);
      } catch {
        // Replay one by one so only the failing track fails.
        for (const p of batch) {
          for (let attempt = 1; ; attempt++) {
            try {
              const r = await this.commit([p], plans);
              done.push([p, r.results[0]!]);
              segmentEvents.push(...r.segmentEvents);
              if (r.recount.length) scheduleRecount(this.ctx, r.recount);
              break;
            } catch (e) {
              // Another instance created the same contact meanwhile (or PostgreSQL broke a deadlock): its
              // row is committed now, so the track finds it on another try.
              if (attempt < 3 && (isUniqueViolation(e) || isTransientConflict(e))) continue;
              p.reject(e);
              break;
            }
          }
        }
      }
      for (const [p, r] of done) p.resolve(r);
      // The event feed's consumers (workflows, webhooks, rollups) take the events from the log.
      if (done.length || segmentEvents.length) this.ctx.feed.wake();
    }
  }
}

declare module "../context" {
  interface Services {
    /** `/v1/track` group commit (drained by modules/events on stop). */
    trackBatcher: TrackBatcher;
  }
}

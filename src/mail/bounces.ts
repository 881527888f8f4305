// Hard bounces during delivery (a 5xx from the recipient's MX or the relay, a null MX, a domain
// that does not exist): the email ends BOUNCED, the address is suppressed in the project, the
// contact is unsubscribed and `email.bounce` is recorded, all in one transaction.
import { sql } from "kysely";
import type { AppContext } from "../context";
import { notifyEvents, recordEvent, setSubscribed, type RecordedEvent } from "./deps";
import { checkReputationSoon } from "./reputation";
import type { EventRow } from "./outbox-store";

export interface BounceWrite {
  id: string;
  projectId: string | null;
  contactId: string | null;
  email: string;
  reply: string;
  host: string | null;
}

export async function recordBounces(ctx: AppContext, now: number, items: { bounce: BounceWrite; events: EventRow[] }[]): Promise<void> {
  const recorded: RecordedEvent[] = [];
  await ctx.db.transaction().execute(async (trx) => {
    for (const { bounce: b, events } of items) {
      const r = await trx
        .updateTable("emails")
        .set({
          status: "BOUNCED",
          attempts: sql`attempts + 1`,
          sent_at: sql`COALESCE(sent_at, ${now})`,
          bounced_at: now,
          last_reply: b.reply,
          mx_host: sql`COALESCE(${b.host}, mx_host)`,
          lease_until: null,
          next_attempt_at: null,
          updated_at: now,
        })
        .where("id", "=", b.id)
        .where("status", "=", "SENDING")
        .executeTakeFirst();
      if (!Number(r.numUpdatedRows)) continue;
      if (!b.projectId) continue; // a SYSTEM email: no project, no contact
      await trx
        .insertInto("suppressions")
        .values({ project_id: b.projectId, email: b.email, reason: "bounce", detail: b.reply, email_id: b.id, created_at: now })
        .onConflict((oc) => oc.columns(["project_id", "email"]).doNothing())
        .execute();
      for (const ev of events) {
        const eventId = await recordEvent(trx, ctx, { projectId: ev.projectId, contactId: ev.contactId, name: ev.name, data: ev.data, emailId: ev.emailId });
        recorded.push({ projectId: ev.projectId, contactId: ev.contactId, eventId, name: ev.name, data: ev.data });
      }
      if (b.contactId) {
        const r = await setSubscribed(trx, ctx, { projectId: b.projectId, contactId: b.contactId, subscribed: false, source: "bounce", emailId: b.id });
        if (r) recorded.push(...r.events);
      }
    }
  });
  await notifyEvents(ctx, recorded);
  for (const projectId of new Set(items.map((i) => i.bounce.projectId))) if (projectId) await checkReputationSoon(ctx, projectId);
}

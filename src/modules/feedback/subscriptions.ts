// The subscription pages' rules: who a signed link names, and flipping their subscription.
import type { AppContext } from "../../context";
import { readSubscriptionToken, type Subscriber } from "../../mail/tracking/tokens";
import { findContact, findContactByEmail, notifyEvents, setSubscribed, type ContactRef } from "./audience-adapter";

export interface SubscriptionState {
  token: Subscriber;
  projectName: string;
  /** null when the link's contact no longer exists (deleted) or never did (mail to a non-contact). */
  contact: ContactRef | null;
}

/** The state behind a subscription link, or null when the link is not ours (tampered, foreign, project gone). */
export async function loadSubscription(ctx: AppContext, rawToken: string): Promise<SubscriptionState | null> {
  const token = readSubscriptionToken(ctx, rawToken);
  if (!token) return null;
  const project = await ctx.db.selectFrom("projects").select("name").where("id", "=", token.projectId).executeTakeFirst();
  if (!project) return null;
  const contact = token.contactId
    ? await findContact(ctx.db, token.projectId, token.contactId)
    : await findContactByEmail(ctx.db, token.projectId, token.email);
  return { token, projectName: project.name, contact };
}

/** Sets the link's contact subscribed or not (recording the flip event); returns the new state. */
export async function changeSubscription(
  ctx: AppContext,
  rawToken: string,
  subscribed: boolean,
  source: "unsubscribe-page" | "one-click" | "subscribe-page" | "manage-page",
): Promise<SubscriptionState | null> {
  const state = await loadSubscription(ctx, rawToken);
  if (!state || !state.contact) return state;
  const contact = state.contact;
  const events = await ctx.db.transaction().execute((trx) =>
    setSubscribed(trx, ctx, { projectId: state.token.projectId, contactId: contact.id, subscribed, source }),
  );
  await notifyEvents(ctx, events);
  return { ...state, contact: { ...contact, subscribed } };
}

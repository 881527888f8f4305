// The engine's calls into other parts of the service (rendering, sender domains, contacts and
// events, the feedback loop), gathered in one place.
// INTERIM (contacts/events): until issue 3 is merged, setSubscribed/recordEvent/notifyEvent are
// stand-ins with the agreed signatures.
import type { Kysely, Transaction } from "kysely";
import type { AppContext } from "../context";
import type { DB } from "../db";

export { decorateMessage, subscriptionUrls } from "./tracking";
export { renderHtml, renderSubject, renderText } from "./render";
export { bounceDomainFor, getSigningKey, type SigningKey } from "../modules/domains/service";

type Db = Kysely<DB> | Transaction<DB>;

export async function setSubscribed(_db: Db, _ctx: AppContext, _input: { projectId: string; contactId: string; subscribed: boolean }): Promise<void> {}

export async function recordEvent(
  _db: Db,
  _ctx: AppContext,
  _input: { projectId: string; contactId: string; name: string; data?: Record<string, unknown>; emailId?: string },
): Promise<string> {
  return Bun.randomUUIDv7();
}

export function notifyEvent(_ctx: AppContext, _ev: { projectId: string; contactId: string; eventId: string; name: string; data: Record<string, unknown> }): void {}

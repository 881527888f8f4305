// INTERIM stand-in for issue 3's contacts/events services (src/audience/*), with their agreed
// signatures, until that work is on main. Replaced by re-exports after the merge.
import type { Kysely, Transaction } from "kysely";
import type { AppContext } from "../../context";
import type { DB } from "../../db";

export interface RecordedEvent {
  projectId: string;
  contactId: string;
  eventId: string;
  name: string;
  data: Record<string, unknown>;
}

export async function upsertContact(
  _db: Kysely<DB> | Transaction<DB>,
  _ctx: AppContext,
  input: { projectId: string; email: string; subscribed?: boolean; defaultSubscribed: boolean; data?: Record<string, unknown> | null; source?: string },
) {
  const vars: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input.data ?? {})) {
    if (v && typeof v === "object" && "value" in v && (v as { persistent?: unknown }).persistent === false) vars[k] = (v as { value: unknown }).value;
    else if (v !== null && v !== "") vars[k] = v;
  }
  return { contact: { id: Bun.randomUUIDv7(), email: input.email.toLowerCase() }, isNew: true, isUpdate: false, vars, events: [] as RecordedEvent[] };
}

export async function notifyEvents(_ctx: AppContext, _events: readonly RecordedEvent[]): Promise<void> {}

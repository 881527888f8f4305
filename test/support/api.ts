// Small readers over the public API that many tests need: a list answer's rows, a contact found by email, a
// contact's events, fresh recipient addresses. Spec-level only (HTTP in, JSON out): the black-box suite uses them.
import type { Account, Api } from "./server";

/** The rows of a list answer: a bare array or `{ data: [...] }` (anything else: none). */
export const items = (body: any): any[] => (Array.isArray(body) ? body : (body?.data ?? []));

/** A maker of distinct addresses on `domain`: `rcpt("p")` -> `p1@domain`, `p2@domain`, … (`prefix` when none is given). */
export function addresses(domain: string, prefix = "r"): (p?: string) => string {
  let seq = 0;
  return (p = prefix) => `${p}${++seq}@${domain}`;
}

export interface FoundContact {
  id: string;
  email: string;
  subscribed: boolean;
}

/** POST /contacts/lookup for one email with `who`'s secret key: the contact found, or undefined. */
export async function lookupContact(api: Api, who: Pick<Account, "secretKey">, email: string): Promise<FoundContact | undefined> {
  return (await api("/contacts/lookup", { key: who.secretKey, body: { emails: [email] } })).body.found?.[0];
}

/** GET /events/contact/:id with `who`'s secret key: the contact's events (the answer's rows). */
export async function contactEvents(api: Api, who: Pick<Account, "secretKey">, contactId: string): Promise<any[]> {
  return items((await api(`/events/contact/${contactId}`, { key: who.secretKey })).body);
}

/** POST /templates with `who`'s secret key: the created template (throws unless 201). */
export async function createTemplate(api: Api, who: Pick<Account, "secretKey">, body: Record<string, unknown>): Promise<any> {
  const res = await api("/templates", { key: who.secretKey, body });
  if (res.status !== 201) throw new Error(`template create: ${res.status} ${res.text}`);
  return res.body;
}

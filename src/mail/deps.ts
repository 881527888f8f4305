// The engine's calls into other parts of the service (rendering, sender domains, contacts and
// events, the feedback loop), gathered in one place.
// INTERIM: until issues 3 and 4 are merged these are stand-ins with the agreed signatures.
import type { KeyObject } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import type { AppContext } from "../context";
import type { DB } from "../db";

export { decorateMessage, subscriptionUrls } from "./tracking";

type Db = Kysely<DB> | Transaction<DB>;

const get = (vars: Record<string, unknown>, path: string): unknown =>
  path.split(".").reduce<unknown>((o, k) => (o && typeof o === "object" ? (o as Record<string, unknown>)[k] : undefined), vars);
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const str = (v: unknown) => (v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));

export function renderHtml(source: string, vars: Record<string, unknown>): string {
  return source
    .replace(/\{\{\{\s*([\w.]+)\s*\}\}\}/g, (_m, p: string) => str(get(vars, p)))
    .replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_m, p: string) => esc(str(get(vars, p))));
}
export function renderSubject(source: string, vars: Record<string, unknown>): string {
  return source.replace(/\{\{\{?\s*([\w.]+)\s*\}?\}\}/g, (_m, p: string) => str(get(vars, p))).replace(/[\r\n]+/g, " ");
}
export function renderText(source: string, vars: Record<string, unknown>): string {
  return source.replace(/\{\{\{?\s*([\w.]+)\s*\}?\}\}/g, (_m, p: string) => str(get(vars, p)));
}

export interface SigningKey {
  domain: string;
  selector: string;
  privateKey: KeyObject;
  privateKeyPem: string;
}

export async function getSigningKey(_ctx: AppContext, _projectId: string, _domain: string): Promise<SigningKey | null> {
  return null;
}

export function bounceDomainFor(domain: string): string {
  return `bounces.${domain}`;
}

export async function setSubscribed(_db: Db, _ctx: AppContext, _input: { projectId: string; contactId: string; subscribed: boolean }): Promise<void> {}

export async function recordEvent(
  _db: Db,
  _ctx: AppContext,
  _input: { projectId: string; contactId: string; name: string; data?: Record<string, unknown>; emailId?: string },
): Promise<string> {
  return Bun.randomUUIDv7();
}

export function notifyEvent(_ctx: AppContext, _ev: { projectId: string; contactId: string; eventId: string; name: string; data: Record<string, unknown> }): void {}

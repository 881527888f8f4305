/** Practical address checks shared by validation, sending and verification. */

// RFC 5321/5322 practical subset: dot-atom local part (or quoted), a dotted domain with a TLD.
const LOCAL = /^(?:[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*")$/;
const LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

export function isValidEmail(email: string): boolean {
  if (email.length > 254) return false;
  const at = email.lastIndexOf("@");
  if (at < 1) return false;
  const local = email.slice(0, at);
  const domain = email.slice(at + 1);
  if (local.length > 64 || !LOCAL.test(local)) return false;
  return isValidDomain(domain);
}

export function isValidDomain(domain: string): boolean {
  if (domain.length > 253) return false;
  const labels = domain.split(".");
  if (labels.length < 2) return false;
  if (!labels.every((l) => LABEL.test(l))) return false;
  return /^[A-Za-z]{2,63}$|^xn--[A-Za-z0-9-]+$/.test(labels[labels.length - 1]!);
}

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf("@") + 1).toLowerCase();
}

/** The label of the subdomain that receives bounces (Return-Path `bounces+<emailId>@bounces.<domain>`). */
export const BOUNCE_LABEL = "bounces";

/** The subdomain that receives bounces for `domain`. */
export function bounceDomainFor(domain: string): string {
  return `${BOUNCE_LABEL}.${domain.toLowerCase()}`;
}

/** "Name <addr@domain>" or "addr@domain". */
export function parseMailbox(value: string): { name: string | null; email: string } | null {
  const m = /^\s*(?:"?([^"<]*?)"?\s*)?<([^>]+)>\s*$/.exec(value);
  const email = (m ? m[2]! : value).trim();
  if (!isValidEmail(email)) return null;
  const name = m?.[1]?.trim() || null;
  return { name, email: email.toLowerCase() };
}

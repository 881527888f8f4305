/**
 * DKIM key material: RSA-2048 generation, the DNS TXT value that publishes the public key,
 * parsing of published records, and a cache of private KeyObjects (parsing a PEM per message
 * would cost more than the signature itself).
 */
import { createPrivateKey, createPublicKey, generateKeyPair, randomBytes, type KeyObject } from "node:crypto";

export interface DkimKeyPair {
  /** PKCS#8 PEM. */
  privateKeyPem: string;
  /** Base64 of the SPKI DER: exactly the p= tag. */
  publicKeyB64: string;
}

/** RSA-2048 (the size every receiver accepts; 1024 is weak, 4096 does not fit most DNS UIs). */
export function generateDkimKeyPair(): Promise<DkimKeyPair> {
  return new Promise((resolve, reject) => {
    generateKeyPair(
      "rsa",
      {
        modulusLength: 2048,
        publicExponent: 0x10001,
        publicKeyEncoding: { type: "spki", format: "der" },
        privateKeyEncoding: { type: "pkcs8", format: "pem" },
      },
      (err, publicKey, privateKey) => {
        if (err) return reject(err);
        resolve({ privateKeyPem: privateKey as unknown as string, publicKeyB64: (publicKey as unknown as Buffer).toString("base64") });
      },
    );
  });
}

/** Ed25519 (RFC 8463): the p= tag is the raw 32-byte public key, base64 (not SPKI). */
export function generateEd25519KeyPair(): Promise<DkimKeyPair> {
  return new Promise((resolve, reject) => {
    generateKeyPair(
      "ed25519",
      { publicKeyEncoding: { type: "spki", format: "der" }, privateKeyEncoding: { type: "pkcs8", format: "pem" } },
      (err, publicKey, privateKey) => {
        if (err) return reject(err);
        const spki = publicKey as unknown as Buffer;
        resolve({ privateKeyPem: privateKey as unknown as string, publicKeyB64: spki.subarray(spki.length - 32).toString("base64") });
      },
    );
  });
}

export type DkimKeyType = "rsa" | "ed25519";

/** A fresh selector: a new key never collides with a cached record of an old one. */
export function newSelector(): string {
  return `mailsvc${randomBytes(4).toString("hex")}`;
}

export function dkimRecordName(selector: string, domain: string): string {
  return `${selector}._domainkey.${domain}`;
}

export function dkimTxtValue(publicKeyB64: string, k: DkimKeyType = "rsa"): string {
  return `v=DKIM1; k=${k}; p=${publicKeyB64}`;
}

/**
 * Parses a DKIM TXT record into its tags. Tolerates what DNS consoles do to long values:
 * surrounding or embedded quotes (`"v=DKIM1; " "p=MIIB…"`), whitespace and line breaks inside
 * the base64, upper-case tag names, a trailing semicolon.
 */
export function parseDkimTxt(value: string): Record<string, string> {
  const unquoted = value.replace(/"\s*"/g, "").replace(/^\s*"|"\s*$/g, "").replace(/\\;/g, ";");
  const tags: Record<string, string> = {};
  for (const part of unquoted.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const k = part.slice(0, eq).trim().toLowerCase();
    const v = part.slice(eq + 1).replace(/\s+/g, "");
    if (k && !(k in tags)) tags[k] = v;
  }
  return tags;
}

/** Whether a published TXT value carries exactly our public key (compared as key material, not text). */
export function dkimTxtMatches(published: string, publicKeyB64: string, k: DkimKeyType = "rsa"): boolean {
  const tags = parseDkimTxt(published);
  if (tags.v !== undefined && tags.v.toUpperCase() !== "DKIM1") return false;
  if ((tags.k ?? "rsa").toLowerCase() !== k) return false;
  const p = tags.p;
  if (!p) return false;
  if (p === publicKeyB64) return true;
  if (k === "ed25519") return false;
  try {
    const a = createPublicKey({ key: Buffer.from(p, "base64"), format: "der", type: "spki" }).export({ format: "der", type: "spki" });
    return Buffer.compare(a, Buffer.from(publicKeyB64, "base64")) === 0;
  } catch {
    return false;
  }
}

// PEM -> KeyObject, bounded; entries are dropped explicitly when a domain is deleted.
const keyObjects = new Map<string, KeyObject>();
const MAX_KEYS = 10_000;

export function privateKeyObject(pem: string): KeyObject {
  let k = keyObjects.get(pem);
  if (!k) {
    k = createPrivateKey({ key: pem, format: "pem" });
    if (keyObjects.size >= MAX_KEYS) keyObjects.delete(keyObjects.keys().next().value as string);
    keyObjects.set(pem, k);
  }
  return k;
}

export function forgetPrivateKey(pem: string): void {
  keyObjects.delete(pem);
}

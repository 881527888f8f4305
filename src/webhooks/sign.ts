import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com), through the maintained
 * `standardwebhooks` package: `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`
 * keyed by the base64 part of a `whsec_…` secret.
 */
export function newWebhookSecret(): string {
  return "whsec_" + randomBytes(32).toString("base64");
}

export interface SignedHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** Signers by secret (a Webhook decodes its secret once). */
const signers = new Map<string, Webhook>();
function signerFor(secret: string): Webhook {
  let w = signers.get(secret);
  if (!w) {
    if (signers.size >= 1000) signers.clear();
    signers.set(secret, (w = new Webhook(secret)));
  }
  return w;
}

/** Headers for one attempt. `id` stays the same across retries of one message; `at` is the attempt time. */
export function signWebhook(secret: string, id: string, at: Date, body: string): SignedHeaders {
  const signature = signerFor(secret).sign(id, at, body);
  return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signature };
}

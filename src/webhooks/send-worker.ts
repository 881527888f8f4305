// The webhook sending thread (see sender.ts): signs and POSTs each attempt through the SSRF-guarded
// client (safeFetch: every hop resolved, checked and pinned) and answers with the outcome. It touches
// no database: the dispatcher on the main thread records every outcome, so durability is unchanged.
import { safeFetch, type SafeFetchConfig } from "../net/safe-fetch";
import { signWebhook } from "./sign";
import type { FromSender, SendJob, SendReply, ToSender } from "./sender";

declare const self: Worker;

let config: SafeFetchConfig | null = null;
let pending: SendReply[] = [];
let flushing = false;

/** Outcomes finishing in the same turn go back in one message. */
function reply(r: SendReply) {
  pending.push(r);
  if (flushing) return;
  flushing = true;
  queueMicrotask(() => {
    flushing = false;
    const replies = pending;
    pending = [];
    self.postMessage({ type: "sent", replies } satisfies FromSender);
  });
}

async function send(job: SendJob) {
  try {
    if (!config) throw new Error("webhook sender not initialised");
    const headers = { "content-type": "application/json", ...signWebhook(job.secret, job.webhookId, new Date(), job.body) };
    const outcome = await safeFetch(config, { url: job.url, method: "POST", headers, body: job.body, timeoutMs: job.timeoutMs, maxBodyBytes: 1024 });
    reply({ seq: job.seq, outcome });
  } catch (e) {
    reply({ seq: job.seq, outcome: { ok: false, error: String((e as Error)?.message ?? e), errorKind: "network" } });
  }
}

self.onmessage = (e: MessageEvent<ToSender>) => {
  const m = e.data;
  if (m.type === "init") config = m.config; // the address policy, again whenever it changes
  else for (const job of m.jobs) void send(job);
};

// The message-building worker (see builder.ts): plans in, signed message bytes out. Keeps the
// contents it was sent (LRU by size) and the pool of message buffers the main thread hands back.
import { fullGC } from "bun:jsc";
import { buildPlanned } from "./build";
import { Batcher, replyOf, type BuildJob, type BuildReply, type FromWorker, type ToWorker } from "./builder";
import { releaseBuffer } from "./buffers";
import { ContentCache, contentSize } from "./content-cache";
import { Signer } from "../dkim/signer";
import { LinkKeys } from "../tracking/tracked-links";

declare const self: Worker;

// A content built more than once also holds its skeleton (skeleton.ts): about its HTML's size again.
const contents = new ContentCache(4 * 1024 * 1024, (row) => contentSize(row) + row.html.length);

/**
 * Every message built one at a time leaves ~60 KB of dead strings (rendered and decorated bodies).
 * Left to its own heuristics JSC lets 50-80 MB of them pile up between collections (young-generation
 * collections did not free them: measured). A full collection of this small heap takes a few
 * milliseconds and pauses nobody but this thread. A message built from its content's skeleton
 * leaves a few KB: it counts for a fifth.
 */
const COLLECT_EVERY = 50;
let built = 0;
function collectSometimes(fromSkeleton: boolean) {
  built += fromSkeleton ? 0.2 : 1;
  if (built >= COLLECT_EVERY) {
    built = 0;
    fullGC();
  }
}

/** Set by "init": the main thread's signer says which backend to use. */
let signer = new Signer({ openssl: false });
let links: LinkKeys | null = null;
// Replies leave in small groups: signing is synchronous here (openssl.ts), so a batch of 50 jobs
// takes ~30 ms, and holding every reply until the batch ends would leave the SMTP side idle meanwhile.
const replies = new Batcher<BuildReply>((batch) => {
  const transfer: ArrayBuffer[] = [];
  for (const r of batch) if (r.ok) transfer.push(r.buffer);
  self.postMessage({ type: "built", replies: batch } satisfies FromWorker, transfer);
}, 4);

async function build(job: BuildJob) {
  if (job.content) contents.set(job.content);
  const content = contents.get(job.plan.contentId);
  if (!content) return replies.push({ seq: job.seq, ok: false, needContent: true });
  try {
    if (!links) throw new Error("build worker not initialised");
    const built = await buildPlanned(job.plan, content, links, signer);
    replies.push(replyOf(job.seq, built));
    collectSometimes(!!built.fromSkeleton);
  } catch (err) {
    replies.push({ seq: job.seq, ok: false, error: String((err as Error)?.message ?? err) });
    collectSometimes(false);
  }
}

self.onmessage = async (e: MessageEvent<ToWorker>) => {
  const m = e.data;
  switch (m.type) {
    case "init":
      links = new LinkKeys(Buffer.from(m.secret));
      signer = new Signer({ openssl: m.openssl });
      return;
    case "release":
      for (const b of m.buffers) releaseBuffer(Buffer.from(b));
      return;
    case "forget-links":
      links?.forget();
      return;
    case "build":
      for (const job of m.jobs) void build(job);
  }
};

// The URLs of click-tracked links, stored once per project and named by a short keyed digest (the
// link key: 8 bytes of HMAC over project and URL, unguessable without the installation's secret).
// Decoration registers the links of a message before it is sent (persist first); a campaign's links
// are written by its first message and remembered in memory for the rest.
import type { AppContext } from "../../context";
import { atomic, rawGet } from "../../db/raw";
import { invalidate, type TopicClear } from "../../jobs/peers";
import { keyedDigest } from "./tokens";

const MAX_REMEMBERED = 200_000;

/**
 * Bumped when a project's links are deleted (project reset): builders then forget what they have
 * reported, so links are stored again. Travels to the build worker inside each build plan.
 */
declare module "../../context" {
  interface Caches {
    /** Bumped when stored links were deleted: builders store their links again. */
    linkGeneration: { value: number };
  }
}
export const linkGeneration = (ctx: AppContext) => ctx.services.caches.linkGeneration.value;

const linkKeyFor = (secret: Buffer, projectId: string, url: string) => keyedDigest(secret, `link\n${projectId}\n${url}`, 8);

/** Click-tracked links a message builder saw first: [url, link key] pairs to store before the message leaves. */
export type FreshLinks = [url: string, key: string][];

/**
 * Link keys for message builders (in the build worker or in-process). Remembers which links it has
 * already reported per project, so a campaign's links are reported (and stored) once; `forget` when
 * storing failed, so they are reported again.
 */
export class LinkKeys {
  private reported = new Map<string, Map<string, string>>();
  private count = 0;
  private generation = 0;
  constructor(private readonly secret: Buffer) {}

  /** A key function for one message of `projectId`; what it saw first lands in `fresh`. */
  forMessage(projectId: string, generation: number, fresh: FreshLinks): (url: string) => string {
    if (generation !== this.generation) {
      this.forget();
      this.generation = generation;
    }
    let known = this.reported.get(projectId);
    if (!known) this.reported.set(projectId, (known = new Map()));
    const seen = known;
    return (url) => {
      let key = seen.get(url);
      if (key === undefined) {
        if (this.count >= MAX_REMEMBERED) this.forget();
        key = linkKeyFor(this.secret, projectId, url);
        seen.set(url, key);
        this.count++;
        fresh.push([url, key]);
      }
      return key;
    };
  }

  forget(): void {
    this.reported.clear();
    this.count = 0;
  }
}

/** Stores links a builder reported (a link another builder stored already is left as it is). Raw: every tracked message passes here (scripts/bench/send.ts). */
export async function storeLinks(ctx: AppContext, projectId: string, links: FreshLinks): Promise<void> {
  if (!links.length) return;
  const now = ctx.clock.now();
  await atomic(ctx.db, ctx.store.engine, async (q) => {
    for (const [url, key] of links) await q.run("INSERT INTO tracked_links (project_id, hash, url, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", [projectId, key, url, now]);
  });
}

/** The URL behind a click: the link of the email's project, or null. */
export async function resolveClick(ctx: AppContext, emailId: string, linkKey: string): Promise<{ url: string; projectId: string } | null> {
  const row = await rawGet<{ url: string; project_id: string }>(
    ctx.db,
    ctx.store.engine,
    "SELECT l.url AS url, l.project_id AS project_id FROM emails e JOIN tracked_links l ON l.project_id = e.project_id AND l.hash = ?1 WHERE e.id = ?2",
    [linkKey, emailId],
  );
  return row ? { url: row.url, projectId: row.project_id } : null;
}

/** Forgets a project's links (project reset). */
export async function deleteProjectLinks(ctx: AppContext, projectId: string): Promise<void> {
  await ctx.db.deleteFrom("tracked_links").where("project_id", "=", projectId).execute();
  invalidate(ctx, "links", projectId);
}

/** The "links" topic: builders here (and on every peer) store their links again. */
export const linksTopic: TopicClear = {
  one: (ctx) => void ctx.services.caches.linkGeneration.value++,
  all: (ctx) => void ctx.services.caches.linkGeneration.value++,
};

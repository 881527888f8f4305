// The URLs of click-tracked links, stored once per project and named by a short keyed digest (the
// link key: 8 bytes of HMAC over project and URL, unguessable without the installation's secret).
// Decoration registers the links of a message before it is sent (persist first); a campaign's links
// are written by its first message and remembered in memory for the rest.
import type { AppContext } from "../context";
import { keyedDigest } from "./tokens";

const MAX_REMEMBERED = 200_000;
/** projectId -> url -> link key, for links known to be stored. */
const stored = new WeakMap<AppContext, Map<string, Map<string, string>>>();

export const linkKeyFor = (ctx: AppContext, projectId: string, url: string) => keyedDigest(ctx, `link\n${projectId}\n${url}`, 8);

export interface LinkBatch {
  /** The key of `url` (computed once per project and URL). */
  key(url: string): string;
  /** Stores the links first seen by this batch. */
  flush(): Promise<void>;
}

/** Collects the links of one message; `flush` before the message is handed to SMTP. */
export function linkBatch(ctx: AppContext, projectId: string): LinkBatch {
  let byProject = stored.get(ctx);
  if (!byProject) stored.set(ctx, (byProject = new Map()));
  let known = byProject.get(projectId);
  if (!known) byProject.set(projectId, (known = new Map()));
  const cache = known;
  const all = byProject;
  const fresh = new Map<string, string>();
  return {
    key(url) {
      const k = cache.get(url) ?? fresh.get(url);
      if (k) return k;
      const key = linkKeyFor(ctx, projectId, url);
      fresh.set(url, key);
      return key;
    },
    async flush() {
      if (!fresh.size) return;
      const now = ctx.clock.now();
      await ctx.store.exclusive((sqlite) => {
        const ins = sqlite.query("INSERT OR IGNORE INTO tracked_links (project_id, hash, url, created_at) VALUES (?, ?, ?, ?)");
        sqlite.transaction(() => {
          for (const [url, key] of fresh) ins.run(projectId, key, url, now);
        })();
      });
      if (cache.size + fresh.size > MAX_REMEMBERED) cache.clear();
      if (all.size > 10_000) all.clear(), all.set(projectId, cache);
      for (const [url, key] of fresh) cache.set(url, key);
      fresh.clear();
    },
  };
}

/** The URL behind a click: the link of the email's project, or null. */
export async function resolveClick(ctx: AppContext, emailId: string, linkKey: string): Promise<{ url: string; projectId: string } | null> {
  const row = await ctx.store.exclusive((sqlite) =>
    sqlite
      .query<{ url: string; project_id: string }, [string, string]>(
        "SELECT l.url AS url, l.project_id AS project_id FROM emails e JOIN tracked_links l ON l.project_id = e.project_id AND l.hash = ?1 WHERE e.id = ?2",
      )
      .get(linkKey, emailId),
  );
  return row ? { url: row.url, projectId: row.project_id } : null;
}

/** Forgets a project's links (project reset). */
export async function deleteProjectLinks(ctx: AppContext, projectId: string): Promise<void> {
  await ctx.db.deleteFrom("tracked_links").where("project_id", "=", projectId).execute();
  stored.get(ctx)?.clear();
}

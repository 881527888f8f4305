import type { AppContext } from "../context";

/**
 * Tells the modules that follow contact writes (tracked segments) which contacts of a project were
 * written, after the write committed. One call per request/batch; never throws. (/v1/track does
 * not call it: it follows tracked segments inside its own transaction, see segments/follow.ts.)
 */
export async function contactsChanged(ctx: AppContext, projectId: string, contactIds: readonly string[]): Promise<void> {
  if (!contactIds.length || !ctx.contributions.contactsChanged.length) return;
  const ids = [...new Set(contactIds)];
  for (const hook of ctx.contributions.contactsChanged) {
    try {
      await hook(ctx, projectId, ids);
    } catch (e) {
      ctx.log.error("contactsChanged hook failed", { projectId, error: String((e as Error)?.stack ?? e) });
    }
  }
}

/** Groups written contacts by project and calls contactsChanged once per project. */
export async function contactsChangedMany(ctx: AppContext, writes: Iterable<{ projectId: string; contactId: string }>): Promise<void> {
  if (!ctx.contributions.contactsChanged.length) return;
  const by = new Map<string, string[]>();
  for (const w of writes) {
    const list = by.get(w.projectId);
    if (list) list.push(w.contactId);
    else by.set(w.projectId, [w.contactId]);
  }
  for (const [projectId, ids] of by) await contactsChanged(ctx, projectId, ids);
}

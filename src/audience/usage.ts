import type { AppContext } from "../context";

export type Usage = Record<string, unknown[]> & { segments: unknown[]; campaigns: unknown[]; workflows: unknown[] };

type UsageHook = (ctx: AppContext, projectId: string, key: string) => Promise<Record<string, unknown[]>>;

/**
 * Merges what each module reports about where a field or event name is referenced. Segments,
 * campaigns and workflows declare their look-ups in their module's provides (ctx.contributions.fieldUsage / eventUsage); with none
 * registered the answer is three empty lists.
 */
export async function aggregateUsage(ctx: AppContext, hooks: readonly UsageHook[], projectId: string, key: string): Promise<Usage> {
  const out: Usage = { segments: [], campaigns: [], workflows: [] };
  for (const hook of hooks) {
    const part = await hook(ctx, projectId, key);
    for (const [k, list] of Object.entries(part ?? {})) {
      if (!Array.isArray(list)) continue;
      (out[k] ??= []).push(...list);
    }
  }
  return out;
}

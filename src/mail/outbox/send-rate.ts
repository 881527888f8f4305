// The per-project send rate of the outbox (MAILSVC_SEND_RATE: messages per second, a token bucket
// with a burst of one second) and the fair choice among due emails that respects it.

/** Token bucket per project. */
export class ProjectBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  constructor(private readonly rate: number) {}

  available(project: string, now: number): number {
    const b = this.buckets.get(project);
    if (!b) return this.rate;
    return Math.min(this.rate, b.tokens + ((now - b.at) * this.rate) / 1000);
  }

  take(project: string, n: number, now: number): void {
    this.buckets.set(project, { tokens: this.available(project, now) - n, at: now });
    if (this.buckets.size > 10_000) this.buckets.clear();
  }
}

/**
 * Picks up to `limit` of the due candidates round-robin over projects (in due order within each),
 * none beyond its project's available tokens, and takes those tokens. `limited` is true when a
 * project's rate held back a candidate that would otherwise have been chosen.
 */
export function chooseFairly(
  candidates: { id: string; project_id: string | null }[],
  limit: number,
  buckets: ProjectBuckets,
  now: number,
): { ids: string[]; limited: boolean } {
  const byProject = new Map<string, string[]>();
  for (const c of candidates) {
    const k = c.project_id ?? "";
    let l = byProject.get(k);
    if (!l) byProject.set(k, (l = []));
    l.push(c.id);
  }
  const budget = new Map<string, number>();
  for (const k of byProject.keys()) budget.set(k, Math.floor(buckets.available(k, now)));
  const ids: string[] = [];
  const taken = new Map<string, number>();
  let progress = true;
  while (ids.length < limit && progress) {
    progress = false;
    for (const [k, list] of byProject) {
      if (ids.length >= limit) break;
      const t = taken.get(k) ?? 0;
      if (t >= list.length || t >= budget.get(k)!) continue;
      ids.push(list[t]!);
      taken.set(k, t + 1);
      progress = true;
    }
  }
  for (const [k, n] of taken) buckets.take(k, n, now);
  return { ids, limited: ids.length < Math.min(limit, candidates.length) };
}
